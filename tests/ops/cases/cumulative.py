"""numpy cases for CumSum and CumProd.

Covers what the ONNX node tests miss: every dtype Kiln has for them, 3-D inputs scanned along
each axis (negative ones too), exclusive and reverse together, an int64 axis and a 1-element 1-D
axis, empty tensors, integer overflow wrapping, and a shape wide enough to split across threads.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261207)
BF16 = np.dtype(ml_dtypes.bfloat16)

DTYPES = ["float32", "float64", "float16", "bfloat16", "int32", "int64"]
OPS = {"CumSum": (np.cumsum, 0), "CumProd": (np.cumprod, 1)}


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, op):
    dtype = np_dtype(dtype)
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-3, 4, size=shape).astype(dtype)
    # Products stay near 1 so that long scans neither overflow nor vanish.
    low, high = (0.8, 1.25) if op == "CumProd" else (-5, 5)
    return RNG.uniform(low, high, size=shape).astype(dtype)


def scan(op, x, axis, exclusive=0, reverse=0):
    """The expected result, accumulated in float64 (or int64) and rounded once."""
    fn, identity = OPS[op]
    wide = x.astype(np.int64 if np.issubdtype(x.dtype, np.integer) else np.float64)
    if reverse:
        wide = np.flip(wide, axis)
    out = fn(wide, axis=axis)
    if exclusive:
        shifted = np.full_like(out, identity)
        dst, src = [slice(None)] * out.ndim, [slice(None)] * out.ndim
        dst[axis], src[axis] = slice(1, None), slice(None, -1)
        shifted[tuple(dst)] = out[tuple(src)]
        out = shifted
    if reverse:
        out = np.flip(out, axis)
    return out.astype(x.dtype)


def tolerance(dtype):
    return {"float16": 5e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)


def write(root):
    for op in OPS:
        for dtype in DTYPES:
            x = sample((2, 3, 5), dtype, op)
            for axis in (0, 1, 2, -1, -3):
                for exclusive in (0, 1):
                    for reverse in (0, 1):
                        name = f"{op.lower()}_{dtype}_axis{axis}_ex{exclusive}_rev{reverse}"
                        write_case(root, name, op, [x, np.array(axis, dtype=np.int32)],
                                   [scan(op, x, axis, exclusive, reverse)],
                                   attrs={"exclusive": exclusive, "reverse": reverse}, rtol=tolerance(dtype),
                                   atol=tolerance(dtype))

        x = sample((4, 7), "float32", op)
        write_case(root, f"{op.lower()}_int64_axis", op, [x, np.array(-1, dtype=np.int64)], [scan(op, x, -1)])
        write_case(root, f"{op.lower()}_1d_axis_input", op, [x, np.array([0], dtype=np.int64)],
                   [scan(op, x, 0)])
        for k, (shape, axis) in enumerate([((0,), 0), ((3, 0), 0), ((0, 4), 1), ((2, 0, 3), -1)]):
            x = sample(shape, "float32", op)
            write_case(root, f"{op.lower()}_empty_{k}", op, [x, np.array(axis, dtype=np.int64)],
                       [scan(op, x, axis, exclusive=1)], attrs={"exclusive": 1})
        # Many columns, short scans: the columns are split across threads.
        x = sample((2, 3, 20001), "float32", op)
        write_case(root, f"{op.lower()}_wide", op, [x, np.array(1, dtype=np.int32)],
                   [scan(op, x, 1, reverse=1)], attrs={"reverse": 1}, rtol=1e-5)
        # One long scan.
        x = sample((3001,), "float64", op)
        write_case(root, f"{op.lower()}_long", op, [x, np.array(0, dtype=np.int32)], [scan(op, x, 0)],
                   rtol=1e-9)

    # Integers wrap around on overflow.
    x = np.array([2**62, 2**62, 2**62], dtype=np.int64)
    write_case(root, "cumsum_int64_wraps", "CumSum", [x, np.array(0, dtype=np.int32)],
               [np.array([2**62, -(2**63), -(2**62)], dtype=np.int64)])
    x = np.array([65536, 65536, 3], dtype=np.int32)
    write_case(root, "cumprod_int32_wraps", "CumProd", [x, np.array(0, dtype=np.int32)],
               [np.array([65536, 0, 0], dtype=np.int32)])
