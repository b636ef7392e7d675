"""ONNX Runtime's side of the QDQ round trip (tests/tools/test_qdq_onnxruntime.cc).

    qdq_onnxruntime.py make DIR [--reduce-range]
                                  writes DIR/float.onnx (a small CNN with random weights),
                                  DIR/calib/NNN.npy (calibration batches, random normal),
                                  DIR/input.npy, DIR/ort_qdq.onnx (float.onnx quantized by
                                  onnxruntime.quantization.quantize_static, QDQ format, from the
                                  same batches; 7-bit weights with --reduce-range, which CPUs
                                  without VNNI need for exact int8 products) and
                                  DIR/ort_qdq_output.npy (ORT running it)
    qdq_onnxruntime.py run MODEL INPUT OUTPUT   runs MODEL on INPUT with ORT, saves OUTPUT
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static


def small_cnn(rng):
    def init(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [init("w1", 8, 3, 3, 3), init("b1", 8, scale=0.1), init("w2", 16, 8, 3, 3, scale=0.15),
             init("b2", 16, scale=0.1), init("w3", 16, 16, 1, 1, scale=0.2), init("fc_w", 10, 16, scale=0.3),
             init("fc_b", 10, scale=0.1)]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
        helper.make_node("Add", ["c3", "r2"], ["s3"], name="residual"),
        helper.make_node("Relu", ["s3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], transB=1, name="fc"),
    ]
    graph = helper.make_graph(nodes, "small_cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


class Batches(CalibrationDataReader):
    def __init__(self, batches):
        self.batches = iter(batches)

    def get_next(self):
        batch = next(self.batches, None)
        return None if batch is None else {"x": batch}


def run(model, x):
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def make(folder, reduce_range):
    rng = np.random.default_rng(0)
    os.makedirs(os.path.join(folder, "calib"), exist_ok=True)
    onnx.save(small_cnn(rng), os.path.join(folder, "float.onnx"))
    batches = [rng.standard_normal((4, 3, 16, 16)).astype(np.float32) for _ in range(8)]
    for i, b in enumerate(batches):
        np.save(os.path.join(folder, "calib", f"{i:03d}.npy"), b)
    x = rng.standard_normal((2, 3, 16, 16)).astype(np.float32)
    np.save(os.path.join(folder, "input.npy"), x)
    qdq = os.path.join(folder, "ort_qdq.onnx")
    quantize_static(os.path.join(folder, "float.onnx"), qdq, Batches(batches), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=True,
                    reduce_range=reduce_range)
    np.save(os.path.join(folder, "ort_qdq_output.npy"), run(qdq, x))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], "--reduce-range" in sys.argv[3:])
    else:
        np.save(sys.argv[4], run(sys.argv[2], np.load(sys.argv[3])))
