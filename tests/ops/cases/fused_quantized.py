"""numpy cases for the int8 ops that fuse_quantized_ops makes (FusedQLinearConv, FusedQLinearMatMul,
FusedDynamicQLinearMatMul, FusedQLinearAveragePool): each the QDQ graph it stands for, computed step by step
in numpy with the references of quantize.py, conv.py and pool.py: dequantize, the float op, the residual or bias, the
activation, and the requantization (rounding half to even, saturating). Kiln's reference computes
the float part in float32 and numpy in float64, so an 8-bit output may differ by one step."""

import importlib.util
import os

import numpy as np
from casefile import write_case


def _load(name):
    spec = importlib.util.spec_from_file_location(f"{name}_cases", os.path.join(os.path.dirname(__file__), f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


conv_cases = _load("conv")
pool_cases = _load("pool")
quantize_cases = _load("quantize")
RNG = np.random.default_rng(20261202)


def q8(shape, qtype):
    info = np.iinfo(qtype)
    return RNG.integers(info.min, info.max + 1, size=shape).astype(qtype)


def dq(x, scale, zero_point=None, axis=1):
    return quantize_cases.dequantize_ref(x, np.asarray(scale, np.float32), zero_point, axis=axis).astype(np.float64)


def requantize(y, scale, zero_point, qtype):
    return quantize_cases.saturate(y / np.float64(scale), zero_point, qtype)


ACTIVATIONS = {"": lambda v: v, "Relu": lambda v: np.maximum(v, 0), "Clip": lambda v: np.clip(v, 0, 6)}
PARAMS = {"": [], "Relu": [], "Clip": [0.0, 6.0]}


def write_conv(root):
    for act in ACTIVATIONS:
        for xtype, x_zero in [(np.uint8, 0), (np.uint8, 3), (np.int8, 0)]:
            for residual in [False, True]:
                x = q8((1, 4, 6, 5), xtype)
                x_scale, w = np.float32(0.02), q8((6, 4, 3, 3), np.int8)
                w_scale = RNG.uniform(0.002, 0.01, size=6).astype(np.float32)
                b = RNG.uniform(-0.5, 0.5, size=6).astype(np.float32)
                x_zp = np.array(x_zero, xtype) if x_zero else None
                y = conv_cases.conv_ref(dq(x, x_scale, x_zp), dq(w, w_scale, axis=0), b, pads=[1, 1, 1, 1])
                z = z_scale = None
                if residual:
                    z, z_scale = q8(y.shape, np.int8), np.float32(0.03)
                    y = y + dq(z, z_scale)
                y = ACTIVATIONS[act](y)
                y_scale, y_zp = np.float32(np.abs(y).max() / 100), np.array(0, np.uint8)
                attrs = {"pads": [1, 1, 1, 1], "activation": act, "activation_params": PARAMS[act]}
                name = f"fused_qlinear_conv_{act or 'none'}_{np.dtype(xtype).name}_zp{x_zero}_{'z' if residual else 'noz'}"
                write_case(root, name, "FusedQLinearConv",
                           [x, x_scale, x_zp, w, w_scale, None, y_scale, y_zp, b, z, z_scale, None],
                           [requantize(y, y_scale, 0, np.uint8)], attrs=attrs, rtol=0, atol=1)
    # ONNX Runtime's residual: the convolution requantized (mid_scale, mid_zero_point) before the
    # residual Add and the Relu.
    x, w = q8((1, 4, 5, 5), np.uint8), q8((6, 4, 3, 3), np.int8)
    w_scale = RNG.uniform(0.002, 0.01, size=6).astype(np.float32)
    v = conv_cases.conv_ref(dq(x, 0.02), dq(w, w_scale, axis=0), None, pads=[1, 1, 1, 1])
    mid_scale, mid_zp = np.float32(np.abs(v).max() / 60), np.array(100, np.uint8)
    v = dq(requantize(v, mid_scale, mid_zp, np.uint8), mid_scale, mid_zp)
    z = q8(v.shape, np.int8)
    y = np.maximum(v + dq(z, 0.03), 0)
    y_scale = np.float32(np.abs(y).max() / 100)
    write_case(root, "fused_qlinear_conv_requantized_residual", "FusedQLinearConv",
               [x, np.float32(0.02), None, w, w_scale, None, y_scale, np.array(0, np.uint8), None, z, np.float32(0.03),
                None, mid_scale, mid_zp],
               [requantize(y, y_scale, 0, np.uint8)], attrs={"pads": [1, 1, 1, 1], "activation": "Relu",
                                                             "activation_params": []}, rtol=0, atol=1)
    # YOLOv5's convolution and bottleneck: SiLU, then (residual_after_activation) the residual; int8
    # output, odd sizes.
    for residual_after in [0, 1]:
        x, w = q8((1, 5, 7, 9), np.int8), q8((6, 5, 3, 3), np.int8)
        w_scale = RNG.uniform(0.002, 0.01, size=6).astype(np.float32)
        b = RNG.uniform(-0.5, 0.5, size=6).astype(np.float32)
        y = conv_cases.conv_ref(dq(x, 0.02), dq(w, w_scale, axis=0), b, pads=[1, 1, 1, 1])
        z = None
        if residual_after:
            z = q8(y.shape, np.int8)
            y = y / (1 + np.exp(-y)) + dq(z, 0.03)
        else:
            y = y / (1 + np.exp(-y))
        y_scale = np.float32(np.abs(y).max() / 100)
        write_case(root, f"fused_qlinear_conv_silu{'_then_residual' if residual_after else ''}", "FusedQLinearConv",
                   [x, np.float32(0.02), None, w, w_scale, None, y_scale, np.array(0, np.int8), b, z,
                    np.float32(0.03) if residual_after else None],
                   [requantize(y, y_scale, 0, np.int8)],
                   attrs={"pads": [1, 1, 1, 1], "activation": "SiLU", "activation_params": [],
                          "residual_after_activation": residual_after}, rtol=0, atol=1)
    # Float output (no y_scale), grouped and strided, per-tensor weight scale.
    x, w = q8((2, 4, 7, 7), np.uint8), q8((6, 2, 3, 3), np.int8)
    y = conv_cases.conv_ref(dq(x, 0.05), dq(w, 0.004, axis=0), None, strides=[2, 2], group=2)
    write_case(root, "fused_qlinear_conv_float_output_grouped", "FusedQLinearConv",
               [x, np.float32(0.05), None, w, np.float32(0.004)], [y.astype(np.float32)],
               attrs={"strides": [2, 2], "group": 2}, rtol=1e-5, atol=1e-5)


def write_matmul(root):
    for act in ["", "Relu"]:
        for a_type, a_zero, y_type in [(np.uint8, 128, np.uint8), (np.int8, 0, np.int8)]:
            a = q8((2, 3, 16), a_type)
            b = q8((16, 5), np.int8)
            b_scale = RNG.uniform(0.002, 0.01, size=5).astype(np.float32)
            bias = RNG.uniform(-0.5, 0.5, size=5).astype(np.float32)
            a_zp = np.array(a_zero, a_type)
            y = ACTIVATIONS[act](dq(a, 0.02, a_zp) @ dq(b, b_scale, axis=1) + bias)
            y_scale = np.float32(np.abs(y).max() / 100 + 1e-6)
            y_zp = np.array(10 if y_type == np.uint8 else -5, y_type)
            name = f"fused_qlinear_matmul_{act or 'none'}_{np.dtype(a_type).name}"
            write_case(root, name, "FusedQLinearMatMul",
                       [a, np.float32(0.02), a_zp, b, b_scale, None, y_scale, y_zp, bias],
                       [requantize(y, y_scale, y_zp, y_type)],
                       attrs={"activation": act, "activation_params": []}, rtol=0, atol=1)
    a, b = q8((4, 8), np.uint8), q8((8, 3), np.int8)
    write_case(root, "fused_qlinear_matmul_float_output", "FusedQLinearMatMul",
               [a, np.float32(0.1), None, b, np.float32(0.01)], [(dq(a, 0.1) @ dq(b, 0.01, axis=1)).astype(np.float32)],
               rtol=1e-5, atol=1e-5)


def dynamic_quantize(x):
    """DynamicQuantizeLinear in float32, as quantize.py's cases compute it."""
    lo, hi = np.float32(min(0.0, x.min())), np.float32(max(0.0, x.max()))
    scale = np.float32(1) if lo == hi else np.float32(np.float32(hi - lo) / np.float32(255))
    zp = np.rint(np.clip(np.float32(0) - np.float32(lo / scale), 0, 255)).astype(np.uint8)
    return quantize_cases.saturate((x / scale).astype(np.float32), zp, np.uint8), scale, zp


def write_dynamic_matmul(root):
    for act in ["", "Relu"]:
        for shape in [(5, 12), (2, 3, 12)]:
            a = RNG.uniform(-3, 2, size=shape).astype(np.float32)
            b = q8((12, 4), np.int8)
            b_scale = RNG.uniform(0.002, 0.01, size=4).astype(np.float32)
            bias = RNG.uniform(-0.5, 0.5, size=4).astype(np.float32)
            q, scale, zp = dynamic_quantize(a)
            y = ACTIVATIONS[act](dq(q, scale, zp) @ dq(b, b_scale, axis=1) + bias)
            name = f"fused_dynamic_qlinear_matmul_{act or 'none'}_rank{len(shape)}"
            write_case(root, name, "FusedDynamicQLinearMatMul", [a, b, b_scale, None, bias], [y.astype(np.float32)],
                       attrs={"activation": act, "activation_params": []}, rtol=1e-5, atol=1e-5)


def write_average_pool(root):
    """Average pooling of dequantized values, requantized: u8 and s8, zero points, padding counted or not,
    ceil_mode, the global window, another output type."""
    cases = [
        ("u8_pads", np.uint8, 0, np.uint8, 7, 0.031, (2, 5, 9, 7),
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
        ("s8_include_pad", np.int8, -4, np.int8, 3, 0.027, (1, 3, 6, 8),
         {"kernel_shape": [3, 2], "pads": [1, 0, 1, 1], "count_include_pad": 1}),
        ("u8_ceil", np.uint8, 128, np.uint8, 120, 0.0173, (1, 4, 7, 7),
         {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),
        ("global_to_s8", np.uint8, 0, np.int8, -10, 0.012, (2, 6, 5, 3), {"kernel_shape": [5, 3]}),
    ]
    for name, xtype, x_zero, ytype, y_zero, y_scale, shape, attrs in cases:
        x = q8(shape, xtype)
        x_zp, y_zp = np.array(x_zero, xtype), np.array(y_zero, ytype)
        pool_attrs = {k: v for k, v in attrs.items() if k != "count_include_pad"}
        y, _ = pool_cases.pool_ref(dq(x, 0.02, x_zp), "avg", count_include_pad=attrs.get("count_include_pad", 0),
                                   **pool_attrs)
        write_case(root, f"fused_qlinear_average_pool_{name}", "FusedQLinearAveragePool",
                   [x, np.float32(0.02), x_zp, np.float32(y_scale), y_zp], [requantize(y, y_scale, y_zp, ytype)],
                   attrs=attrs, rtol=0, atol=1)


def write(root):
    write_conv(root)
    write_average_pool(root)
    write_matmul(root)
    write_dynamic_matmul(root)
