"""numpy cases for the quantization family: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv.

What the ONNX node tests leave out: every input dtype, ties (round half to even), saturation,
inf and NaN, negative axes, blocks that do not divide the axis, the precision attribute, per-row
and per-column matrix parameters, batch broadcasting, 32-bit wrap-around, convolution windows
(groups, strides, dilations, SAME padding, 1 and 3 spatial axes), per-channel weights, empty
tensors. The references below compute each formula of the spec directly with numpy.
"""

import itertools

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261201)
BF16 = np.dtype(ml_dtypes.bfloat16)
ONNX_CODE = {np.dtype(np.float32): 1, np.dtype(np.uint8): 2, np.dtype(np.int8): 3, np.dtype(np.float16): 10,
             np.dtype(np.float64): 11, BF16: 16}
NP_OF_CODE = {code: dtype for dtype, code in ONNX_CODE.items()}


def saturate(values, zero_point, qtype):
    """saturate(round_half_even(values) + zero_point); NaN saturates to the minimum."""
    info = np.iinfo(qtype)
    r = np.rint(np.asarray(values, dtype=np.float64))
    r = np.where(np.isnan(r), info.min, r + np.asarray(zero_point, dtype=np.float64))
    return np.clip(r, info.min, info.max).astype(qtype)


def per_element(param, shape, axis, block):
    """A scale or zero point repeated onto every element of a tensor of `shape`."""
    param = np.asarray(param)
    if param.size == 1 and param.ndim <= 1:
        return param.reshape(())
    axis %= len(shape)
    if not block:
        dims = [1] * len(shape)
        dims[axis] = param.size
        return param.reshape(dims)
    return np.repeat(param, block, axis=axis).take(range(shape[axis]), axis=axis)


def quantize_ref(x, scale, zero_point=None, axis=1, block=0, qtype=np.uint8, precision=None):
    if precision is None:
        precision = np.float64 if scale.dtype == np.int32 else scale.dtype
    s = per_element(scale, x.shape, axis, block)
    quotient = (x.astype(precision) / s.astype(precision)).astype(precision)
    zp = 0 if zero_point is None else per_element(zero_point, x.shape, axis, block)
    return saturate(quotient.astype(np.float64), zp, qtype)


def dequantize_ref(x, scale, zero_point=None, axis=1, block=0, out=None):
    acc = np.float64 if x.dtype == np.int32 else np.float32
    zp = 0 if zero_point is None else per_element(zero_point, x.shape, axis, block).astype(np.int64)
    s = per_element(scale, x.shape, axis, block).astype(acc)
    with np.errstate(over="ignore"):  # large int32 values overflow float16 to inf, as they should
        return ((x.astype(np.int64) - zp).astype(acc) * s).astype(out or scale.dtype)


