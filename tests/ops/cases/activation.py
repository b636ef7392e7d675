"""numpy cases for the activation family: every dtype each op takes, non-default attributes, empty
and 0-d tensors, multi-task sizes, inf/nan inputs, PRelu's slope broadcasting and Clip's optional
bounds (absent, min only, max only, min > max) for integer dtypes as well as floats."""

import math

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261202)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
INTS = ["int8", "uint8", "int32", "int64"]

# Small, 0-d, empty and odd-sized; the shape corners are dtype-independent, so the other dtypes
# get only the first. LARGE is split across several tasks.
SHAPES = [(2, 3, 4), (), (0, 5), (9,)]
LARGE = (70001,)


def shapes_for(dtype):
    return SHAPES if dtype in ("float32", "int32") else SHAPES[:1]

ALL_SPECIALS = [np.inf, -np.inf, np.nan, 0.0, -0.0]
# Where ONNX's own formula turns -inf into inf * 0 = nan (Gelu, Mish, HardSwish) or inf into
# inf / inf (Softsign), those inputs are left out rather than pinned to an arbitrary answer.
NO_NEG_INF = [np.inf, np.nan, 0.0]

# ONNX's Selu defaults, as float32 attributes hold them.
SELU_ALPHA, SELU_GAMMA = 1.6732631921768188, 1.0507010221481323

_erf = np.vectorize(math.erf, otypes=[np.float64])


def softplus(x):
    return np.logaddexp(0, x)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def shrink(x, lambd=0.5, bias=0.0):
    return np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))


# name: (op, reference in float64, attrs, special inputs)
FLOAT_CASES = {
    "sigmoid": ("Sigmoid", lambda x: 1 / (1 + np.exp(-x)), {}, ALL_SPECIALS),
    "tanh": ("Tanh", np.tanh, {}, ALL_SPECIALS),
    "leakyrelu": ("LeakyRelu", lambda x: np.where(x < 0, 0.01 * x, x), {}, ALL_SPECIALS),
    "leakyrelu_alpha": ("LeakyRelu", lambda x: np.where(x < 0, 0.3 * x, x), {"alpha": 0.3}, ALL_SPECIALS),
    "elu": ("Elu", lambda x: np.where(x < 0, np.expm1(x), x), {}, ALL_SPECIALS),
    "elu_alpha": ("Elu", lambda x: np.where(x < 0, 0.7 * np.expm1(x), x), {"alpha": 0.7}, ALL_SPECIALS),
    "selu": ("Selu", lambda x: SELU_GAMMA * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)), {}, ALL_SPECIALS),
    "selu_attrs": ("Selu", lambda x: 1.5 * np.where(x > 0, x, 2.0 * np.expm1(x)),
                   {"alpha": 2.0, "gamma": 1.5}, ALL_SPECIALS),
    "celu": ("Celu", lambda x: np.maximum(0, x) + np.minimum(0, np.expm1(x)), {}, ALL_SPECIALS),
    "celu_negative_alpha": ("Celu", lambda x: np.maximum(0, x) + np.minimum(0, -1.5 * np.expm1(x / -1.5)),
                            {"alpha": -1.5}, ALL_SPECIALS),
    "gelu": ("Gelu", lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), {}, NO_NEG_INF),
    "gelu_tanh": ("Gelu", gelu_tanh, {"approximate": "tanh"}, NO_NEG_INF),
    "softplus": ("Softplus", softplus, {}, ALL_SPECIALS),
    "softsign": ("Softsign", lambda x: x / (1 + np.abs(x)), {}, [np.nan, 0.0, 1e4, -1e4]),
    "mish": ("Mish", lambda x: x * np.tanh(softplus(x)), {}, NO_NEG_INF),
    "hardsigmoid": ("HardSigmoid", lambda x: np.clip(0.2 * x + 0.5, 0, 1), {}, ALL_SPECIALS),
    "hardsigmoid_attrs": ("HardSigmoid", lambda x: np.clip(0.4 * x - 0.1, 0, 1), {"alpha": 0.4, "beta": -0.1},
                          ALL_SPECIALS),
    "hardswish": ("HardSwish", lambda x: x * np.clip(x / 6 + 0.5, 0, 1), {}, NO_NEG_INF),
    "thresholdedrelu": ("ThresholdedRelu", lambda x: np.where(x > 1.0, x, 0), {}, ALL_SPECIALS),
    "thresholdedrelu_alpha": ("ThresholdedRelu", lambda x: np.where(x > -0.5, x, 0), {"alpha": -0.5},
                              ALL_SPECIALS),
    "shrink": ("Shrink", shrink, {}, ALL_SPECIALS),
    "shrink_attrs": ("Shrink", lambda x: shrink(x, 1.5, 0.75), {"lambd": 1.5, "bias": 0.75}, ALL_SPECIALS),
}


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, low=-5.0, high=5.0):
    dt = np_dtype(dtype)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return RNG.integers(max(int(low), info.min), min(int(high), info.max) + 1, size=shape).astype(dt)
    return RNG.uniform(low, high, size=shape).astype(dt)


def reference(fn, x):
    """fn applied in float64, rounded (integers: truncated) back to x's dtype."""
    with np.errstate(all="ignore"):
        return np.asarray(fn(x.astype(np.float64))).astype(x.dtype)


