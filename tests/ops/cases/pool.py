"""numpy cases for the pooling family: 1-D to 3-D windows, ceil_mode, dilations, asymmetric and
automatic pads, count_include_pad, MaxPool Indices in both storage orders, every dtype, empty batches.

The reference walks every window explicitly: tap j of a window along an axis sits at input
position out * stride - pad_begin + j * dilation; taps outside the input never contribute a value.
"""

import itertools
import math

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261204)
BF16 = np.dtype(ml_dtypes.bfloat16)


def sample(shape, dtype):
    if np.dtype(dtype) in (np.dtype(np.int8), np.dtype(np.uint8)):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max + 1, size=shape).astype(dtype)
    return RNG.uniform(-4, 4, size=shape).astype(np.float32).astype(dtype)


def geometry(spatial, kernel, strides, dilations, pads, auto_pad, ceil_mode):
    """Output sizes and (begin, end) pads per spatial axis, per the ONNX spec."""
    n = len(spatial)
    strides = strides or [1] * n
    dilations = dilations or [1] * n
    pads = pads or [0] * (2 * n)
    out, begin, end = [], [], []
    for i in range(n):
        extent = (kernel[i] - 1) * dilations[i] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = math.ceil(spatial[i] / strides[i])
            total = max(0, (o - 1) * strides[i] + extent - spatial[i])
            small, large = total // 2, total - total // 2
            b, e = (small, large) if auto_pad == "SAME_UPPER" else (large, small)
        else:
            b, e = pads[i], pads[n + i]
            span = spatial[i] + b + e - extent
            if ceil_mode:
                o = -(-span // strides[i]) + 1
                if (o - 1) * strides[i] >= spatial[i] + b:
                    o -= 1
            else:
                o = span // strides[i] + 1
        out.append(o)
        begin.append(b)
        end.append(e)
    return out, begin, end, strides, dilations


def pool_ref(x, kind, kernel_shape, strides=None, dilations=None, pads=None, auto_pad="NOTSET", ceil_mode=0,
             count_include_pad=0, p=2, storage_order=0):
    n_sp = x.ndim - 2
    spatial = x.shape[2:]
    kernel = kernel_shape
    out, begin, end, strides, dilations = geometry(spatial, kernel, strides, dilations, pads, auto_pad, ceil_mode)
    y = np.zeros(x.shape[:2] + tuple(out), dtype=np.float64)
    idx = np.zeros(x.shape[:2] + tuple(out), dtype=np.int64)
    xf = x.astype(np.float64)
    plane = int(np.prod(spatial))
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for o in itertools.product(*[range(s) for s in out]):
            taps, padded = [], 1
            per_axis = []
            for i in range(n_sp):
                start = o[i] * strides[i] - begin[i]
                positions = [start + j * dilations[i] for j in range(kernel[i])]
                per_axis.append([q for q in positions if 0 <= q < spatial[i]])
                padded *= sum(1 for q in positions if -begin[i] <= q < spatial[i] + end[i])
            taps = list(itertools.product(*per_axis))
            values = np.array([xf[(n, c) + t] for t in taps])
            if kind == "max":
                k = int(np.argmax(values))
                y[(n, c) + o] = values[k]
                t = taps[k]
                if storage_order == 0:
                    flat = np.ravel_multi_index(t, spatial)
                else:
                    flat = np.ravel_multi_index(t, spatial, order="F")
                idx[(n, c) + o] = (n * x.shape[1] + c) * plane + flat
            elif kind == "avg":
                y[(n, c) + o] = values.sum() / (padded if count_include_pad else len(values))
            else:
                y[(n, c) + o] = np.sum(np.abs(values) ** p) ** (1.0 / p)
    return y.astype(x.dtype), idx


def write(root):
    # (name, input shape, attributes): 1-D to 3-D, strides, dilations, asymmetric pads, ceil_mode, auto_pad.
    windows = [
        ("1d", (2, 3, 9), {"kernel_shape": [3]}),
        ("1d_stride_pad", (1, 2, 10), {"kernel_shape": [4], "strides": [3], "pads": [1, 2]}),
        ("1d_ceil_dilation", (1, 2, 11), {"kernel_shape": [3], "strides": [2], "dilations": [2], "ceil_mode": 1}),
        ("2d_asym_pads", (2, 2, 6, 7), {"kernel_shape": [3, 2], "pads": [0, 1, 2, 0], "strides": [2, 1]}),
        ("2d_ceil", (1, 3, 7, 6), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
        ("2d_ceil_pads", (1, 1, 5, 5), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1],
                                         "ceil_mode": 1}),
        ("2d_dilations", (1, 2, 8, 9), {"kernel_shape": [2, 3], "dilations": [3, 2], "pads": [1, 0, 1, 2]}),
        ("2d_same_upper_stride", (1, 2, 7, 8), {"kernel_shape": [3, 4], "strides": [2, 3], "auto_pad": "SAME_UPPER"}),
        ("2d_same_lower_dilation", (1, 1, 6, 5), {"kernel_shape": [2, 3], "dilations": [2, 2],
                                                   "auto_pad": "SAME_LOWER"}),
        ("2d_valid", (1, 2, 7, 6), {"kernel_shape": [3, 2], "strides": [2, 2], "auto_pad": "VALID"}),
        ("3d", (1, 2, 4, 5, 6), {"kernel_shape": [2, 3, 2], "strides": [1, 2, 2], "pads": [1, 0, 1, 0, 1, 1]}),
        ("3d_ceil_dilation", (1, 1, 6, 5, 7), {"kernel_shape": [2, 2, 3], "strides": [2, 2, 2],
                                               "dilations": [2, 1, 2], "ceil_mode": 1}),
        ("empty_batch", (0, 2, 5, 5), {"kernel_shape": [2, 2]}),
    ]
    for name, shape, attrs in windows:
        x = sample(shape, np.float32)
        y, idx = pool_ref(x, "max", **attrs)
        write_case(root, f"maxpool_{name}", "MaxPool", [x], [y], attrs=attrs)
        for order in (0, 1):
            y, idx = pool_ref(x, "max", storage_order=order, **attrs)
            write_case(root, f"maxpool_{name}_indices_order{order}", "MaxPool", [x], [y, idx],
                       attrs={**attrs, "storage_order": order}, num_outputs=2)
        for include in (0, 1):
            y, _ = pool_ref(x, "avg", count_include_pad=include, **attrs)
            write_case(root, f"averagepool_{name}_include_pad{include}", "AveragePool", [x], [y],
                       attrs={**attrs, "count_include_pad": include})
        for p in (1, 2, 3):
            y, _ = pool_ref(x, "lp", p=p, **attrs)
            write_case(root, f"lppool_{name}_p{p}", "LpPool", [x], [y], attrs={**attrs, "p": p}, rtol=1e-4)

    attrs = {"kernel_shape": [3, 2], "strides": [2, 1], "pads": [1, 0, 1, 1]}
    for dtype in [np.float64, np.float16, BF16, np.int8, np.uint8]:
        x = sample((2, 3, 5, 4), dtype)
        y, idx = pool_ref(x, "max", **attrs)
        write_case(root, f"maxpool_{np.dtype(dtype).name}", "MaxPool", [x], [y, idx], attrs=attrs, num_outputs=2)
    for dtype in [np.float64, np.float16, BF16]:
        x = sample((2, 3, 5, 4), dtype)
        y, _ = pool_ref(x.astype(np.float64), "avg", count_include_pad=1, **attrs)
        write_case(root, f"averagepool_{np.dtype(dtype).name}", "AveragePool", [x], [y.astype(dtype)],
                   attrs={**attrs, "count_include_pad": 1})
        y, _ = pool_ref(x.astype(np.float64), "lp", p=2, **attrs)
        write_case(root, f"lppool_{np.dtype(dtype).name}", "LpPool", [x], [y.astype(dtype)], attrs=attrs)

    # NaN wins the window's maximum.
    x = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    x[0, 0, 1, 2] = np.nan
    y = np.array([[[[5, np.nan], [13, 15]]]], dtype=np.float32)
    write_case(root, "maxpool_nan", "MaxPool", [x], [y], attrs={"kernel_shape": [2, 2], "strides": [2, 2]})

    # Ties: the first maximal tap in row-major order gives the index.
    x = np.ones((1, 1, 3, 3), dtype=np.float32)
    write_case(root, "maxpool_ties_first_index", "MaxPool", [x],
               [np.ones((1, 1, 2, 2), np.float32), np.array([[[[0, 1], [3, 4]]]], dtype=np.int64)],
               attrs={"kernel_shape": [2, 2]}, num_outputs=2)

    for dtype in [np.float32, np.float64, np.float16, BF16]:
        for shape in [(2, 3, 7), (1, 2, 4, 5), (2, 1, 2, 3, 4), (0, 2, 3, 3)]:
            x = sample(shape, dtype)
            axes = tuple(range(2, x.ndim))
            xf = x.astype(np.float64)
            tag = f"{np.dtype(dtype).name}_{len(shape) - 2}d" + ("_empty" if 0 in shape else "")
            write_case(root, f"globalaveragepool_{tag}", "GlobalAveragePool", [x],
                       [xf.mean(axis=axes, keepdims=True).astype(dtype)])
            write_case(root, f"globalmaxpool_{tag}", "GlobalMaxPool", [x], [xf.max(axis=axes, keepdims=True,
                                                                                     initial=-np.inf).astype(dtype)])
