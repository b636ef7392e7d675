"""numpy cases for BitwiseAnd/Or/Xor, BitwiseNot and BitShift.

Covers what the ONNX node tests miss: every integer dtype Kiln has (int8, uint8, int32, int64) with
values over the whole range, broadcasting corners and empty tensors, and for BitShift every shift
amount from below zero to past the bit width, on unsigned types and int64 too.
"""

import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261208)

INTEGERS = ["int8", "uint8", "int32", "int64"]

# (shape of A, shape of B): equal, scalar, row/column, rank-extending, empty.
BROADCASTS = [
    ((2, 3), (2, 3)),
    ((2, 3), ()),
    ((3, 1), (1, 4)),
    ((2, 1, 5), (3, 1)),
    ((0, 3), (1, 3)),
    ((7,), (1,)),
]


def full_range(shape, dtype):
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)


def shift_ref(x, y, left):
    """BitShift as ONNX defines it, element by element in Python integers."""
    bits = x.dtype.itemsize * 8
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), dtype=x.dtype)
    xb, yb = np.broadcast_arrays(x, y)
    for index in np.ndindex(out.shape):
        v, s = int(xb[index]), int(yb[index])
        if s < 0 or s >= bits:
            r = -1 if (not left and v < 0) else 0
        elif left:
            r = (v << s) & ((1 << bits) - 1)
            if np.issubdtype(x.dtype, np.signedinteger) and r >= 1 << (bits - 1):
                r -= 1 << bits
        else:
            r = v >> s
        out[index] = r
    return out


def write(root):
    ops = {"BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor}
    for op, fn in ops.items():
        for dtype in INTEGERS:
            for k, (sa, sb) in enumerate(BROADCASTS):
                a, b = full_range(sa, dtype), full_range(sb, dtype)
                write_case(root, f"{op.lower()}_{dtype}_{k}", op, [a, b], [fn(a, b)])
        # Enough rows to split the broadcast loop across threads.
        a, b = full_range((70, 1000), "int32"), full_range((1000,), "int32")
        write_case(root, f"{op.lower()}_int32_large", op, [a, b], [fn(a, b)])
    for dtype in INTEGERS:
        for k, shape in enumerate([(2, 3), (), (0, 4), (5, 7, 3)]):
            x = full_range(shape, dtype)
            write_case(root, f"bitwisenot_{dtype}_{k}", "BitwiseNot", [x], [np.bitwise_not(x)])

    for dtype in INTEGERS:
        bits = np.dtype(dtype).itemsize * 8
        signed = np.issubdtype(np.dtype(dtype), np.signedinteger)
        amounts = np.arange(-3 if signed else 0, bits + 3).astype(dtype)
        x = np.array([0, 1, 5, np.iinfo(dtype).max, np.iinfo(dtype).min] + ([-1, -7] if signed else []),
                     dtype=dtype).reshape(-1, 1)
        for direction in ("LEFT", "RIGHT"):
            write_case(root, f"bitshift_{direction.lower()}_{dtype}_all_amounts", "BitShift", [x, amounts],
                       [shift_ref(x, amounts, direction == "LEFT")], attrs={"direction": direction})
        x, y = full_range((0, 3), dtype), np.array([1], dtype=dtype)
        write_case(root, f"bitshift_empty_{dtype}", "BitShift", [x, y], [x.copy()],
                   attrs={"direction": "LEFT"})