def write_float_activations(root):
    for name, (op, fn, attrs, specials) in FLOAT_CASES.items():
        # ONNX's Shrink has no bfloat16.
        dtypes = ["float32", "float64", "float16"] if op == "Shrink" else FLOATS
        for dtype in dtypes:
            for k, shape in enumerate(shapes_for(dtype)):
                x = sample(shape, dtype)
                write_case(root, f"{name}_{dtype}_{k}", op, [x], [reference(fn, x)], attrs=attrs)
            x = np.array(specials, dtype=np_dtype(dtype))
            write_case(root, f"{name}_{dtype}_special", op, [x], [reference(fn, x)], attrs=attrs)
    for name in ["sigmoid", "gelu", "hardswish"]:
        op, fn, attrs, _ = FLOAT_CASES[name]
        x = sample(LARGE, "float32", -8, 8)
        write_case(root, f"{name}_float32_large", op, [x], [reference(fn, x)], attrs=attrs)


def write_integer_activations(root):
    for dtype in FLOATS + ["int8", "int32", "int64"]:
        for k, shape in enumerate(shapes_for(dtype)):
            x = sample(shape, dtype)
            write_case(root, f"relu_{dtype}_{k}", "Relu", [x], [reference(lambda v: np.maximum(v, 0), x)])
    x = np.array([np.nan, np.inf, -np.inf, -0.0], dtype=np.float32)
    write_case(root, "relu_float32_special", "Relu", [x], [np.maximum(x, 0)])
    x = sample(LARGE, "int32", -100, 100)
    write_case(root, "relu_int32_large", "Relu", [x], [np.maximum(x, 0)])

    for dtype in INTS:
        for k, shape in enumerate(shapes_for(dtype)):
            x = sample(shape, dtype, -9, 9)
            want = reference(lambda v: shrink(v, 1.5, 1.5), x)
            write_case(root, f"shrink_{dtype}_{k}", "Shrink", [x], [want], attrs={"lambd": 1.5, "bias": 1.5})
        x = sample((3, 4), dtype, -9, 9)
        write_case(root, f"shrink_{dtype}_default", "Shrink", [x], [reference(shrink, x)])


# (X shape, slope shape): per-channel, last axis, scalar, same shape, rank-1, empty, middle axis.
PRELU_SHAPES = [
    ((2, 3, 4, 5), (3, 1, 1)),
    ((2, 3, 4, 5), (5,)),
    ((2, 3), ()),
    ((2, 3), (2, 3)),
    ((4,), (1,)),
    ((0, 3), (3,)),
    ((2, 3, 4), (1, 3, 1)),
]


def write_prelu(root):
    for dtype in FLOATS + ["int32", "int64"]:
        for k, (sx, ss) in enumerate(PRELU_SHAPES):
            x, slope = sample(sx, dtype), sample(ss, dtype, -3, 3)
            want = np.where(x < 0, slope.astype(np.float64) * x.astype(np.float64), x).astype(x.dtype)
            write_case(root, f"prelu_{dtype}_{k}", "PRelu", [x, slope], [want])


def clip(x, lo, hi):
    # min then max: every element becomes hi when lo > hi, as ONNX specifies; nan stays nan.
    out = x.astype(np.float64)
    if lo is not None:
        out = np.maximum(out, np.float64(lo))
    if hi is not None:
        out = np.minimum(out, np.float64(hi))
    return out.astype(x.dtype)


def write_clip(root):
    for dtype in FLOATS + INTS:
        dt = np_dtype(dtype)
        low, high = (0, 250) if dtype == "uint8" else (-10, 10)
        x = sample((3, 7), dtype, low, high)
        lo, hi = (40, 200) if dtype == "uint8" else (-3, 4)
        bounds = {
            "both": (lo, hi),
            "min_only": (lo, None),
            "max_only": (None, hi),
            "none": (None, None),
            "min_greater_than_max": (hi, lo),
        }
        for name, (a, b) in bounds.items():
            inputs = [x] + [None if v is None else np.array(v, dtype=dt) for v in (a, b)]
            while inputs[-1] is None:
                inputs.pop()
            write_case(root, f"clip_{dtype}_{name}", "Clip", inputs, [clip(x, a, b)])
        # Bounds given as 1-element vectors, as some exporters write them.
        write_case(root, f"clip_{dtype}_vector_bounds", "Clip",
                   [x, np.array([lo], dtype=dt), np.array([hi], dtype=dt)], [clip(x, lo, hi)])
        empty = np.zeros((2, 0), dtype=dt)
        write_case(root, f"clip_{dtype}_empty", "Clip",
                   [empty, np.array(lo, dtype=dt), np.array(hi, dtype=dt)], [empty])
        if dtype in FLOATS:
            x = np.array(ALL_SPECIALS + [5.0, -5.0], dtype=dt)
            one, minus_one = np.array(1, dtype=dt), np.array(-1, dtype=dt)
            write_case(root, f"clip_{dtype}_special", "Clip", [x, minus_one, one], [clip(x, -1, 1)])
            write_case(root, f"clip_{dtype}_special_unbounded", "Clip", [x], [x])
    info = np.iinfo(np.int64)
    x = np.array([info.min, -1, 0, 1, info.max], dtype=np.int64)
    write_case(root, "clip_int64_extremes_unbounded", "Clip", [x], [x])
    x = sample(LARGE, "int32", -100, 100)
    bounds = [np.array(-20, dtype=np.int32), np.array(30, dtype=np.int32)]
    write_case(root, "clip_int32_large", "Clip", [x] + bounds, [np.clip(x, -20, 30)])


def write(root):
    write_float_activations(root)
    write_integer_activations(root)
    write_prelu(root)
    write_clip(root)
