"""numpy cases for GroupNormalization and RMSNormalization: every float dtype, stash_type, group
counts from one (layer-norm-like) to one per channel (instance-norm-like), rank 2 to 5, every axis
(negative too), Scale broadcasting to X in one direction (per row, too), a Scale dtype that differs
from X's, empty tensors.

Expected values follow the ONNX function bodies in float64: statistics over the normalized axes,
the normalized values cast back to X's dtype, then scaled (and shifted) and cast to the output's.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261215)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
# The default stash_type computes the statistics in float32, whatever X's dtype.
RTOL = {"float32": 1e-5, "float64": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}
ATOL = {"float32": 1e-5, "float64": 1e-5, "float16": 2e-3, "bfloat16": 2e-2}


def np_dtype(name):
    return np.dtype(ml_dtypes.bfloat16) if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, low=-3.0, high=3.0):
    return RNG.uniform(low, high, size=shape).astype(np_dtype(dtype))


def group_norm(x, scale, bias, groups, epsilon=1e-5):
    n, c = x.shape[:2]
    xd = x.astype(np.float64).reshape(n, groups, -1)
    mean = xd.mean(axis=2, keepdims=True)
    var = ((xd - mean) ** 2).mean(axis=2, keepdims=True)
    normalized = ((xd - mean) / np.sqrt(var + epsilon)).reshape(x.shape).astype(x.dtype).astype(np.float64)
    per_channel = (1, c) + (1,) * (x.ndim - 2)
    y = normalized * scale.astype(np.float64).reshape(per_channel) + bias.astype(np.float64).reshape(per_channel)
    return y.astype(x.dtype)


def rms_norm(x, scale, axis=-1, epsilon=1e-5):
    axis = axis % x.ndim
    xd = x.astype(np.float64)
    mean_square = (xd * xd).mean(axis=tuple(range(axis, x.ndim)), keepdims=True)
    normalized = (xd / np.sqrt(mean_square + epsilon)).astype(x.dtype).astype(np.float64)
    return (normalized * scale.astype(np.float64)).astype(scale.dtype)


def write_group(root):
    # (shape of X, num_groups)
    shapes = [((2, 6, 3, 4), 3), ((3, 4), 2), ((2, 4, 5), 1), ((2, 4, 3), 4), ((1, 4, 2, 3, 2), 2), ((2, 5, 7), 5)]
    for dtype in FLOATS:
        for k, (shape, groups) in enumerate(shapes):
            x = sample(shape, dtype) + np.asarray(2.0, dtype=np_dtype(dtype))  # a mean far from 0
            scale, bias = sample(shape[1:2], dtype), sample(shape[1:2], dtype)
            write_case(root, f"group_norm_{dtype}_{k}", "GroupNormalization", [x, scale, bias],
                       [group_norm(x, scale, bias, groups)], attrs={"num_groups": groups},
                       rtol=RTOL[dtype], atol=ATOL[dtype])
    x, scale, bias = sample((2, 6, 5), "float32"), sample((6,), "float32"), sample((6,), "float32")
    write_case(root, "group_norm_epsilon", "GroupNormalization", [x, scale, bias],
               [group_norm(x, scale, bias, 2, epsilon=0.5)], attrs={"num_groups": 2, "epsilon": 0.5})
    x, scale, bias = sample((2, 4, 9), "float64"), sample((4,), "float64"), sample((4,), "float64")
    write_case(root, "group_norm_stash_double", "GroupNormalization", [x, scale, bias],
               [group_norm(x, scale, bias, 2)], attrs={"num_groups": 2, "stash_type": 11}, rtol=1e-12, atol=1e-12)
    # A constant group has zero variance: the output is the bias.
    x = np.full((1, 4, 3), 7.0, dtype=np.float32)
    scale, bias = sample((4,), "float32"), sample((4,), "float32")
    write_case(root, "group_norm_constant_group", "GroupNormalization", [x, scale, bias],
               [np.broadcast_to(bias.reshape(1, 4, 1), x.shape).copy()], attrs={"num_groups": 2})
    for k, shape in enumerate([(0, 4, 3), (2, 4, 0), (2, 0, 3)]):
        x = np.zeros(shape, dtype=np.float32)
        scale, bias = sample(shape[1:2], "float32"), sample(shape[1:2], "float32")
        write_case(root, f"group_norm_empty_{k}", "GroupNormalization", [x, scale, bias], [x.copy()],
                   attrs={"num_groups": 2})


def write_rms(root):
    x = sample((2, 3, 4, 5), "float32")
    for axis in range(-4, 4):
        scale = sample(x.shape[axis:], "float32")
        write_case(root, f"rms_norm_axis_{axis}".replace("-", "m"), "RMSNormalization", [x, scale],
                   [rms_norm(x, scale, axis)], attrs={"axis": axis})
    for dtype in FLOATS:
        x, scale = sample((3, 7), dtype), sample((7,), dtype)
        write_case(root, f"rms_norm_{dtype}", "RMSNormalization", [x, scale], [rms_norm(x, scale)],
                   rtol=RTOL[dtype], atol=ATOL[dtype])
    # Scale broadcasting: over the normalized axes, and in one direction to all of X (per row too).
    x = sample((2, 3, 4), "float32")
    for k, (scale_shape, axis) in enumerate([((4,), 1), ((1, 4), 1), ((3, 1), 1), ((1,), -1), ((2, 1, 4), -1),
                                             ((2, 3, 1), -1), ((3, 4), 0), ((2, 3, 4), 2)]):
        scale = sample(scale_shape, "float32")
        write_case(root, f"rms_norm_broadcast_{k}", "RMSNormalization", [x, scale], [rms_norm(x, scale, axis)],
                   attrs={"axis": axis})
    # Y takes Scale's dtype.
    x, scale = sample((4, 6), "float32"), sample((6,), "float16")
    write_case(root, "rms_norm_float16_scale", "RMSNormalization", [x, scale], [rms_norm(x, scale)], rtol=2e-3,
               atol=2e-3)
    x, scale = sample((2, 5), "float64"), sample((5,), "float64")
    write_case(root, "rms_norm_stash_double", "RMSNormalization", [x, scale],
               [rms_norm(x, scale, epsilon=1e-3)], attrs={"stash_type": 11, "epsilon": 1e-3}, rtol=1e-12,
               atol=1e-12)
    x, scale = np.zeros((3, 4), dtype=np.float32), sample((4,), "float32")
    write_case(root, "rms_norm_zeros", "RMSNormalization", [x, scale], [np.zeros((3, 4), dtype=np.float32)])
    for k, (shape, axis) in enumerate([((0, 4), -1), ((3, 0), -1), ((3, 0, 2), 2)]):
        x, scale = np.zeros(shape, dtype=np.float32), np.ones(shape[axis:], dtype=np.float32)
        write_case(root, f"rms_norm_empty_{k}", "RMSNormalization", [x, scale], [x.copy()], attrs={"axis": axis})


def write(root):
    write_group(root)
    write_rms(root)
