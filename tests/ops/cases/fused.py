"""numpy cases for the fused ops (FusedConv, FusedGemm, FusedMatMul): the base op computed by the
direct references of conv.py, then FusedMatMul's alpha, the residual or bias (FusedMatMul's broadcast
to the output: an attention mask, a residual), then the activation in numpy."""

import importlib.util
import math
import os

import numpy as np

_spec = importlib.util.spec_from_file_location("conv_cases", os.path.join(os.path.dirname(__file__), "conv.py"))
conv_cases = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv_cases)

_erf = np.vectorize(math.erf)

# name -> (params, numpy function of float64 x)
ACTIVATIONS = {
    "": ([], lambda x: x),
    "Relu": ([], lambda x: np.maximum(x, 0)),
    "LeakyRelu": ([0.1], lambda x: np.where(x >= 0, x, 0.1 * x)),
    "Elu": ([0.7], lambda x: np.where(x >= 0, x, 0.7 * np.expm1(x))),
    "Sigmoid": ([], lambda x: 1 / (1 + np.exp(-x))),
    "HardSigmoid": ([0.2, 0.5], lambda x: np.clip(0.2 * x + 0.5, 0, 1)),
    "Tanh": ([], np.tanh),
    "Clip": ([0.0, 6.0], lambda x: np.clip(x, 0, 6)),
    "HardSwish": ([], lambda x: x * np.clip(x / 6 + 0.5, 0, 1)),
    "SiLU": ([], lambda x: x / (1 + np.exp(-x))),
    "Gelu": ([], lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2)))),
    "GeluTanh": ([], lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))),
}


def act_attrs(name):
    params, _ = ACTIVATIONS[name]
    return {"activation": name, "activation_params": [float(p) for p in params]}


def write(root):
    sample, case, f64 = conv_cases.sample, conv_cases.case, conv_cases.f64
    for name, (_, fn) in ACTIVATIONS.items():
        # Conv with bias, a residual, each activation; 3x scale so the activations' corners show.
        x, w, b = sample((2, 3, 6, 5), "float32", -3, 3), sample((4, 3, 3, 3), "float32"), sample((4,), "float32")
        attrs = {"pads": [1, 1, 1, 1], **act_attrs(name)}
        y = conv_cases.conv_ref(x, w, b, pads=[1, 1, 1, 1])
        z = sample(y.shape, "float32", -2, 2)
        case(root, f"fused_conv_residual_{name or 'none'}_float32", "FusedConv", [x, w, b, z], fn(y + f64(z)),
             "float32", attrs)
        # Gemm and MatMul with each activation.
        a, bm, c = sample((5, 7), "float32", -3, 3), sample((4, 7), "float32"), sample((4,), "float32")
        case(root, f"fused_gemm_{name or 'none'}_float32", "FusedGemm", [a, bm, c],
             fn(f64(a) @ f64(bm).T + f64(c)), "float32", {"transB": 1, **act_attrs(name)})
        a3, b3, bias = sample((2, 3, 7), "float32", -3, 3), sample((7, 6), "float32"), sample((6,), "float32")
        case(root, f"fused_matmul_bias_{name or 'none'}_float32", "FusedMatMul", [a3, b3, bias],
             fn(f64(a3) @ f64(b3) + f64(bias)), "float32", act_attrs(name))
    # FusedMatMul with alpha and an addend broadcast to the output: attention scores scaled and masked
    # (the mask over heads and query rows), and a residual of the output's shape.
    q, k = sample((2, 3, 5, 4), "float32", -3, 3), sample((2, 3, 4, 5), "float32", -3, 3)
    mask = sample((2, 1, 1, 5), "float32", -4, 0)
    case(root, "fused_matmul_scaled_mask_float32", "FusedMatMul", [q, k, mask], 0.5 * (f64(q) @ f64(k)) + f64(mask),
         "float32", {"alpha": 0.5, **act_attrs("")})
    h, wo = sample((2, 5, 6), "float32", -3, 3), sample((6, 4), "float32")
    residual = sample((2, 5, 4), "float32", -2, 2)
    case(root, "fused_matmul_residual_relu_float32", "FusedMatMul", [h, wo, residual],
         np.maximum(f64(h) @ f64(wo) + f64(residual), 0), "float32", act_attrs("Relu"))
    # Other dtypes, grouped/strided convs, no extra input.
    for dtype in ["float64", "float16", "bfloat16"]:
        x, w = sample((1, 4, 7, 7), dtype, -2, 2), sample((6, 2, 3, 3), dtype)
        attrs = {"group": 2, "strides": [2, 2], **act_attrs("Relu")}
        case(root, f"fused_conv_group_strided_relu_{dtype}", "FusedConv", [x, w],
             np.maximum(conv_cases.conv_ref(x, w, None, strides=[2, 2], group=2), 0), dtype, attrs)
        a, bm = sample((3, 5), dtype), sample((5, 4), dtype)
        case(root, f"fused_matmul_silu_{dtype}", "FusedMatMul", [a, bm],
             ACTIVATIONS["SiLU"][1](f64(a) @ f64(bm)), dtype, act_attrs("SiLU"))
