"""numpy cases for the unary math family: every dtype each op takes, empty and 0-d tensors, odd and
multi-task sizes, and the special values inf, -inf, nan, +-0 (plus half-way values for Round)."""

import math

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261201)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
SIGNED_INTS = ["int8", "int32", "int64"]
INTS = ["int8", "uint8", "int32", "int64"]

# Small, 0-d, empty and odd-sized; the shape corners are dtype-independent, so the other dtypes
# get only the first. LARGE is split across several tasks.
SHAPES = [(2, 3, 4), (), (0, 3), (7,), (3, 0, 2)]
LARGE = (70001,)


def shapes_for(dtype):
    return SHAPES if dtype in ("float32", "int32") else SHAPES[:1]

SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0]

_erf = np.vectorize(math.erf, otypes=[np.float64])

# op: (reference, computed in float64; the range inputs are drawn from, inside the op's domain)
FLOAT_OPS = {
    "Exp": (np.exp, (-5, 5)),
    "Log": (np.log, (0.01, 10)),
    "Sqrt": (np.sqrt, (0, 10)),
    "Reciprocal": (lambda x: 1 / x, (0.1, 5)),
    "Floor": (np.floor, (-5, 5)),
    "Ceil": (np.ceil, (-5, 5)),
    "Round": (np.round, (-5, 5)),  # numpy rounds halves to even, as ONNX does
    "Sin": (np.sin, (-6, 6)),
    "Cos": (np.cos, (-6, 6)),
    "Tan": (np.tan, (-1.2, 1.2)),
    "Asin": (np.arcsin, (-0.99, 0.99)),
    "Acos": (np.arccos, (-0.99, 0.99)),
    "Atan": (np.arctan, (-5, 5)),
    "Sinh": (np.sinh, (-4, 4)),
    "Cosh": (np.cosh, (-4, 4)),
    "Asinh": (np.arcsinh, (-5, 5)),
    "Acosh": (np.arccosh, (1, 6)),
    "Atanh": (np.arctanh, (-0.99, 0.99)),
    "Erf": (_erf, (-3, 3)),
    "Trunc": (np.trunc, (-5, 5)),
    "RoundHalfAway": (lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)), (-5, 5)),
    "Expm1": (np.expm1, (-5, 5)),
    "Log1p": (np.log1p, (-0.99, 10)),
    "Log2": (np.log2, (0.01, 10)),
    "Log10": (np.log10, (0.01, 10)),
    "Cbrt": (np.cbrt, (-10, 10)),
}


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, low=-5.0, high=5.0):
    dt = np_dtype(dtype)
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return RNG.integers(max(int(low), info.min), min(int(high), info.max) + 1, size=shape).astype(dt)
    return RNG.uniform(low, high, size=shape).astype(dt)


def reference(fn, x):
    """fn applied in float64 to floats (integers as they are), rounded back to x's dtype."""
    with np.errstate(all="ignore"):
        wide = x.astype(np.float64) if x.dtype.kind not in "iub" else x
        return np.asarray(fn(wide)).astype(x.dtype)


def write_float_ops(root):
    for op, (fn, (low, high)) in FLOAT_OPS.items():
        for dtype in FLOATS:
            for k, shape in enumerate(shapes_for(dtype)):
                x = sample(shape, dtype, low, high)
                write_case(root, f"{op.lower()}_{dtype}_{k}", op, [x], [reference(fn, x)])
            specials = np.array(SPECIALS, dtype=np_dtype(dtype))
            write_case(root, f"{op.lower()}_{dtype}_special", op, [specials], [reference(fn, specials)])
    for op in ["Exp", "Erf"]:
        fn, (low, high) = FLOAT_OPS[op]
        x = sample(LARGE, "float32", low, high)
        write_case(root, f"{op.lower()}_float32_large", op, [x], [reference(fn, x)])

    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, 1000.0, -7.0], dtype=np.float32)
    for dtype in FLOATS:
        x = halves.astype(np_dtype(dtype))
        write_case(root, f"round_{dtype}_halves_to_even", "Round", [x], [reference(np.round, x)])
        away = FLOAT_OPS["RoundHalfAway"][0]
        write_case(root, f"roundhalfaway_{dtype}_halves", "RoundHalfAway", [x], [reference(away, x)])
    tiny = np.array([1e-10, -1e-10, 1e-30, 3e-8], dtype=np.float32)
    for op, fn in (("Expm1", np.expm1), ("Log1p", np.log1p)):
        write_case(root, f"{op.lower()}_float32_tiny", op, [tiny], [reference(fn, tiny)])


def write_sign_magnitude(root):
    ops = {"Abs": (np.abs, FLOATS + INTS), "Neg": (np.negative, FLOATS + SIGNED_INTS),
           "Sign": (np.sign, FLOATS + INTS)}
    for op, (fn, dtypes) in ops.items():
        for dtype in dtypes:
            for k, shape in enumerate(shapes_for(dtype)):
                x = sample(shape, dtype, -100, 100)
                write_case(root, f"{op.lower()}_{dtype}_{k}", op, [x], [reference(fn, x)])
            dt = np_dtype(dtype)
            if dtype in FLOATS:
                edges = np.array(SPECIALS + [-3.5, 2.0], dtype=dt)
            else:
                # The most negative integer has no positive counterpart: it wraps to itself, as in numpy.
                info = np.iinfo(dt)
                edges = np.array([info.min, info.min + 1, info.max, 0, 1], dtype=dt)
            write_case(root, f"{op.lower()}_{dtype}_edges", op, [edges], [reference(fn, edges)])
    x = sample(LARGE, "int32", -1000, 1000)
    write_case(root, "abs_int32_large", "Abs", [x], [np.abs(x)])


def write_logic_and_tests(root):
    for k, shape in enumerate(SHAPES):
        x = sample(shape, "bool")
        write_case(root, f"not_bool_{k}", "Not", [x], [np.logical_not(x)])

    for dtype in FLOATS:
        dt = np_dtype(dtype)
        # The largest finite values must not count as infinite.
        largest = float(ml_dtypes.finfo(dt).max)
        x = np.array(SPECIALS + [1.0, largest, -largest], dtype=np.float64).astype(dt)
        write_case(root, f"isnan_{dtype}", "IsNaN", [x], [np.isnan(x.astype(np.float64))])
        wide = x.astype(np.float64)
        for neg in (0, 1):
            for pos in (0, 1):
                want = (np.isposinf(wide) & bool(pos)) | (np.isneginf(wide) & bool(neg))
                write_case(root, f"isinf_{dtype}_neg{neg}_pos{pos}", "IsInf", [x], [want],
                           attrs={"detect_negative": neg, "detect_positive": pos})
        empty = np.zeros((0, 4), dtype=dt)
        write_case(root, f"isnan_{dtype}_empty", "IsNaN", [empty], [np.zeros((0, 4), dtype=bool)])
        write_case(root, f"isinf_{dtype}_empty", "IsInf", [empty], [np.zeros((0, 4), dtype=bool)])


def write(root):
    write_float_ops(root)
    write_sign_magnitude(root)
    write_logic_and_tests(root)
