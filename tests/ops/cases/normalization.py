"""numpy cases for the normalization family (BatchNormalization, InstanceNormalization,
LayerNormalization, LpNormalization, MeanVarianceNormalization), Softmax / LogSoftmax / Hardmax and
Dropout: every float dtype, negative axes, broadcast parameters, optional outputs, empty tensors,
inputs far from zero (stability), and seeded training-mode Dropout (numpy's legacy generator)."""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261205)
BF16 = np.dtype(ml_dtypes.bfloat16)
FLOATS = [np.float32, np.float64, np.float16, BF16]


def sample(shape, dtype=np.float32, low=-3, high=3):
    return RNG.uniform(low, high, size=shape).astype(np.float32).astype(dtype)


def name_of(dtype):
    return np.dtype(dtype).name


def f64(x):
    return np.asarray(x).astype(np.float64)


def batch_norm(x, scale, bias, mean, var, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (f64(x) - f64(mean).reshape(shape)) / np.sqrt(f64(var).reshape(shape) + eps) * \
        f64(scale).reshape(shape) + f64(bias).reshape(shape)


def write_batch_norm(root):
    for dtype in FLOATS:
        for shape in [(4, 3), (2, 3, 5), (2, 3, 2, 2, 3), (0, 3, 4)]:
            x = sample(shape, dtype)
            c = shape[1]
            scale, bias, mean = sample(c, dtype), sample(c, dtype), sample(c, dtype)
            var = sample(c, dtype, 0.5, 2)
            y = batch_norm(x, scale, bias, mean, var, 1e-3).astype(dtype)
            tag = f"{name_of(dtype)}_{len(shape)}d" + ("_empty" if 0 in shape else "")
            write_case(root, f"batchnorm_{tag}", "BatchNormalization", [x, scale, bias, mean, var], [y],
                       attrs={"epsilon": 1e-3}, rtol=1e-4)

    # Parameters of other float dtypes than X (ONNX's T, T1, T2 are independent).
    x = sample((2, 3, 4), np.float16)
    scale, bias = sample(3, np.float32), sample(3, np.float32)
    mean, var = sample(3, np.float64), sample(3, np.float64, 0.5, 2)
    write_case(root, "batchnorm_mixed_dtypes", "BatchNormalization", [x, scale, bias, mean, var],
               [batch_norm(x, scale, bias, mean, var, 1e-5).astype(np.float16)])

    # Training mode: batch statistics (population variance) normalize; the running ones blend.
    for dtype in [np.float32, np.float64]:
        x = sample((3, 2, 4, 5), dtype)
        scale, bias, mean, var = sample(2, dtype), sample(2, dtype), sample(2, dtype), sample(2, dtype, 0.5, 2)
        axes = (0, 2, 3)
        batch_mean, batch_var = f64(x).mean(axis=axes), f64(x).var(axis=axes)
        y = batch_norm(x, scale, bias, batch_mean, batch_var, 1e-5).astype(dtype)
        momentum = 0.7
        running_mean = (f64(mean) * momentum + batch_mean * (1 - momentum)).astype(dtype)
        running_var = (f64(var) * momentum + batch_var * (1 - momentum)).astype(dtype)
        attrs = {"training_mode": 1, "momentum": momentum}
        write_case(root, f"batchnorm_training_{name_of(dtype)}", "BatchNormalization",
                   [x, scale, bias, mean, var], [y, running_mean, running_var], attrs=attrs, num_outputs=3,
                   rtol=1e-4)
        write_case(root, f"batchnorm_training_y_only_{name_of(dtype)}", "BatchNormalization",
                   [x, scale, bias, mean, var], [y], attrs=attrs, num_outputs=1, rtol=1e-4)

    # An empty batch carries no statistics: the running ones pass through.
    x = np.zeros((0, 2, 3), dtype=np.float32)
    scale, bias, mean, var = sample(2), sample(2), sample(2), sample(2, np.float32, 0.5, 2)
    write_case(root, "batchnorm_training_empty_batch", "BatchNormalization", [x, scale, bias, mean, var],
               [x, mean, var], attrs={"training_mode": 1}, num_outputs=3)


def write_instance_norm(root):
    for dtype in FLOATS:
        for shape in [(2, 3, 7), (1, 2, 3, 4), (2, 2, 2, 3, 2)]:
            x = sample(shape, dtype, 50, 60)  # far from zero: the variance must not cancel
            c = shape[1]
            scale, bias = sample(c, dtype), sample(c, dtype)
            axes = tuple(range(2, x.ndim))
            xf = f64(x)
            mean, var = xf.mean(axis=axes, keepdims=True), xf.var(axis=axes, keepdims=True)
            shape_c = (1, c) + (1,) * (x.ndim - 2)
            y = (xf - mean) / np.sqrt(var + 1e-4) * f64(scale).reshape(shape_c) + f64(bias).reshape(shape_c)
            write_case(root, f"instancenorm_{name_of(dtype)}_{len(shape)}d", "InstanceNormalization",
                       [x, scale, bias], [y.astype(dtype)], attrs={"epsilon": 1e-4}, rtol=1e-4, atol=1e-5)


def layer_norm(x, scale, bias, axis, eps):
    axis = axis % x.ndim
    axes = tuple(range(axis, x.ndim))
    xf = f64(x)
    mean = xf.mean(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(xf.var(axis=axes, keepdims=True) + eps)
    y = (xf - mean) * inv_std * f64(scale)
    if bias is not None:
        y = y + f64(bias)
    return y, mean, inv_std


def write_layer_norm(root):
    for dtype in FLOATS:
        x = sample((2, 3, 4), dtype, -2, 6)
        for axis in [-3, -2, -1, 0, 1, 2]:
            norm_shape = x.shape[axis % 3:]
            scale, bias = sample(norm_shape, dtype), sample(norm_shape, dtype)
            y, mean, inv_std = layer_norm(x, scale, bias, axis, 1e-5)
            write_case(root, f"layernorm_{name_of(dtype)}_axis{axis}", "LayerNormalization", [x, scale, bias],
                       [y.astype(dtype), mean.astype(np.float32), inv_std.astype(np.float32)],
                       attrs={"axis": axis}, num_outputs=3, rtol=1e-4, atol=1e-5)

    x = sample((3, 4, 5))
    # Scale and B broadcast to the normalized shape (4, 5); B is optional.
    for label, scale_shape, bias_shape in [("row", (5,), (1, 5)), ("column", (4, 1), None), ("scalar", (), (1,))]:
        scale = sample(scale_shape)
        bias = None if bias_shape is None else sample(bias_shape)
        y, _, _ = layer_norm(x, scale, bias, -2, 1e-5)
        inputs = [x, scale] + ([] if bias is None else [bias])
        write_case(root, f"layernorm_broadcast_{label}", "LayerNormalization", inputs, [y.astype(np.float32)],
                   attrs={"axis": -2}, rtol=1e-4, atol=1e-5)

    x = np.zeros((0, 4), dtype=np.float32)
    write_case(root, "layernorm_empty_rows", "LayerNormalization", [x, sample(4)], [x])


def write_lp_norm(root):
    for dtype in FLOATS:
        x = sample((2, 3, 4), dtype)
        x[1, :, 2] = 0  # a zero vector along axis 1 stays zero
        for p in (1, 2):
            for axis in (-3, -2, -1, 1):
                xf = f64(x)
                norm = (np.abs(xf) ** p).sum(axis=axis, keepdims=True) ** (1 / p)
                y = np.where(norm == 0, 0, xf / np.where(norm == 0, 1, norm))
                write_case(root, f"lpnorm_{name_of(dtype)}_p{p}_axis{axis}", "LpNormalization", [x],
                           [y.astype(dtype)], attrs={"p": p, "axis": axis}, rtol=1e-4)


def write_mvn(root):
    for dtype in FLOATS:
        x = sample((2, 3, 4, 5), dtype, 10, 14)
        for label, axes in [("default", None), ("last", [-1]), ("channel", [1]), ("neg_pair", [-3, -1]),
                            ("all", [0, 1, 2, 3])]:
            reduce = tuple(a % 4 for a in (axes if axes is not None else [0, 2, 3]))
            xf = f64(x)
            mean = xf.mean(axis=reduce, keepdims=True)
            std = np.sqrt(((xf - mean) ** 2).mean(axis=reduce, keepdims=True))
            y = (xf - mean) / (std + 1e-9)
            attrs = {} if axes is None else {"axes": axes}
            write_case(root, f"mvn_{name_of(dtype)}_{label}", "MeanVarianceNormalization", [x], [y.astype(dtype)],
                       attrs=attrs, rtol=1e-4, atol=1e-5)


def softmax(x, axis):
    xf = f64(x)
    e = np.exp(xf - xf.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def log_softmax(x, axis):
    xf = f64(x)
    shifted = xf - xf.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def hardmax(x, axis):
    y = np.zeros(x.shape, dtype=np.float64)
    np.put_along_axis(y, np.expand_dims(np.argmax(x, axis=axis), axis), 1, axis=axis)
    return y


def write_softmax(root):
    ops = {
        "Softmax": softmax,
        "LogSoftmax": log_softmax,
        "Hardmax": hardmax,
    }
    for op, fn in ops.items():
        for dtype in FLOATS:
            x = sample((2, 3, 4, 5), dtype)
            for axis in [-4, -3, -2, -1, 0, 1, 2, 3]:
                write_case(root, f"{op.lower()}_{name_of(dtype)}_axis{axis}", op, [x], [fn(x, axis).astype(dtype)],
                           attrs={"axis": axis}, rtol=1e-4, atol=1e-6)
        # Values that overflow exp unless the maximum is subtracted; an axis of length 1; empty tensors.
        x = np.array([[1000.0, 1001.0, 1002.0], [-1e4, 1e4, 0.0]], dtype=np.float32)
        write_case(root, f"{op.lower()}_large_values", op, [x], [fn(x, -1).astype(np.float32)], rtol=1e-5)
        x = sample((3, 1, 2))
        write_case(root, f"{op.lower()}_unit_axis", op, [x], [fn(x, 1).astype(np.float32)], attrs={"axis": 1})
        for shape in [(0, 4), (3, 0)]:
            x = np.zeros(shape, dtype=np.float32)
            write_case(root, f"{op.lower()}_empty_{shape[0]}x{shape[1]}", op, [x], [x])
    # Ties: the first maximum wins.
    x = np.array([[1, 3, 3, 2], [5, 5, 5, 5]], dtype=np.float32)
    write_case(root, "hardmax_ties", "Hardmax", [x], [hardmax(x, -1).astype(np.float32)])


def write_dropout(root):
    for dtype in FLOATS:
        x = sample((3, 4), dtype)
        ones = np.ones(x.shape, dtype=bool)
        write_case(root, f"dropout_inference_{name_of(dtype)}", "Dropout", [x], [x, ones], num_outputs=2)
        write_case(root, f"dropout_training_false_{name_of(dtype)}", "Dropout",
                   [x, np.array(0.9, dtype=dtype), np.array(False)], [x, ones], num_outputs=2)
    x = np.zeros((2, 0, 3), dtype=np.float32)
    write_case(root, "dropout_empty", "Dropout", [x, np.float32(0.5), np.array(True)],
               [x, np.zeros(x.shape, bool)], attrs={"seed": 1}, num_outputs=2)

    # Training mode reproduces np.random.seed(seed); np.random.uniform(0, 1, shape) >= ratio.
    for dtype, ratio, seed in [(np.float32, 0.3, 7), (np.float64, 0.6, 123456), (np.float16, 0.5, 2),
                               (BF16, 0.75, 0)]:
        x = sample((4, 5, 6), dtype)
        np.random.seed(seed)
        mask = np.random.uniform(0, 1.0, x.shape) >= np.float64(np.float32(ratio))
        y = (f64(x) * mask / (1 - np.float64(np.float32(ratio)))).astype(dtype)
        write_case(root, f"dropout_training_{name_of(dtype)}", "Dropout",
                   [x, np.array(ratio, dtype=np.float32), np.array(True)], [y, mask],
                   attrs={"seed": seed}, num_outputs=2, rtol=1e-5)
    x = sample((3, 3))
    write_case(root, "dropout_training_zero_ratio", "Dropout", [x, np.float32(0.0), np.array(True)],
               [x, np.ones(x.shape, bool)], attrs={"seed": 5}, num_outputs=2)


def write(root):
    write_batch_norm(root)
    write_instance_norm(root)
    write_layer_norm(root)
    write_lp_norm(root)
    write_mvn(root)
    write_softmax(root)
    write_dropout(root)
