"""numpy cases for the integer types that move through models (int16, uint16, uint32, uint64): the
arithmetic, comparison, bitwise and shift ops ONNX defines on them, Cast to and from them, and the
ops that move or select data (Reshape, Transpose, Concat, Gather, Where, Expand, Slice, the
reductions, ArgMax, TopK). Values cover each type's extremes, so wrapping and sign handling show."""

import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261207)

NEW_INTS = ["int16", "uint16", "uint32", "uint64"]


def values(dtype, shape, low=None, high=None):
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    # Draw in int64/uint64 so that uint64's upper half is reached too.
    draw_type = np.uint64 if dtype == "uint64" else np.int64
    return RNG.integers(low, high, size=shape, dtype=draw_type, endpoint=True).astype(dtype)


def extremes(dtype):
    info = np.iinfo(dtype)
    return np.array([info.min, info.max, 0, 1, info.max - 1], dtype=dtype)


def write(root):
    shape = (3, 5)
    for dtype in NEW_INTS:
        small = (0, 100) if dtype.startswith("u") else (-100, 100)
        a, b = values(dtype, shape, *small), values(dtype, shape, 1, 50)
        # Arithmetic wraps around as C++'s unsigned and numpy's fixed-width integers do.
        wide_a, wide_b = values(dtype, shape), values(dtype, shape)
        with np.errstate(over="ignore"):
            write_case(root, f"add_{dtype}_wraps", "Add", [wide_a, wide_b], [wide_a + wide_b])
            write_case(root, f"sub_{dtype}_wraps", "Sub", [wide_a, wide_b], [wide_a - wide_b])
            write_case(root, f"mul_{dtype}", "Mul", [a, b], [a * b])
        write_case(root, f"div_{dtype}", "Div", [a, b], [np.trunc(a / b).astype(dtype)])
        write_case(root, f"mod_{dtype}", "Mod", [a, b], [np.mod(a, b)])
        for op, fn in (("Max", np.maximum), ("Min", np.minimum)):
            write_case(root, f"{op.lower()}_{dtype}", op, [wide_a, wide_b], [fn(wide_a, wide_b)])
        for op, fn in (("Equal", np.equal), ("Less", np.less), ("Greater", np.greater),
                       ("LessOrEqual", np.less_equal), ("GreaterOrEqual", np.greater_equal)):
            write_case(root, f"{op.lower()}_{dtype}", op, [wide_a, wide_a[:, ::-1].copy()],
                       [fn(wide_a, wide_a[:, ::-1])])
        for op, fn in (("BitwiseAnd", np.bitwise_and), ("BitwiseOr", np.bitwise_or),
                       ("BitwiseXor", np.bitwise_xor)):
            write_case(root, f"{op.lower()}_{dtype}", op, [wide_a, wide_b], [fn(wide_a, wide_b)])
        write_case(root, f"bitwisenot_{dtype}", "BitwiseNot", [wide_a], [np.invert(wide_a)])
        if dtype.startswith("u"):
            bits = np.iinfo(dtype).bits
            shift = values(dtype, shape, 0, bits - 1)
            write_case(root, f"bitshift_left_{dtype}", "BitShift", [wide_a, shift],
                       [np.left_shift(wide_a, shift)], attrs={"direction": "LEFT"})
            write_case(root, f"bitshift_right_{dtype}", "BitShift", [wide_a, shift],
                       [np.right_shift(wide_a, shift)], attrs={"direction": "RIGHT"})
        else:
            write_case(root, f"abs_{dtype}", "Abs", [a], [np.abs(a)])
            write_case(root, f"neg_{dtype}", "Neg", [a], [-a])

        # Casts both ways: from float (truncation toward zero, in range) and between integers
        # (two's complement wrap-around, as numpy's astype).
        info = np.iinfo(dtype)
        floats = RNG.uniform(max(info.min, -1e6), min(info.max, 1e6), size=shape).astype(np.float64)
        write_case(root, f"cast_float64_to_{dtype}", "Cast", [floats], [np.trunc(floats).astype(dtype)],
                   attrs={"to": {"int16": 5, "uint16": 4, "uint32": 12, "uint64": 13}[dtype]})
        ext = extremes(dtype)
        write_case(root, f"cast_{dtype}_to_float64", "Cast", [ext], [ext.astype(np.float64)], attrs={"to": 11})
        write_case(root, f"cast_{dtype}_to_int64", "Cast", [ext], [ext.astype(np.int64)], attrs={"to": 7})
        write_case(root, f"cast_{dtype}_to_uint8", "Cast", [ext], [ext.astype(np.uint8)], attrs={"to": 2})

        # Data movement and selection.
        x = values(dtype, (2, 3, 4))
        write_case(root, f"reshape_{dtype}", "Reshape", [x, np.array([4, -1], dtype=np.int64)], [x.reshape(4, -1)])
        write_case(root, f"transpose_{dtype}", "Transpose", [x], [x.transpose(2, 0, 1)], attrs={"perm": [2, 0, 1]})
        write_case(root, f"concat_{dtype}", "Concat", [x, x[:, :1]], [np.concatenate([x, x[:, :1]], axis=1)],
                   attrs={"axis": 1})
        idx = np.array([[2, 0], [1, 2]], dtype=np.int64)
        write_case(root, f"gather_{dtype}", "Gather", [x, idx], [np.take(x, idx, axis=1)], attrs={"axis": 1})
        cond = RNG.random((2, 3, 4)) < 0.5
        write_case(root, f"where_{dtype}", "Where", [cond, x, x[::-1].copy()], [np.where(cond, x, x[::-1])])
        write_case(root, f"expand_{dtype}", "Expand", [x[:, :1], np.array([2, 3, 4], dtype=np.int64)],
                   [np.broadcast_to(x[:, :1], (2, 3, 4)).copy()])
        write_case(root, f"slice_{dtype}", "Slice",
                   [x, np.array([1], dtype=np.int64), np.array([4], dtype=np.int64), np.array([2], dtype=np.int64)],
                   [x[:, :, 1:4]])
        write_case(root, f"reducemax_{dtype}", "ReduceMax", [x, np.array([1], dtype=np.int64)],
                   [x.max(axis=1, keepdims=True)])
        write_case(root, f"reducemin_{dtype}", "ReduceMin", [x, np.array([2], dtype=np.int64)],
                   [x.min(axis=2, keepdims=True)])
        write_case(root, f"argmax_{dtype}", "ArgMax", [x], [np.argmax(x, axis=1).astype(np.int64)[:, None, :]],
                   attrs={"axis": 1})
        distinct = np.arange(12, dtype=dtype).reshape(3, 4)[:, ::-1].copy()
        order = np.argsort(-distinct.astype(np.float64), axis=1, kind="stable")[:, :2]
        write_case(root, f"topk_{dtype}", "TopK", [distinct, np.array([2], dtype=np.int64)],
                   [np.take_along_axis(distinct, order, axis=1), order.astype(np.int64)], num_outputs=2)
