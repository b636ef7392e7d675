"""numpy cases for the positional-fill family: Trilu, EyeLike, OneHot.

Covers what the ONNX node tests miss: every dtype, batches of matrices, wide and tall matrices,
k past either corner (up to the int64 extremes), k as a one-element 1-D tensor, empty matrices
and batches, EyeLike's dtype attribute for every output dtype, and OneHot with every index,
depth and value dtype, fractional and out-of-range indices, scalar and empty indices, axes at
both ends, and sizes big enough to split across threads.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261208)
BF16 = np.dtype(ml_dtypes.bfloat16)

ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]
# ONNX TensorProto.DataType codes of Kiln's dtypes.
ONNX_CODE = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10,
             "float64": 11, "bfloat16": 16}
# OneHot's indices and depth: ONNX allows neither bfloat16 nor bool there.
ONE_HOT_INDEX = ["float32", "float64", "float16", "int8", "uint8", "int32", "int64"]

INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype):
    dtype = np_dtype(dtype)
    if dtype == np.bool_:
        return RNG.random(shape) > 0.5
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(1, 100, size=shape).astype(dtype)
    return RNG.uniform(0.5, 9.5, size=shape).astype(dtype)


def trilu_ref(x, k, upper):
    # np.triu / np.tril with k clamped: numpy's own index arithmetic overflows at the int64 extremes.
    rows, cols = x.shape[-2:]
    k = int(np.clip(k, -rows - 1, cols + 1))
    return np.triu(x, k) if upper else np.tril(x, k)


def write_trilu(root):
    for dtype in ALL:
        x = sample((2, 3, 4), dtype)
        for upper in [0, 1]:
            k = np.array(-1 if upper else 1, dtype=np.int64)
            write_case(root, f"trilu_{dtype}_upper{upper}", "Trilu", [x, k], [trilu_ref(x, int(k), upper)],
                       {"upper": upper})

    shapes = [(5, 5), (3, 7), (7, 3), (1, 6), (6, 1), (2, 2, 3, 4), (0, 4), (4, 0), (3, 0, 5), (2, 3, 0)]
    for s, shape in enumerate(shapes):
        x = sample(shape, "float32")
        for upper in [0, 1]:
            for k in [0, 2, -2, 8, -8]:
                name = f"trilu_shape{s}_upper{upper}_k{k}".replace("-", "m")
                write_case(root, name, "Trilu", [x, np.array(k, dtype=np.int64)], [trilu_ref(x, k, upper)],
                           {"upper": upper})
            write_case(root, f"trilu_shape{s}_upper{upper}_default_k", "Trilu", [x], [trilu_ref(x, 0, upper)],
                       {"upper": upper})

    # k at the int64 extremes (no overflow in row + k), and as a one-element 1-D tensor.
    x = sample((3, 4), "int32")
    for k in [INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1]:
        for upper in [0, 1]:
            name = f"trilu_extreme_k{'max' if k > 0 else 'min'}{abs(k) % 2}_upper{upper}"
            write_case(root, name, "Trilu", [x, np.array(k, dtype=np.int64)], [trilu_ref(x, k, upper)],
                       {"upper": upper})
    write_case(root, "trilu_k_1d", "Trilu", [x, np.array([1], dtype=np.int64)], [trilu_ref(x, 1, 1)])

    # Enough rows to split across threads.
    x = sample((6, 300, 257), "float32")
    for upper in [0, 1]:
        write_case(root, f"trilu_big_upper{upper}", "Trilu", [x, np.array(-5, dtype=np.int64)],
                   [trilu_ref(x, -5, upper)], {"upper": upper})


def write_eye_like(root):
    for dtype in ALL:
        x = sample((3, 4), dtype)
        write_case(root, f"eyelike_{dtype}", "EyeLike", [x], [np.eye(3, 4, dtype=np_dtype(dtype))])
        write_case(root, f"eyelike_to_{dtype}", "EyeLike", [sample((4, 3), "int32")],
                   [np.eye(4, 3, k=-1, dtype=np_dtype(dtype))], {"dtype": ONNX_CODE[dtype], "k": -1})
    for s, (rows, cols) in enumerate([(5, 5), (2, 6), (6, 2), (1, 1), (0, 3), (3, 0), (0, 0)]):
        for k in [0, 1, -1, 3, -3, 6, -6]:
            write_case(root, f"eyelike_shape{s}_k{k}".replace("-", "m"), "EyeLike", [sample((rows, cols), "float32")],
                       [np.eye(rows, cols, k=k, dtype=np.float32)], {"k": k})
    for k in [INT64_MAX, INT64_MIN]:
        write_case(root, f"eyelike_extreme_k{'max' if k > 0 else 'min'}", "EyeLike", [sample((3, 3), "float32")],
                   [np.zeros((3, 3), np.float32)], {"k": int(k)})


def one_hot_ref(indices, depth, values, axis):
    # ONNX casts floating indices and depth to int64 (truncation), then wraps [-depth, 0).
    depth = int(np.trunc(float(np.asarray(depth).reshape(-1)[0])))
    idx = np.trunc(indices.astype(np.float64))
    idx = np.where(idx < 0, idx + depth, idx)
    axis = axis + indices.ndim + 1 if axis < 0 else axis
    match = np.expand_dims(idx, axis) == np.arange(depth).reshape((-1,) + (1,) * (indices.ndim - axis))
    return np.where(match, values[1], values[0]).astype(values.dtype)


def write_one_hot(root):
    values = np.array([2, 7], dtype=np.int32)
    for dtype in ONE_HOT_INDEX:
        low = 0 if dtype == "uint8" else -6
        indices = np.arange(low, low + 12).reshape(3, 4).astype(np_dtype(dtype))
        for depth_dtype in ONE_HOT_INDEX:
            depth = np.array(5, dtype=np_dtype(depth_dtype))
            write_case(root, f"onehot_idx_{dtype}_depth_{depth_dtype}", "OneHot", [indices, depth, values],
                       [one_hot_ref(indices, depth, values, -1)])
    indices = np.array([[0, 3, -1], [2, 9, -4]], dtype=np.int64)
    for dtype in ALL:
        vals = np.array([0, 1], dtype=np_dtype(dtype)) if dtype == "bool" else np.array([3, 5], np_dtype(dtype))
        for axis in [0, 1, 2, -1, -2, -3]:
            name = f"onehot_values_{dtype}_axis{axis}".replace("-", "m")
            write_case(root, name, "OneHot", [indices, np.array(4, dtype=np.int64), vals],
                       [one_hot_ref(indices, 4, vals, axis)], {"axis": axis})

    vals = np.array([-1.5, 2.5], dtype=np.float32)
    # Fractional indices truncate toward zero (-1.7 -> -1 -> depth - 1); NaN and huge ones match nothing.
    indices = np.array([0.9, -1.7, 2.2, -4.5, 4.0, -5.2, np.nan, 1e30, -np.inf], dtype=np.float32)
    write_case(root, "onehot_fractional_indices", "OneHot", [indices, np.array(5, np.int64), vals],
               [one_hot_ref(np.nan_to_num(indices, nan=1e9), 5, vals, -1)])
    # A fractional depth truncates; depth may be a one-element 1-D tensor.
    indices = np.array([0, 3, 4, -4], dtype=np.int32)
    write_case(root, "onehot_fractional_depth", "OneHot", [indices, np.array([4.8], np.float32), vals],
               [one_hot_ref(indices, 4.8, vals, 0)], {"axis": 0})
    # Indices at the type's ends against a depth beyond the type's range.
    indices = np.array([-128, -1, 0, 127], dtype=np.int8)
    write_case(root, "onehot_int8_wide_depth", "OneHot", [indices, np.array(200, np.int64), vals],
               [one_hot_ref(indices, 200, vals, -1)])
    indices = np.array([0, 255, 128], dtype=np.uint8)
    write_case(root, "onehot_uint8_wide_depth", "OneHot", [indices, np.array(300, np.int32), vals],
               [one_hot_ref(indices, 300, vals, -1)])
    # Scalar and empty indices; depth 0 and 1.
    write_case(root, "onehot_scalar_index", "OneHot", [np.array(2, np.int64), np.array(4, np.int64), vals],
               [one_hot_ref(np.array(2, np.int64), 4, vals, 0)], {"axis": 0})
    for k, shape in enumerate([(0,), (2, 0), (0, 3)]):
        indices = np.zeros(shape, np.int64)
        write_case(root, f"onehot_empty{k}", "OneHot", [indices, np.array(3, np.int64), vals],
                   [one_hot_ref(indices, 3, vals, 1)], {"axis": 1})
    indices = np.array([[0, -1], [1, 2]], np.int64)
    for depth in [0, 1]:
        write_case(root, f"onehot_depth{depth}", "OneHot", [indices, np.array(depth, np.int64), vals],
                   [one_hot_ref(indices, depth, vals, 1)], {"axis": 1})
    # Enough rows to split across threads.
    indices = RNG.integers(-12, 12, size=(300, 70)).astype(np.int64)
    write_case(root, "onehot_big_axis1", "OneHot", [indices, np.array(10, np.int64), vals],
               [one_hot_ref(indices, 10, vals, 1)], {"axis": 1})
    write_case(root, "onehot_big_last", "OneHot", [indices, np.array(10, np.int64), vals],
               [one_hot_ref(indices, 10, vals, -1)])


def write(root):
    write_trilu(root)
    write_eye_like(root)
    write_one_hot(root)
