"""numpy cases for the matrix and convolution family: MatMul, Gemm, Conv, ConvTranspose.

The convolution references are direct (a loop over output or input positions with a tensordot
per position), independent of Kiln's im2col + GEMM formulation.
"""

import itertools

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261130)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
# Tolerances by dtype: the 16-bit floats round the float-accumulated result once.
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-10), "float16": (2e-3, 2e-3),
       "bfloat16": (2e-2, 2e-2), "int32": (0, 0), "int64": (0, 0)}


def np_dtype(dtype):
    return np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)


def sample(shape, dtype, low=-1.0, high=1.0):
    if dtype in ("int32", "int64"):
        return RNG.integers(-4, 5, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(np_dtype(dtype))


def case(root, name, op, inputs, expected, dtype, attrs=None):
    rtol, atol = TOL[dtype]
    write_case(root, name, op, inputs, [np.asarray(expected).astype(np_dtype(dtype))], attrs=attrs,
               rtol=rtol, atol=atol)


def f64(a):
    return None if a is None else np.asarray(a).astype(np.float64)


# ---------------------------------------------------------------------------------------------
# Convolution references


def same_pads(auto_pad, total):
    """Leading and trailing pads of a SAME padding totalling `total` (floor division)."""
    begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
    return begin, total - begin


def conv_ref(x, w, b=None, strides=None, dilations=None, pads=None, group=1, auto_pad="NOTSET",
             kernel_shape=None):
    """Conv with the ONNX attributes; kernel_shape, when given, is W's own spatial shape."""
    assert kernel_shape is None or list(kernel_shape) == list(w.shape[2:])
    x, w = f64(x), f64(w)
    nsp = x.ndim - 2
    strides = strides or [1] * nsp
    dilations = dilations or [1] * nsp
    pads = list(pads or [0] * (2 * nsp))
    kernel = w.shape[2:]
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    for a in range(nsp):
        size = x.shape[2 + a]
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = -(-size // strides[a])
            pads[a], pads[a + nsp] = same_pads(auto_pad, max(0, (out - 1) * strides[a] + spans[a] - size))
        elif auto_pad == "VALID":
            pads[a] = pads[a + nsp] = 0
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[a], pads[a + nsp]) for a in range(nsp)])
    out_sizes = [(xp.shape[2 + a] - spans[a]) // strides[a] + 1 for a in range(nsp)]
    n, c = x.shape[:2]
    m = w.shape[0]
    cg, mg = c // group, m // group
    y = np.zeros((n, m, *out_sizes))
    for g in range(group):
        xg = xp[:, g * cg:(g + 1) * cg]
        wg = w[g * mg:(g + 1) * mg]
        for pos in itertools.product(*[range(o) for o in out_sizes]):
            window = tuple(slice(o * s, o * s + span, d)
                           for o, s, span, d in zip(pos, strides, spans, dilations))
            patch = xg[(slice(None), slice(None)) + window]
            axes = list(range(1, 2 + nsp))
            y[(slice(None), slice(g * mg, (g + 1) * mg)) + pos] = np.tensordot(patch, wg, axes=(axes, axes))
    if b is not None:
        y += f64(b).reshape((1, m) + (1,) * nsp)
    return y


def conv_transpose_ref(x, w, b=None, strides=None, dilations=None, pads=None, group=1, auto_pad="NOTSET",
                       output_padding=None, output_shape=None):
    x, w = f64(x), f64(w)
    nsp = x.ndim - 2
    strides = strides or [1] * nsp
    dilations = dilations or [1] * nsp
    pads = list(pads or [0] * (2 * nsp))
    output_padding = output_padding or [0] * nsp
    kernel = w.shape[2:]
    begins, outs = [], []
    for a in range(nsp):
        size = x.shape[2 + a]
        full = strides[a] * (size - 1) + output_padding[a] + (kernel[a] - 1) * dilations[a] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            out = output_shape[a] if output_shape else size * strides[a]
            begins.append(same_pads(auto_pad, full - out)[0])
        else:
            pb, pe = (0, 0) if auto_pad == "VALID" else (pads[a], pads[a + nsp])
            out = output_shape[a] if output_shape else full - pb - pe
            begins.append(pb)
        outs.append(out)
    n, c = x.shape[:2]
    mg = w.shape[1]
    cg = c // group
    y = np.zeros((n, mg * group, *outs))
    for g in range(group):
        xg = x[:, g * cg:(g + 1) * cg]
        wg = w[g * cg:(g + 1) * cg]
        for pos in itertools.product(*[range(s) for s in x.shape[2:]]):
            contrib = np.tensordot(xg[(slice(None), slice(None)) + pos], wg, axes=([1], [0]))  # (n, mg, k...)
            for tap in itertools.product(*[range(k) for k in kernel]):
                target = [p * s + t * d - pb for p, s, t, d, pb in zip(pos, strides, tap, dilations, begins)]
                if all(0 <= q < o for q, o in zip(target, outs)):
                    y[(slice(None), slice(g * mg, (g + 1) * mg)) + tuple(target)] += contrib[
                        (slice(None), slice(None)) + tap]
    if b is not None:
        y += f64(b).reshape((1, mg * group) + (1,) * nsp)
    return y


# ---------------------------------------------------------------------------------------------
# Cases


def write_conv(root):
    # (name, X shape, W shape, attrs, bias)
    configs = [
        ("1d", (2, 3, 11), (4, 3, 3), {}, True),
        ("1d_stride_dilation_pads", (1, 2, 13), (3, 2, 4),
         {"strides": [2], "dilations": [2], "pads": [3, 1]}, False),
        ("2d", (2, 3, 7, 6), (5, 3, 3, 3), {"pads": [1, 1, 1, 1]}, True),
        ("2d_asymmetric_pads", (1, 2, 6, 7), (3, 2, 3, 2), {"pads": [0, 2, 1, 0]}, True),
        ("2d_strides", (1, 3, 9, 8), (4, 3, 3, 3), {"strides": [2, 3], "pads": [1, 0, 1, 2]}, False),
        ("2d_dilations", (1, 2, 9, 9), (2, 2, 3, 2), {"dilations": [2, 3]}, True),
        ("2d_group", (2, 6, 5, 5), (4, 3, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, True),
        ("2d_depthwise", (1, 4, 6, 7), (8, 1, 3, 3),
         {"group": 4, "strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
        ("2d_pointwise", (2, 5, 4, 6), (3, 5, 1, 1), {}, True),
        ("2d_kernel_shape_attr", (1, 2, 5, 5), (3, 2, 2, 3), {"kernel_shape": [2, 3]}, False),
        ("2d_same_upper", (1, 2, 7, 8), (3, 2, 4, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 3]}, True),
        ("2d_same_lower", (1, 2, 7, 8), (3, 2, 4, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 3]}, True),
        ("2d_same_lower_dilated", (1, 1, 6, 6), (2, 1, 2, 2),
         {"auto_pad": "SAME_LOWER", "dilations": [2, 3]}, False),
        ("2d_valid", (1, 2, 8, 7), (2, 2, 3, 3),
         {"auto_pad": "VALID", "strides": [2, 2], "pads": [5, 5, 5, 5]}, True),
        ("3d", (1, 2, 4, 5, 6), (3, 2, 2, 3, 2), {"pads": [1, 0, 1, 0, 1, 1], "strides": [1, 2, 1]}, True),
        ("3d_group_dilation", (2, 4, 5, 4, 5), (2, 2, 2, 2, 2), {"group": 2, "dilations": [2, 1, 2]}, True),
        ("2d_chunked", (1, 16, 40, 64), (6, 16, 3, 3), {"pads": [1, 1, 1, 1]}, True),
        ("2d_empty_batch", (0, 2, 5, 5), (3, 2, 3, 3), {}, True),
        ("2d_zero_filters", (1, 2, 5, 5), (0, 2, 3, 3), {}, False),
    ]
    for name, xs, ws, attrs, with_bias in configs:
        for dtype in FLOATS if name in ("1d", "2d", "2d_group", "3d") else ["float32"]:
            x, w = sample(xs, dtype), sample(ws, dtype)
            b = sample((ws[0],), dtype) if with_bias else None
            expected = conv_ref(x, w, b, **attrs)
            inputs = [x, w] + ([b] if with_bias else [])
            case(root, f"conv_{name}_{dtype}", "Conv", inputs, expected, dtype, attrs)


def write_conv_transpose(root):
    configs = [
        ("1d", (2, 3, 5), (3, 2, 3), {}, True),
        ("1d_stride_output_padding", (1, 2, 4), (2, 3, 3), {"strides": [3], "output_padding": [2]}, True),
        ("2d", (2, 2, 3, 4), (2, 3, 3, 3), {}, True),
        ("2d_strides_pads", (1, 2, 4, 3), (2, 2, 3, 2), {"strides": [2, 3], "pads": [1, 0, 2, 1]}, False),
        ("2d_dilations", (1, 1, 3, 4), (1, 2, 2, 3), {"dilations": [3, 2], "strides": [1, 2]}, True),
        ("2d_output_padding", (1, 2, 3, 3), (2, 1, 3, 3),
         {"strides": [2, 3], "output_padding": [1, 2]}, True),
        ("2d_output_shape", (1, 1, 3, 3), (1, 2, 3, 3), {"strides": [2, 2], "output_shape": [9, 8]}, False),
        ("2d_output_shape_crop", (1, 1, 3, 3), (1, 2, 3, 3),
         {"strides": [2, 2], "output_shape": [5, 6]}, True),
        ("2d_same_upper", (1, 2, 3, 4), (2, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, True),
        ("2d_same_lower", (1, 2, 3, 4), (2, 2, 3, 3), {"auto_pad": "SAME_LOWER", "strides": [2, 2]}, True),
        ("2d_same_upper_short_kernel", (1, 1, 3, 3), (1, 1, 1, 2),
         {"auto_pad": "SAME_UPPER", "strides": [3, 3]}, False),
        ("2d_valid", (1, 1, 3, 3), (1, 2, 2, 2),
         {"auto_pad": "VALID", "strides": [2, 1], "pads": [1, 1, 1, 1]}, False),
        ("2d_group", (2, 4, 3, 3), (4, 3, 2, 2), {"group": 2, "strides": [2, 1]}, True),
        ("2d_depthwise", (1, 3, 4, 4), (3, 1, 3, 3),
         {"group": 3, "strides": [2, 2], "pads": [1, 1, 1, 1]}, True),
        ("3d", (1, 2, 3, 2, 3), (2, 2, 2, 2, 3), {"strides": [2, 1, 2], "pads": [0, 1, 1, 1, 0, 0]}, True),
        ("3d_group_output_padding", (1, 4, 2, 3, 2), (4, 1, 2, 2, 2),
         {"group": 2, "strides": [2, 2, 3], "output_padding": [1, 0, 2]}, True),
        ("2d_chunked", (1, 4, 90, 64), (4, 8, 3, 3), {"pads": [1, 1, 1, 1]}, True),
        ("2d_empty_batch", (0, 2, 3, 3), (2, 2, 3, 3), {}, True),
    ]
    for name, xs, ws, attrs, with_bias in configs:
        for dtype in FLOATS if name in ("1d", "2d", "2d_group", "3d") else ["float32"]:
            x, w = sample(xs, dtype), sample(ws, dtype)
            group = attrs.get("group", 1)
            b = sample((ws[1] * group,), dtype) if with_bias else None
            expected = conv_transpose_ref(x, w, b, **attrs)
            inputs = [x, w] + ([b] if with_bias else [])
            case(root, f"conv_transpose_{name}_{dtype}", "ConvTranspose", inputs, expected, dtype, attrs)


def write_gemm(root):
    m, k, n = 3, 5, 4
    c_shapes = [None, (), (1,), (n,), (m, 1), (1, n), (m, n), (1, 1)]
    for trans_a, trans_b in itertools.product([0, 1], [0, 1]):
        for dtype in FLOATS + ["int32", "int64"]:
            a = sample((k, m) if trans_a else (m, k), dtype)
            b = sample((n, k) if trans_b else (k, n), dtype)
            for ci, cs in enumerate(c_shapes):
                if dtype not in ("float32", "float64") and ci not in (0, 3, 6):
                    continue
                c = None if cs is None else sample(cs, dtype)
                alpha, beta = (1.0, 1.0) if dtype.startswith("int") else (0.5, -1.5)
                prod = (f64(a).T if trans_a else f64(a)) @ (f64(b).T if trans_b else f64(b))
                y = alpha * prod + (0 if c is None else beta * f64(c))
                attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta}
                inputs = [a, b] + ([] if c is None else [c])
                case(root, f"gemm_{dtype}_t{trans_a}{trans_b}_c{ci}", "Gemm", inputs, y, dtype, attrs)
    # Integer scaling goes through double and truncates, as in the ONNX reference.
    a, b, c = sample((2, 3), "int32"), sample((3, 2), "int32"), sample((2,), "int32")
    y = (f64(a) @ f64(b)) * 0.5 + f64(c) * 2.0
    case(root, "gemm_int32_fractional_alpha", "Gemm", [a, b, c], np.trunc(y), "int32",
         {"alpha": 0.5, "beta": 2.0})
    # beta = 0 ignores C, NaNs included.
    a, b = sample((2, 3), "float32"), sample((3, 4), "float32")
    c = np.full((2, 4), np.nan, dtype=np.float32)
    case(root, "gemm_beta_zero_ignores_c", "Gemm", [a, b, c], f64(a) @ f64(b), "float32", {"beta": 0.0})
    # Larger than one tile in every direction, with the transposed B packed.
    a, b, c = sample((300, 7), "float32"), sample((517, 300), "float32"), sample((517,), "float32")
    case(root, "gemm_large_tn", "Gemm", [a, b, c], f64(a).T @ f64(b).T + f64(c), "float32",
         {"transA": 1, "transB": 1})
    a, b = sample((0, 3), "float32"), sample((3, 4), "float32")
    case(root, "gemm_empty_m", "Gemm", [a, b], np.zeros((0, 4)), "float32")
    a, b, c = sample((2, 0), "float32"), sample((0, 4), "float32"), sample((4,), "float32")
    case(root, "gemm_empty_k", "Gemm", [a, b, c], np.broadcast_to(f64(c), (2, 4)), "float32")


def write_matmul(root):
    pairs = [
        ((3, 4), (4, 5)),
        ((2, 3, 4), (4, 2)),
        ((2, 1, 3, 4), (5, 4, 2)),
        ((1, 3, 4), (2, 1, 4, 6)),
        ((4,), (4, 3)),
        ((3, 4), (4,)),
        ((4,), (2, 4, 3)),
        ((2, 2, 3, 4), (4,)),
        ((0, 3, 4), (4, 2)),
        ((3, 0), (0, 2)),
        ((5, 300), (300, 600)),
    ]
    for dtype in FLOATS + ["int32", "int64"]:
        for i, (sa, sb) in enumerate(pairs):
            if dtype != "float32" and i >= 8:
                continue
            a, b = sample(sa, dtype), sample(sb, dtype)
            case(root, f"matmul_{dtype}_{i}", "MatMul", [a, b], np.matmul(f64(a), f64(b)), dtype)
    # Many small products: split across threads one product per task.
    a, b = sample((64, 3, 5), "float32"), sample((5, 2), "float32")
    case(root, "matmul_float32_many_batches", "MatMul", [a, b], np.matmul(f64(a), f64(b)), "float32")


def write(root):
    write_conv(root)
    write_conv_transpose(root)
    write_gemm(root)
    write_matmul(root)
