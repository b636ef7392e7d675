"""numpy cases for the binary elementwise family: broadcasting corners, every dtype, empty tensors."""

import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261129)

NUMERIC = ["float32", "float64", "float16", "int8", "uint8", "int32", "int64"]

# (shape of A, shape of B): equal, scalar, row/column, leading-1 and rank-extending, empty.
BROADCASTS = [
    ((2, 3), (2, 3)),
    ((2, 3), ()),
    ((), (4,)),
    ((3, 1), (1, 4)),
    ((2, 1, 5), (3, 1)),
    ((4, 1, 6), (5, 1, 3, 1)),
    ((0, 3), (1, 3)),
    ((2, 0), (2, 1)),
    ((7,), (1,)),
]


def sample(shape, dtype, low=-5, high=5, nonzero=False):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        x = RNG.integers(max(low, info.min), min(high, info.max) + 1, size=shape).astype(dtype)
    else:
        x = RNG.uniform(low, high, size=shape).astype(dtype)
    if nonzero:
        x = np.where(x == 0, np.ones_like(x), x).astype(dtype)
    return x


def write(root):
    ops = {
        "Add": np.add,
        "Sub": np.subtract,
        "Mul": np.multiply,
    }
    for op, fn in ops.items():
        for dtype in NUMERIC:
            for k, (sa, sb) in enumerate(BROADCASTS):
                a, b = sample(sa, dtype), sample(sb, dtype)
                with np.errstate(over="ignore"):
                    write_case(root, f"{op.lower()}_{dtype}_{k}", op, [a, b], [fn(a, b).astype(dtype)])

    for dtype in ["float32", "float64", "float16"]:
        for k, (sa, sb) in enumerate(BROADCASTS):
            a, b = sample(sa, dtype), sample(sb, dtype, nonzero=True)
            write_case(root, f"div_{dtype}_{k}", "Div", [a, b], [(a / b).astype(dtype)], rtol=1e-3)
    for dtype in ["int8", "int32", "int64"]:
        a, b = sample((3, 4), dtype), sample((4,), dtype, nonzero=True)
        # ONNX integer division truncates toward zero (C semantics), unlike numpy's floor division.
        write_case(root, f"div_{dtype}_trunc", "Div", [a, b], [np.trunc(a / b).astype(dtype)])

    a, b = sample((2, 3), "float32", 0.5, 3), sample((3,), "float32", -2, 2)
    write_case(root, "pow_float32_bcast", "Pow", [a, b], [np.power(a, b)], rtol=1e-5)
    write_case(root, "pow_float32_int64_exponent", "Pow", [a, np.array([2, 3, 0], dtype=np.int64)],
               [np.power(a, np.array([2, 3, 0])).astype(np.float32)])

    a, b = sample((3, 4), "int32", -9, 9), sample((4,), "int32", 1, 5) * np.array([1, -1, 1, -1], dtype=np.int32)
    write_case(root, "mod_int32_python_sign", "Mod", [a, b], [np.mod(a, b)])
    write_case(root, "mod_int32_fmod", "Mod", [a, b], [np.fmod(a, b)], attrs={"fmod": 1})

    for op, fn in {"Max": np.maximum, "Min": np.minimum}.items():
        for dtype in NUMERIC:
            a, b, c = sample((2, 3), dtype), sample((3,), dtype), sample((2, 1), dtype)
            write_case(root, f"{op.lower()}_{dtype}_three", op, [a, b, c], [fn(fn(a, b), c)])
    a = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    b = np.array([2.0, 0.0, np.nan], dtype=np.float32)
    write_case(root, "max_nan_propagates", "Max", [a, b], [np.maximum(a, b)])

    for op, fn in {"Equal": np.equal, "Less": np.less, "Greater": np.greater,
                   "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal}.items():
        for dtype in ["float32", "int64", "uint8"]:
            a, b = sample((3, 1), dtype, -2, 2), sample((1, 4), dtype, -2, 2)
            write_case(root, f"{op.lower()}_{dtype}", op, [a, b], [fn(a, b)])
    a, b = sample((2, 3), "bool"), sample((3,), "bool")
    for op, fn in {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor,
                   "Equal": np.equal}.items():
        write_case(root, f"{op.lower()}_bool", op, [a, b], [fn(a, b)])

    cond = sample((2, 1, 4), "bool")
    for dtype in NUMERIC + ["bool"]:
        x, y = sample((3, 1), dtype), sample((4,), dtype)
        write_case(root, f"where_{dtype}", "Where", [cond, x, y], [np.where(cond, x, y)])
