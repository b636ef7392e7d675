"""numpy cases for the reduction family: Reduce*, ArgMax/ArgMin, TopK.

Covers what the ONNX node tests miss: every dtype, negative, multiple and non-adjacent axes,
size-1 axes, keepdims 0/1, empty tensors and empty reduced sets, scalars, noop_with_empty_axes,
NaN, ties, and shapes big enough to split across threads and inner blocks.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261204)
BF16 = np.dtype(ml_dtypes.bfloat16)

NUMERIC = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64"]
FLOATS = ["float32", "float64", "float16", "bfloat16"]

REDUCE_OPS = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
              "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
FLOAT_ONLY = {"ReduceLogSum", "ReduceLogSumExp"}


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def is_float(dtype):
    return dtype == BF16 or np.issubdtype(dtype, np.floating)


def sample(shape, dtype, low=-5, high=5):
    dtype = np_dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(low, info.min), min(high, info.max) + 1, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def op_sample(op, shape, dtype):
    """Inputs in the range where each op is well defined and not swamped by rounding."""
    if op == "ReduceLogSum":
        return sample(shape, dtype, 0.5, 3)
    if op == "ReduceProd":
        return sample(shape, dtype, 0.5, 1.5) if is_float(np_dtype(dtype)) else sample(shape, dtype, -2, 2)
    return sample(shape, dtype)


def reduce_ref(op, x, axes, keepdims):
    """axes: a tuple of axes (the empty tuple reduces nothing) or None for all."""
    dtype = x.dtype
    if op in ("ReduceMax", "ReduceMin"):
        is_max = op == "ReduceMax"
        if dtype == np.bool_:
            identity, xx = not is_max, x
        elif is_float(dtype):
            identity, xx = (-np.inf if is_max else np.inf), x.astype(np.float64)
        else:
            info = np.iinfo(dtype)
            identity, xx = (info.min if is_max else info.max), x
        fn = np.max if is_max else np.min
        return np.asarray(fn(xx, axis=axes, keepdims=keepdims, initial=identity)).astype(dtype)
    count = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
    if is_float(dtype):
        xx = x.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            if op == "ReduceSum":
                r = np.sum(xx, axis=axes, keepdims=keepdims)
            elif op == "ReduceMean":
                r = np.sum(xx, axis=axes, keepdims=keepdims) / count
            elif op == "ReduceProd":
                r = np.prod(xx, axis=axes, keepdims=keepdims)
            elif op == "ReduceL1":
                r = np.sum(np.abs(xx), axis=axes, keepdims=keepdims)
            elif op == "ReduceL2":
                r = np.sqrt(np.sum(xx * xx, axis=axes, keepdims=keepdims))
            elif op == "ReduceLogSum":
                r = np.log(np.sum(xx, axis=axes, keepdims=keepdims))
            elif op == "ReduceLogSumExp":
                m = np.max(xx, axis=axes, keepdims=True, initial=-np.inf)
                shift = np.where(np.isinf(m), 0, m)
                r = np.log(np.sum(np.exp(xx - shift), axis=axes, keepdims=True)) + shift
                if not keepdims:
                    r = np.squeeze(r, axis=axes if axes is not None else tuple(range(x.ndim)))
            else:
                r = np.sum(xx * xx, axis=axes, keepdims=keepdims)
        return np.asarray(r).astype(dtype)
    # Integers: sums and products wrap around in the input type, like the ONNX reference.
    if op == "ReduceSum":
        r = np.sum(x, axis=axes, keepdims=keepdims, dtype=dtype)
    elif op == "ReduceMean":
        s = np.sum(x, axis=axes, keepdims=keepdims, dtype=dtype)
        r = np.trunc(s.astype(np.float64) / count)
    elif op == "ReduceProd":
        r = np.prod(x, axis=axes, keepdims=keepdims, dtype=dtype)
    elif op == "ReduceL1":
        r = np.sum(np.abs(x), axis=axes, keepdims=keepdims, dtype=dtype)
    elif op == "ReduceL2":
        r = np.trunc(np.sqrt(np.sum(x.astype(np.float64) ** 2, axis=axes, keepdims=keepdims)))
    else:
        r = np.sum(np.square(x), axis=axes, keepdims=keepdims, dtype=dtype)
    return np.asarray(r).astype(dtype)


def write_reduce(root, name, op, x, axes, keepdims=1, noop=0, rtol=1e-5):
    """axes: a list (the `axes` input), [] for an empty input, or None to leave it out."""
    attrs = {"keepdims": keepdims}
    if noop:
        attrs["noop_with_empty_axes"] = 1
    if axes:
        ref_axes = tuple(sorted(a % x.ndim for a in axes))
    else:
        ref_axes = () if noop else None
    expected = reduce_ref(op, x, ref_axes, bool(keepdims))
    inputs = [x] if axes is None else [x, np.array(axes, dtype=np.int64)]
    write_case(root, name, op, inputs, [expected], attrs=attrs, rtol=rtol)


# (shape, axes, keepdims): one axis, negative, several adjacent, non-adjacent (transposed),
# reduced on both sides of the kept ones (batch statistics over N, H, W: reduced in place), size-1
# axes in between, all axes, and a strided axis wide enough for several inner blocks.
LAYOUTS = [
    ((4, 3, 2, 5), [0, 2, 3], 1),
    ((3, 4, 5), [1], 1),
    ((3, 4, 5), [-1], 0),
    ((3, 4, 5), [0, 1], 1),
    ((3, 4, 5), [-3, -1], 0),
    ((2, 3, 4, 5), [3, 1], 1),
    ((3, 1, 4, 1, 5), [0, 2], 0),
    ((3, 1, 4), [1], 0),
    ((7,), [0], 0),
    ((3, 4, 5), None, 1),
    ((3, 4, 5), [], 0),
]


def write(root):
    for op in REDUCE_OPS:
        short = op[len("Reduce"):].lower()
        dtypes = FLOATS if op in FLOAT_ONLY else NUMERIC
        if op in ("ReduceMax", "ReduceMin"):
            dtypes = dtypes + ["bool"]
        for dtype in dtypes:
            for k, (shape, axes, keepdims) in enumerate(LAYOUTS):
                x = op_sample(op, shape, dtype)
                write_reduce(root, f"reduce_{short}_{dtype}_{k}", op, x, axes, keepdims)

        # Empty tensors: an empty reduced set gives the identity; an empty kept axis, no output.
        x = op_sample(op, (2, 0, 3), "float32")
        write_reduce(root, f"reduce_{short}_empty_set", op, x, [1], 1)
        write_reduce(root, f"reduce_{short}_empty_set_all", op, x, None, 0)
        write_reduce(root, f"reduce_{short}_empty_kept_axis", op, x, [-1], 0)
        if op not in FLOAT_ONLY and op != "ReduceMean":
            write_reduce(root, f"reduce_{short}_empty_set_int32", op, op_sample(op, (0, 4), "int32"), [0], 0)
        # noop_with_empty_axes: nothing is reduced, the per-element part (square, abs, log) remains.
        x = op_sample(op, (2, 3), "float32")
        write_reduce(root, f"reduce_{short}_noop_absent_axes", op, x, None, 1, noop=1)
        write_reduce(root, f"reduce_{short}_noop_empty_axes", op, x, [], 0, noop=1)
        write_reduce(root, f"reduce_{short}_scalar", op, op_sample(op, (), "float32"), None, 0)
        # Big enough to split across threads: contiguous rows, a strided axis over 1024-wide blocks,
        # non-adjacent axes (transposed first). The loops are shared, so a few ops suffice.
        if op in ("ReduceSum", "ReduceMax", "ReduceLogSumExp"):
            write_reduce(root, f"reduce_{short}_rows_large", op, op_sample(op, (40, 2000), "float32"), [1], 0)
            write_reduce(root, f"reduce_{short}_strided_large", op, op_sample(op, (4, 8, 3000), "float32"),
                         [1], 1)
            write_reduce(root, f"reduce_{short}_nonadjacent_large", op,
                         op_sample(op, (4, 30, 5, 40), "float32"), [0, 2], 0)
            write_reduce(root, f"reduce_{short}_around_large", op, op_sample(op, (32, 16, 9, 9), "float32"),
                         [0, 2, 3], 1)
            # Few outputs from long reductions: the reduced axis is split into parts merged after.
            write_reduce(root, f"reduce_{short}_all_large", op, op_sample(op, (70001,), "float32"), None, 0)
            write_reduce(root, f"reduce_{short}_columns_large", op, op_sample(op, (40000, 3), "float32"),
                         [0], 1)

    x = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    for op in ("ReduceMax", "ReduceMin", "ReduceSum"):
        write_reduce(root, f"reduce_{op[6:].lower()}_nan", op, x, [1], 0)
    x = np.array([[0.0, np.inf, 1.0], [-np.inf, -np.inf, -np.inf]], dtype=np.float32)
    write_reduce(root, "reduce_logsumexp_infinities", "ReduceLogSumExp", x, [1], 0)
    x = np.array([[1000.0, 1000.0], [-1000.0, -999.0]], dtype=np.float32)
    write_reduce(root, "reduce_logsumexp_no_overflow", "ReduceLogSumExp", x, [1], 0)
    x = sample((3, 4), "int8", -128, 127)
    for op in ("ReduceSum", "ReduceProd", "ReduceSumSquare", "ReduceL1"):
        write_reduce(root, f"reduce_{op[6:].lower()}_int8_wraps", op, x, None, 0)

    write_arg_cases(root)
    write_topk_cases(root)


def arg_ref(op, x, axis, keepdims, last):
    fn = np.argmax if op == "ArgMax" else np.argmin
    if last:
        n = x.shape[axis]
        r = n - 1 - fn(np.flip(x, axis=axis), axis=axis)
    else:
        r = fn(x, axis=axis)
    if keepdims:
        r = np.expand_dims(r, axis)
    return np.asarray(r).astype(np.int64)


def write_arg_cases(root):
    for op in ("ArgMax", "ArgMin"):
        short = op.lower()
        for dtype in NUMERIC:
            for k, (shape, axis, keepdims) in enumerate([((3, 4, 5), 0, 1), ((3, 4, 5), 1, 0),
                                                         ((3, 4, 5), -1, 1), ((6,), 0, 0)]):
                # A narrow range makes ties common, so both tie rules are exercised.
                x = sample(shape, dtype, -2, 2)
                if is_float(np_dtype(dtype)):
                    x = np.round(x.astype(np.float64)).astype(x.dtype)
                for last in (0, 1):
                    write_case(root, f"{short}_{dtype}_{k}_last{last}", op, [x],
                               [arg_ref(op, x, axis, keepdims, last)],
                               attrs={"axis": axis, "keepdims": keepdims, "select_last_index": last})
        x = np.array([[1.0, np.nan, 3.0, np.nan], [4.0, 5.0, 5.0, 2.0]], dtype=np.float32)
        for last in (0, 1):
            write_case(root, f"{short}_nan_last{last}", op, [x], [arg_ref(op, x, 1, 1, last)],
                       attrs={"axis": 1, "select_last_index": last})
        x = sample((0, 3), "float32")
        write_case(root, f"{short}_empty_kept_axis", op, [x], [arg_ref(op, x, 1, 0, 0)],
                   attrs={"axis": 1, "keepdims": 0})
        x = sample((4, 8, 3000), "float32")
        write_case(root, f"{short}_strided_large", op, [x], [arg_ref(op, x, 1, 1, 0)], attrs={"axis": 1})
        x = sample((40, 2000), "int32", -100, 100)
        write_case(root, f"{short}_rows_large", op, [x], [arg_ref(op, x, -1, 0, 1)],
                   attrs={"axis": -1, "keepdims": 0, "select_last_index": 1})


def topk_ref(x, k, axis, largest):
    """Sorted by value (NaN above every number), equal values in index order."""
    moved = np.moveaxis(x, axis, -1)
    rows = moved.reshape(int(np.prod(moved.shape[:-1])), moved.shape[-1])
    values = np.empty((rows.shape[0], k), dtype=x.dtype)
    indices = np.empty((rows.shape[0], k), dtype=np.int64)
    for r, row in enumerate(rows):
        def key(i):
            v = float(row[i]) if is_float(x.dtype) else int(row[i])
            nan = v != v
            if largest:
                return (0 if nan else 1, 0 if nan else -v, i)
            return (1 if nan else 0, 0 if nan else v, i)
        order = sorted(range(row.shape[0]), key=key)[:k]
        values[r] = row[order]
        indices[r] = order
    shape = moved.shape[:-1] + (k,)
    return (np.moveaxis(values.reshape(shape), -1, axis), np.moveaxis(indices.reshape(shape), -1, axis))


def write_topk(root, name, x, k, axis=-1, largest=1):
    values, indices = topk_ref(x, k, axis, largest)
    write_case(root, name, "TopK", [x, np.array([k], dtype=np.int64)], [values, indices],
               attrs={"axis": axis, "largest": largest})


def write_topk_cases(root):
    for dtype in NUMERIC:
        x = sample((3, 4, 6), dtype, -3, 3)  # ties are common
        write_topk(root, f"topk_{dtype}_last_axis", x, 3)
        write_topk(root, f"topk_{dtype}_middle_axis_smallest", x, 2, axis=1, largest=0)
        write_topk(root, f"topk_{dtype}_first_axis", x, 3, axis=-3)
    x = sample((3, 5), "float32")
    write_topk(root, "topk_k_zero", x, 0)
    write_topk(root, "topk_k_full", x, 5, axis=1, largest=0)
    write_topk(root, "topk_empty_kept_axis", sample((0, 5), "float32"), 2)
    write_topk(root, "topk_empty_axis_k_zero", sample((3, 0), "float32"), 0)
    x = np.array([[1.0, np.nan, 3.0, np.nan, -1.0, 3.0]], dtype=np.float32)
    write_topk(root, "topk_nan_largest", x, 4)
    write_topk(root, "topk_nan_smallest", x, 6, largest=0)
    write_topk(root, "topk_strided_large", sample((4, 300, 30), "float32"), 7, axis=1)
    write_topk(root, "topk_rows_large", sample((50, 1500), "float32"), 10)