def wrap32(values):
    """int64 sums reduced modulo 2^32 into int32, as 32-bit accumulation wraps."""
    return ((np.asarray(values, dtype=np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def spread(acc):
    """A 100th of the largest integer sum: requantized, the sums then span about [-100, 100]."""
    return max(1.0, float(np.max(np.abs(acc)))) / 100 if np.size(acc) else 1.0


def mid_zero_point(qtype):
    return np.array(RNG.integers(-20, 21) + (128 if qtype == np.uint8 else 0), qtype)


def qsample(shape, qtype):
    info = np.iinfo(qtype)
    return RNG.integers(info.min, int(info.max) + 1, size=shape).astype(qtype)


# ---------------------------------------------------------------------------------------------
# QuantizeLinear and DequantizeLinear


def write_quantize(root):
    # Ties (x / 2 = k + 0.5 rounds to even), saturation, infinities and NaN, for every input type.
    base = np.array([0, 1, 3, 5, -1, -3, -5, 7, 254, -254, 600, -600, 1e30, -np.inf, np.inf, np.nan])
    for xtype in [np.float32, np.float16, BF16]:
        x = base.astype(xtype)
        for qtype in [np.uint8, np.int8]:
            for zp in [None, 0, 3, -7 if qtype == np.int8 else 250]:
                scale = np.array(2, dtype=xtype)
                zero_point = None if zp is None else np.array(zp, dtype=qtype)
                attrs = {"output_dtype": ONNX_CODE[np.dtype(qtype)]} if zp is None and qtype == np.int8 else {}
                name = f"quantizelinear_{np.dtype(xtype).name}_{np.dtype(qtype).name}_zp{zp}"
                write_case(root, name, "QuantizeLinear", [x, scale, zero_point],
                           [quantize_ref(x, scale, zero_point, qtype=qtype)], attrs=attrs)
    x = np.array([0, 1, 3, 5, -5, 300, -300, 2**30, -(2**31)], dtype=np.int32)
    for scale in [np.array(2, np.float32), np.array([2], np.int32), np.array(0.75, np.float16)]:
        write_case(root, f"quantizelinear_int32_scale_{scale.dtype.name}", "QuantizeLinear",
                   [x, scale, np.array(3, np.int8)], [quantize_ref(x, scale, np.int8(3), qtype=np.int8)])

    # The quotient is rounded to the precision type (y_scale's, else the attribute's) before rounding.
    x = np.array([0.50006104, 1.5002441, 2.4997559, 100.03, -0.50006104, 77.777], dtype=np.float32)
    scale = np.array(1, np.float32)
    for precision in [None, np.float16, BF16, np.float64]:
        attrs = {} if precision is None else {"precision": ONNX_CODE[np.dtype(precision)]}
        name = f"quantizelinear_precision_{'default' if precision is None else np.dtype(precision).name}"
        write_case(root, name, "QuantizeLinear", [x, scale, np.array(128, np.uint8)],
                   [quantize_ref(x, scale, np.uint8(128), precision=precision)], attrs=attrs)
    write_case(root, "quantizelinear_float16_scale_divides_in_float16", "QuantizeLinear",
               [x, np.array(1, np.float16)], [quantize_ref(x, np.array(1, np.float16))])

    # Per axis, including negative axes; a scale of one element is per tensor whatever the axis.
    x = RNG.uniform(-300, 300, size=(2, 3, 4, 5)).astype(np.float32)
    for axis in [0, 1, 3, -1, -3]:
        n = x.shape[axis]
        scale = RNG.uniform(0.5, 3, size=n).astype(np.float32)
        zp = qsample(n, np.int8)
        write_case(root, f"quantizelinear_axis{axis}", "QuantizeLinear", [x, scale, zp],
                   [quantize_ref(x, scale, zp, axis=axis, qtype=np.int8)], attrs={"axis": axis})
    write_case(root, "quantizelinear_vector_of_one", "QuantizeLinear",
               [x, np.array([1.5], np.float32), np.array([10], np.uint8)],
               [quantize_ref(x, np.array(1.5, np.float32), np.uint8(10))], attrs={"axis": 2})
    x1 = RNG.uniform(-4, 4, size=7).astype(np.float32)
    scale1 = RNG.uniform(0.01, 0.1, size=7).astype(np.float32)
    write_case(root, "quantizelinear_1d_per_axis", "QuantizeLinear", [x1, scale1],
               [quantize_ref(x1, scale1, axis=0)], attrs={"axis": 0})

    # Blocks, including a last block shorter than block_size and negative axes.
    for shape, axis, block in [((3, 4), 1, 2), ((3, 7), 1, 3), ((5, 2, 3), 0, 2), ((2, 6, 3), -2, 4),
                               ((2, 3, 9), -1, 9), ((4, 5), 1, 1)]:
        x = RNG.uniform(-20, 20, size=shape).astype(np.float32)
        sshape = list(shape)
        sshape[axis] = -(-shape[axis] // block)
        scale = RNG.uniform(0.1, 1, size=sshape).astype(np.float32)
        zp = qsample(sshape, np.uint8)
        name = f"quantizelinear_blocked_{'x'.join(map(str, shape))}_axis{axis}_block{block}"
        write_case(root, name, "QuantizeLinear", [x, scale, zp],
                   [quantize_ref(x, scale, zp, axis=axis, block=block)], attrs={"axis": axis, "block_size": block})
        xq = qsample(shape, np.int8)
        write_case(root, name.replace("quantizelinear", "dequantizelinear"), "DequantizeLinear",
                   [xq, scale, zp.astype(np.int8)],
                   [dequantize_ref(xq, scale, zp.astype(np.int8), axis=axis, block=block)],
                   attrs={"axis": axis, "block_size": block})

    # Empty tensors and scalars.
    for shape in [(0,), (2, 0, 3)]:
        x = np.zeros(shape, np.float32)
        write_case(root, f"quantizelinear_empty_{len(shape)}d", "QuantizeLinear",
                   [x, np.array([1.0] * (shape[1] if len(shape) > 1 else 1), np.float32)],
                   [np.zeros(shape, np.uint8)])
        write_case(root, f"dequantizelinear_empty_{len(shape)}d", "DequantizeLinear",
                   [x.astype(np.int8), np.array(0.5, np.float32), np.array(1, np.int8)], [x])
    write_case(root, "quantizelinear_scalar", "QuantizeLinear",
               [np.array(-2.5, np.float32), np.array(1, np.float32), np.array(-1, np.int8)],
               [np.array(-3, np.int8)])


def write_dequantize(root):
    for xtype in [np.uint8, np.int8, np.int32]:
        x = qsample((3, 4), xtype) if xtype != np.int32 else RNG.integers(-(2**31), 2**31, size=(3, 4)).astype(np.int32)
        if xtype == np.int32:
            x[0, :3] = [2**31 - 1, -(2**31), 16777217]
        for stype in [np.float32, np.float16, BF16]:
            scale = np.array(0.0375, dtype=stype)
            zp = np.array(0 if xtype == np.int32 else 5, dtype=xtype)
            for out in [None, np.float32, np.float16, BF16]:
                attrs = {} if out is None else {"output_dtype": ONNX_CODE[np.dtype(out)]}
                name = (f"dequantizelinear_{np.dtype(xtype).name}_{np.dtype(stype).name}_"
                        f"{'default' if out is None else np.dtype(out).name}")
                write_case(root, name, "DequantizeLinear", [x, scale, zp],
                           [dequantize_ref(x, scale, zp, out=out)], attrs=attrs, rtol=0, atol=0)
        write_case(root, f"dequantizelinear_{np.dtype(xtype).name}_no_zero_point", "DequantizeLinear",
                   [x, np.array(3.0, np.float32)], [dequantize_ref(x, np.array(3.0, np.float32))], rtol=0, atol=0)
    x = qsample((2, 3, 4), np.uint8)
    for axis in [0, 1, 2, -1, -3]:
        n = x.shape[axis]
        scale = RNG.uniform(0.01, 0.2, size=n).astype(np.float32)
        zp = qsample(n, np.uint8)
        write_case(root, f"dequantizelinear_axis{axis}", "DequantizeLinear", [x, scale, zp],
                   [dequantize_ref(x, scale, zp, axis=axis)], attrs={"axis": axis}, rtol=0, atol=0)
    scale = np.array([0.5, 0.25, 2.0], np.float16)
    write_case(root, "dequantizelinear_axis_float16_scale", "DequantizeLinear", [x, scale],
               [dequantize_ref(x, scale, axis=1)], rtol=0, atol=0)


def write_dynamic_quantize(root):
    inputs = {
        "mixed": RNG.uniform(-3, 5, size=(4, 5)).astype(np.float32),
        "positive": RNG.uniform(0.5, 2, size=(7,)).astype(np.float32),
        "negative": RNG.uniform(-9, -1, size=(2, 3, 2)).astype(np.float32),
        "zeros": np.zeros((3, 2), np.float32),
        "empty": np.zeros((0, 4), np.float32),
        "scalar": np.array(-1.25, np.float32),
        "large": RNG.normal(0, 10, size=(70000,)).astype(np.float32),
        "with_nan": np.array([1.0, np.nan, -2.0, 0.5], np.float32),
    }
    for name, x in inputs.items():
        lo = np.float32(min(0.0, np.nanmin(x))) if x.size else np.float32(0)
        hi = np.float32(max(0.0, np.nanmax(x))) if x.size else np.float32(0)
        scale = np.float32(1) if lo == hi else np.float32(np.float32(hi - lo) / np.float32(255))
        zp = np.rint(np.clip(np.float32(0) - np.float32(lo / scale), 0, 255)).astype(np.uint8)
        y = saturate((x / scale).astype(np.float32), zp, np.uint8)
        write_case(root, f"dynamicquantizelinear_{name}", "DynamicQuantizeLinear", [x],
                   [y, np.array(scale, np.float32), np.array(zp, np.uint8)], rtol=0, atol=0)


# ---------------------------------------------------------------------------------------------
# MatMulInteger and QLinearMatMul


def matrix_param(param, operand_shape, per_row):
    """A matrix operand's scale or zero point broadcast against the operand (1-D operands promoted)."""
    param = np.asarray(param)
    if param.size == 1:
        return param.reshape(())
    if param.ndim == 1:
        return param.reshape(-1, 1) if per_row else param
    return param


def promoted(a, is_a):
    return (a.reshape(1, -1) if is_a else a.reshape(-1, 1)) if a.ndim == 1 else a


def unpromote(y, a, b):
    if a.ndim == 1:
        y = y[..., 0, :]
    if b.ndim == 1:
        y = y[..., 0]
    return y


def integer_product(a, b, a_zp=None, b_zp=None):
    """int64 product of (a - a_zp) and (b - b_zp), before the 32-bit wrap, in promoted shapes."""
    pa, pb = promoted(a, True).astype(np.int64), promoted(b, False).astype(np.int64)
    if a_zp is not None:
        pa = pa - matrix_param(a_zp, pa.shape, True).astype(np.int64)
    if b_zp is not None:
        pb = pb - matrix_param(b_zp, pb.shape, False).astype(np.int64)
    return np.matmul(pa, pb)


MATMUL_SHAPES = [((3, 4), (4, 5)), ((4,), (4, 3)), ((2, 4), (4,)), ((4,), (4,)), ((2, 1, 3, 4), (5, 4, 2)),
                 ((3, 0), (0, 2)), ((0, 3), (3, 2)), ((7, 33), (33, 300))]


def write_matmul_integer(root):
    for k, (sa, sb) in enumerate(MATMUL_SHAPES):
        for ta, tb in [(np.uint8, np.uint8), (np.int8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]:
            a, b = qsample(sa, ta), qsample(sb, tb)
            a_zp, b_zp = qsample((), ta), qsample((), tb)
            y = unpromote(wrap32(integer_product(a, b, a_zp, b_zp)), a, b)
            name = f"matmulinteger_{k}_{np.dtype(ta).name}_{np.dtype(tb).name}"
            write_case(root, name, "MatMulInteger", [a, b, a_zp, b_zp], [y])
    a, b = qsample((3, 4), np.uint8), qsample((4, 5), np.int8)
    write_case(root, "matmulinteger_no_zero_points", "MatMulInteger", [a, b],
               [wrap32(integer_product(a, b))])
    write_case(root, "matmulinteger_only_b_zero_point", "MatMulInteger", [a, b, None, np.int8(-3)],
               [wrap32(integer_product(a, b, None, np.int8(-3)))])
    # Per row of A and per column of B: vectors, and N-D (..., M, 1) / (..., 1, N) forms.
    a_zp, b_zp = qsample((3,), np.uint8), qsample((5,), np.int8)
    write_case(root, "matmulinteger_per_row_per_column", "MatMulInteger", [a, b, a_zp, b_zp],
               [wrap32(integer_product(a, b, a_zp, b_zp))])
    a, b = qsample((2, 3, 4), np.int8), qsample((2, 4, 5), np.uint8)
    a_zp, b_zp = qsample((2, 3, 1), np.int8), qsample((1, 1, 5), np.uint8)
    write_case(root, "matmulinteger_nd_zero_points", "MatMulInteger", [a, b, a_zp, b_zp],
               [wrap32(integer_product(a, b, a_zp, b_zp))])
    # 40000 products of 255 * 255 overflow int32: the sum wraps modulo 2^32.
    a, b = np.full((2, 40000), 255, np.uint8), np.full((40000, 2), 255, np.uint8)
    a[1] = 0
    write_case(root, "matmulinteger_wraps", "MatMulInteger", [a, b, np.uint8(0), np.uint8(0)],
               [wrap32(integer_product(a, b))])


def qlinear_matmul_ref(a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp):
    acc = wrap32(integer_product(a, b, a_zp, b_zp)).astype(np.float64)
    pa, pb = promoted(a, True), promoted(b, False)
    sa = matrix_param(a_scale, pa.shape, True).astype(np.float32)
    sb = matrix_param(b_scale, pb.shape, False).astype(np.float32)
    multiplier = (sa * sb / np.float32(y_scale.astype(np.float32))).astype(np.float32)
    return unpromote(saturate(acc * multiplier.astype(np.float64), y_zp, y_zp.dtype), a, b)


def write_qlinear_matmul(root):
    for k, (sa, sb) in enumerate(MATMUL_SHAPES):
        for ta, tb, ty in [(np.uint8, np.uint8, np.uint8), (np.int8, np.uint8, np.int8),
                           (np.uint8, np.int8, np.int8), (np.int8, np.int8, np.uint8)]:
            for stype in [np.float32, np.float16, BF16]:
                a, b = qsample(sa, ta), qsample(sb, tb)
                a_zp, b_zp = qsample((), ta), qsample((), tb)
                y_scale = 0.02 * 0.03 * spread(integer_product(a, b, a_zp, b_zp))
                inputs = [a, np.array(0.02, stype), a_zp, b, np.array(0.03, stype), b_zp, np.array(y_scale, stype),
                          mid_zero_point(ty)]
                name = f"qlinearmatmul_{k}_{np.dtype(ta).name}_{np.dtype(tb).name}_{np.dtype(ty).name}_" \
                       f"{np.dtype(stype).name}"
                write_case(root, name, "QLinearMatMul", inputs, [qlinear_matmul_ref(*inputs)])
    # Ties: a multiplier of 0.5 makes every odd sum a tie, which rounds to even.
    a, b = RNG.integers(-5, 6, size=(4, 6)).astype(np.int8), RNG.integers(-5, 6, size=(6, 5)).astype(np.int8)
    inputs = [a, np.float32(0.5), np.int8(0), b, np.float32(1), np.int8(0), np.float32(1), np.int8(1)]
    y = qlinear_matmul_ref(*[np.asarray(v) for v in inputs])
    write_case(root, "qlinearmatmul_ties_to_even", "QLinearMatMul", inputs, [y])
    inputs[6] = np.float32(0.1)  # most sums now fall outside int8 and saturate
    write_case(root, "qlinearmatmul_saturates", "QLinearMatMul", inputs,
               [qlinear_matmul_ref(*[np.asarray(v) for v in inputs])])
    # Per row of a and per column of b, vectors and N-D forms, with a batch that broadcasts.
    a, b = qsample((2, 3, 4), np.uint8), qsample((4, 5), np.uint8)
    inputs = [a, RNG.uniform(0.01, 0.05, size=(3,)).astype(np.float32), qsample((3,), np.uint8),
              b, RNG.uniform(0.01, 0.05, size=(5,)).astype(np.float32), qsample((5,), np.uint8),
              np.array([0.05], np.float32), np.array([128], np.uint8)]
    inputs[6] = np.array([0.0009 * spread(integer_product(a, b, inputs[2], inputs[5]))], np.float32)
    write_case(root, "qlinearmatmul_per_row_per_column", "QLinearMatMul", inputs, [qlinear_matmul_ref(*inputs)])
    inputs[1], inputs[2] = RNG.uniform(0.01, 0.05, size=(2, 3, 1)).astype(np.float32), qsample((2, 3, 1), np.uint8)
    write_case(root, "qlinearmatmul_nd_per_row", "QLinearMatMul", inputs, [qlinear_matmul_ref(*inputs)])


# ---------------------------------------------------------------------------------------------
# ConvInteger and QLinearConv


def conv_ref(x, w, strides=None, dilations=None, pads=None, group=1, auto_pad="NOTSET"):
    """Direct integer convolution (int64) of already shifted x and w: a loop over kernel taps."""
    nsp = x.ndim - 2
    strides = strides or [1] * nsp
    dilations = dilations or [1] * nsp
    pads = list(pads or [0] * (2 * nsp))
    kernel = w.shape[2:]
    spans = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        for i in range(nsp):
            out = -(-x.shape[2 + i] // strides[i])
            total = max(0, (out - 1) * strides[i] + spans[i] - x.shape[2 + i])
            begin = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            pads[i], pads[i + nsp] = begin, total - begin
    elif auto_pad == "VALID":
        pads = [0] * (2 * nsp)
    xp = np.pad(x, [(0, 0), (0, 0)] + [(pads[i], pads[i + nsp]) for i in range(nsp)])
    out = [(xp.shape[2 + i] - spans[i]) // strides[i] + 1 for i in range(nsp)]
    cg, mg = x.shape[1] // group, w.shape[0] // group
    y = np.zeros((x.shape[0], w.shape[0], *out), np.int64)
    for g in range(group):
        for tap in itertools.product(*[range(k) for k in kernel]):
            window = tuple(slice(t * d, t * d + (o - 1) * s + 1, s)
                           for t, d, o, s in zip(tap, dilations, out, strides))
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            taps = w[(slice(g * mg, (g + 1) * mg), slice(None)) + tap]
            y[:, g * mg:(g + 1) * mg] += np.einsum("nc...,mc->nm...", patch, taps)
    return y


def channel_param(param, ndim):
    param = np.asarray(param)
    return param.reshape(()) if param.size == 1 else param.reshape((-1,) + (1,) * (ndim - 1))


CONVS = [
    # (x shape, w shape, attrs)
    ((1, 2, 5, 6), (3, 2, 3, 3), {}),
    ((2, 4, 7, 5), (4, 2, 3, 2), {"group": 2, "pads": [1, 0, 2, 1], "strides": [2, 1]}),
    ((1, 3, 9), (2, 3, 3), {"dilations": [2], "pads": [2, 1]}),
    ((1, 2, 6, 7), (2, 2, 3, 3), {"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
    ((1, 2, 6, 7), (2, 2, 2, 4), {"auto_pad": "SAME_LOWER"}),
    ((1, 2, 6, 7), (2, 2, 3, 3), {"auto_pad": "VALID", "strides": [1, 2]}),
    ((1, 2, 4, 3, 5), (3, 2, 2, 2, 3), {"pads": [1, 0, 1, 0, 1, 1]}),
    ((2, 6, 4, 4), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),
    ((1, 8, 5, 5), (5, 8, 1, 1), {}),
    ((0, 2, 4, 4), (3, 2, 3, 3), {}),
]


def write_conv_integer(root):
    for k, (xs, ws, attrs) in enumerate(CONVS):
        for tx, tw in [(np.uint8, np.uint8), (np.int8, np.uint8), (np.uint8, np.int8), (np.int8, np.int8)]:
            x, w = qsample(xs, tx), qsample(ws, tw)
            x_zp = qsample((), tx)
            w_zp = qsample((ws[0],), tw) if k % 2 else qsample((), tw)
            y = conv_ref(x.astype(np.int64) - x_zp, w.astype(np.int64) - channel_param(w_zp, len(ws)), **attrs)
            name = f"convinteger_{k}_{np.dtype(tx).name}_{np.dtype(tw).name}"
            write_case(root, name, "ConvInteger", [x, w, x_zp, w_zp], [wrap32(y)], attrs=attrs)
    x, w = qsample((1, 2, 4, 4), np.uint8), qsample((2, 2, 3, 3), np.int8)
    attrs = {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}
    write_case(root, "convinteger_no_zero_points", "ConvInteger", [x, w],
               [wrap32(conv_ref(x.astype(np.int64), w.astype(np.int64), pads=[1, 1, 1, 1]))], attrs=attrs)


def write_qlinear_conv(root):
    for k, (xs, ws, attrs) in enumerate(CONVS):
        for tx, tw, ty in [(np.uint8, np.uint8, np.uint8), (np.int8, np.int8, np.int8),
                           (np.uint8, np.int8, np.uint8), (np.int8, np.uint8, np.int8)]:
            x, w = qsample(xs, tx), qsample(ws, tw)
            x_scale, x_zp = np.float32(0.02), qsample((), tx)
            per_channel = k % 2 == 1
            w_scale = (RNG.uniform(0.005, 0.02, size=ws[0]) if per_channel else np.array([0.01])).astype(np.float32)
            w_zp = qsample((ws[0],) if per_channel else (1,), tw)
            bias = RNG.integers(-3000, 3000, size=ws[0]).astype(np.int32) if k % 3 else None
            acc = conv_ref(x.astype(np.int64) - x_zp, w.astype(np.int64) - channel_param(w_zp, len(ws)), **attrs)
            if bias is not None:
                acc = acc + channel_param(bias, acc.ndim - 1)
            y_scale, y_zp = np.float32(0.02 * 0.01 * spread(acc)), mid_zero_point(ty)
            multiplier = (x_scale * w_scale / y_scale).astype(np.float32)
            y = saturate(wrap32(acc).astype(np.float64) * channel_param(multiplier, acc.ndim - 1).astype(np.float64),
                         y_zp, ty)
            name = f"qlinearconv_{k}_{np.dtype(tx).name}_{np.dtype(tw).name}_{np.dtype(ty).name}"
            inputs = [x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp] + ([] if bias is None else [bias])
            write_case(root, name, "QLinearConv", inputs, [y], attrs=attrs)
    # A small y_scale: most outputs saturate.
    x, w = qsample((1, 2, 5, 5), np.uint8), qsample((2, 2, 3, 3), np.int8)
    x_zp, w_zp, y_zp = np.uint8(100), np.int8(-3), np.int8(5)
    acc = conv_ref(x.astype(np.int64) - x_zp, w.astype(np.int64) - w_zp)
    multiplier = np.float32(np.float32(0.02) * np.float32(0.01) / np.float32(0.01))
    write_case(root, "qlinearconv_saturates", "QLinearConv",
               [x, np.float32(0.02), x_zp, w, np.float32(0.01), w_zp, np.float32(0.01), y_zp],
               [saturate(acc.astype(np.float64) * np.float64(multiplier), y_zp, np.int8)])


def write(root):
    write_quantize(root)
    write_dequantize(root)
    write_dynamic_quantize(root)
    write_matmul_integer(root)
    write_qlinear_matmul(root)
    write_conv_integer(root)
    write_qlinear_conv(root)
