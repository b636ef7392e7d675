"""The cost of shapes decided at run time: the same model with its shape-deciding values as
constants and as graph inputs, and a detector with NonMaxSuppression inside the graph (a plan up
to NMS, NMS itself, and the rest planned per number of boxes) against ONNX Runtime.

  PYTHONPATH=build/release/python .venv/bin/python bench/dynamic_shapes.py [--rounds 7] [--calls 2000]

Models (written here, random weights; tests/python/test_dynamic_models.py builds the same ones):
  resize_reshape  x (1, 2, 5, 7) -> Resize(sizes) -> Reshape(shape); `static` has sizes and shape as
                  initializers, `inputs` takes them as graph inputs (the plan is keyed by their values)
  detector        Conv head -> boxes, scores -> NonMaxSuppression -> Gather of the kept boxes
Rounds alternate the variants so that load on the machine hits all alike; the median over rounds
of the per-call mean is reported in microseconds, with the spread (min-max) over rounds.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "python"))
import test_dynamic_models as models  # noqa: E402  (the test's model builders)

import kiln as mx  # noqa: E402

SIZES = np.array([1, 2, 10, 14], np.int64)
SHAPE = np.array([2, -1], np.int64)


def resize_reshape_static(path):
    nodes = [
        helper.make_node("Resize", ["x", "", "", "sizes"], ["resized"], mode="linear", name="resize"),
        helper.make_node("Reshape", ["resized", "shape"], ["y"], name="reshape"),
    ]
    graph = helper.make_graph(
        nodes, "resize_reshape_static", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 5, 7])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(SIZES, "sizes"), numpy_helper.from_array(SHAPE, "shape")])
    return models.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path, check=False)


def per_call_us(fn, calls):
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    tmp = tempfile.mkdtemp()
    x = rng.normal(0, 1, (1, 2, 5, 7)).astype(np.float32)
    static_path = resize_reshape_static(os.path.join(tmp, "static.onnx"))
    inputs_path = models.resize_reshape(os.path.join(tmp, "inputs.onnx"))
    detector_path = models.detector(os.path.join(tmp, "detector.onnx"), np.random.default_rng(5))
    image = rng.normal(0, 1, (1, 3, 16, 16)).astype(np.float32)
    static, given = mx.Predictor(static_path), mx.Predictor(inputs_path)
    detector = mx.Predictor(detector_path)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    ort_detector = ort.InferenceSession(detector_path, options, providers=["CPUExecutionProvider"])
    ort_given = ort.InferenceSession(inputs_path, options, providers=["CPUExecutionProvider"])
    feeds = {"x": x, "sizes": SIZES, "shape": SHAPE}
    np.testing.assert_allclose(static.predict([x])[0].asnumpy(), given.predict(feeds)[0].asnumpy())
    cases = {
        "resize_reshape static (kiln)": lambda: static.predict([x]),
        "resize_reshape inputs (kiln)": lambda: given.predict([x, SIZES, SHAPE]),
        "resize_reshape inputs (ort)": lambda: ort_given.run(None, feeds),
        "detector with NMS (kiln)": lambda: detector.predict([image]),
        "detector with NMS (ort)": lambda: ort_detector.run(None, {"image": image}),
    }
    for fn in cases.values():
        fn()
    times = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, fn in cases.items():
            times[name].append(per_call_us(fn, args.calls))
    print(f"{'case':32s} {'median us':>10s} {'spread':>16s}")
    for name, values in times.items():
        print(f"{name:32s} {statistics.median(values):10.1f} {min(values):7.1f}-{max(values):<7.1f}")
    med = {name: statistics.median(v) for name, v in times.items()}
    print(f"inputs / static (kiln): {med['resize_reshape inputs (kiln)'] / med['resize_reshape static (kiln)']:.2f}")
    print(f"kiln / ort, resize_reshape inputs: "
          f"{med['resize_reshape inputs (kiln)'] / med['resize_reshape inputs (ort)']:.2f}")
    print(f"kiln / ort, detector with NMS: {med['detector with NMS (kiln)'] / med['detector with NMS (ort)']:.2f}")


if __name__ == "__main__":
    main()
