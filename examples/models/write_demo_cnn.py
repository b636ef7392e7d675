"""Writes the demo's model: a small residual CNN for 3x64x64 images as PyTorch exports one
(Conv + BatchNormalization + Relu blocks, a residual Add, MaxPool, GlobalAveragePool, Flatten,
Gemm, opset 17, free batch), with random weights and running statistics from a fixed seed.

usage: write_demo_cnn.py OUT.onnx
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(2026)


def conv_bn_relu(nodes, inits, x, name, c_in, c_out, stride=1, relu=True):
    w = (RNG.standard_normal((c_out, c_in, 3, 3)) * np.sqrt(2.0 / (9 * c_in))).astype(np.float32)
    inits.append(numpy_helper.from_array(w, f"{name}.weight"))
    for param, value in [("scale", 1 + 0.1 * RNG.standard_normal(c_out)), ("bias", 0.1 * RNG.standard_normal(c_out)),
                         ("mean", 0.1 * RNG.standard_normal(c_out)), ("var", 0.5 + RNG.random(c_out))]:
        inits.append(numpy_helper.from_array(value.astype(np.float32), f"{name}.bn.{param}"))
    nodes.append(helper.make_node("Conv", [x, f"{name}.weight"], [f"{name}.conv"], pads=[1, 1, 1, 1],
                                  strides=[stride, stride]))
    nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv"] + [f"{name}.bn.{p}" for p in
                                  ("scale", "bias", "mean", "var")], [f"{name}.bn"]))
    if not relu:
        return f"{name}.bn"
    nodes.append(helper.make_node("Relu", [f"{name}.bn"], [f"{name}.relu"]))
    return f"{name}.relu"


def main() -> int:
    nodes, inits = [], []
    x = conv_bn_relu(nodes, inits, "data", "stem", 3, 32, stride=2)
    for stage, channels in enumerate([32, 64]):
        if stage:
            x = conv_bn_relu(nodes, inits, x, f"down{stage}", channels // 2, channels, stride=2)
        h = conv_bn_relu(nodes, inits, x, f"block{stage}.a", channels, channels)
        h = conv_bn_relu(nodes, inits, h, f"block{stage}.b", channels, channels, relu=False)
        nodes.append(helper.make_node("Add", [h, x], [f"block{stage}.sum"]))
        nodes.append(helper.make_node("Relu", [f"block{stage}.sum"], [f"block{stage}.out"]))
        x = f"block{stage}.out"
    nodes.append(helper.make_node("MaxPool", [x], ["pool"], kernel_shape=[2, 2], strides=[2, 2]))
    nodes.append(helper.make_node("GlobalAveragePool", ["pool"], ["gap"]))
    nodes.append(helper.make_node("Flatten", ["gap"], ["features"]))
    inits.append(numpy_helper.from_array((0.1 * RNG.standard_normal((10, 64))).astype(np.float32), "fc.weight"))
    inits.append(numpy_helper.from_array(np.zeros(10, np.float32), "fc.bias"))
    nodes.append(helper.make_node("Gemm", ["features", "fc.weight", "fc.bias"], ["logits"], transB=1))
    graph = helper.make_graph(nodes, "demo_cnn",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, ["N", 3, 64, 64])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln-demo")
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, sys.argv[1])
    print(f"wrote {sys.argv[1]}: {len(nodes)} nodes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
