"""Models written for older opsets run in Kiln exactly as in ONNX Runtime.

Kiln's ops have only the newest opset's form; the importer rewrites older forms (attributes that
became inputs, Softmax's 2-D coercion before opset 13, Resize 10, Upsample 7, ...). Each case
here is a one- or two-node model at an old opset; ONNX Runtime, which implements every opset
natively, gives the expected outputs.

usage: onnx_opsets.py KILN_CLI WORK_DIR
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

RNG = np.random.default_rng(7)


def model(name, opset, nodes, inputs, outputs):
    """inputs: {name: array}; outputs: list of names."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_empty_tensor_value_info(o) for o in outputs])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 7 if opset >= 13 else 6
    return m


def x(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


N = helper.make_node
CASES = [
    ("split_attr", 11, [N("Split", ["x"], ["a", "b"], axis=1, split=[1, 3])], {"x": x(2, 4)}, ["a", "b"]),
    ("squeeze_unsqueeze_attr", 11, [N("Unsqueeze", ["x"], ["u"], axes=[0, 3]), N("Squeeze", ["u"], ["y"], axes=[0])],
     {"x": x(2, 3)}, ["y"]),
    ("reducesum_attr", 11, [N("ReduceSum", ["x"], ["y"], axes=[1], keepdims=0)], {"x": x(2, 3, 4)}, ["y"]),
    ("reducemean_attr", 13, [N("ReduceMean", ["x"], ["y"], axes=[-1, 1])], {"x": x(2, 3, 4)}, ["y"]),
    ("reducemax_attr", 17, [N("ReduceMax", ["x"], ["y"], axes=[0], keepdims=0)], {"x": x(2, 3, 4)}, ["y"]),
    ("slice_attr", 9, [N("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, 100], axes=[0, 2])], {"x": x(4, 3, 5)}, ["y"]),
    ("clip_attr", 10, [N("Clip", ["x"], ["y"], min=-0.5, max=0.25)], {"x": x(3, 4)}, ["y"]),
    ("clip_attr_one_bound", 10, [N("Clip", ["x"], ["y"], min=0.0)], {"x": x(3, 4)}, ["y"]),
    ("pad_attr", 10, [N("Pad", ["x"], ["y"], pads=[0, 1, 1, 0], value=1.5)], {"x": x(2, 3)}, ["y"]),
    ("pad_attr_reflect", 10, [N("Pad", ["x"], ["y"], pads=[0, 2, 0, 1], mode="reflect")], {"x": x(2, 4)}, ["y"]),
    ("dropout_ratio_attr", 10, [N("Dropout", ["x"], ["y"], ratio=0.3)], {"x": x(2, 3)}, ["y"]),
    ("topk_attr", 9, [N("TopK", ["x"], ["v", "i"], k=2, axis=1)], {"x": x(3, 5)}, ["v", "i"]),
    ("upsample_7", 7, [N("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0], mode="nearest")],
     {"x": x(1, 2, 2, 3)}, ["y"]),
    ("upsample_7_linear", 7, [N("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 2.0], mode="linear")],
     {"x": x(1, 1, 3, 3)}, ["y"]),
    ("softmax_11_axis1_3d", 11, [N("Softmax", ["x"], ["y"], axis=1)], {"x": x(2, 3, 4)}, ["y"]),
    ("softmax_11_default_2d", 11, [N("Softmax", ["x"], ["y"])], {"x": x(3, 5)}, ["y"]),
    ("logsoftmax_11_axis0", 11, [N("LogSoftmax", ["x"], ["y"], axis=0)], {"x": x(2, 3, 2)}, ["y"]),
    ("hardmax_11_axis1", 11, [N("Hardmax", ["x"], ["y"], axis=1)], {"x": x(2, 3, 4)}, ["y"]),
    ("batchnorm_7_spatial", 7, [N("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], spatial=1, epsilon=1e-3)],
     {"x": x(2, 3, 2, 2), "s": x(3), "b": x(3), "m": x(3), "v": np.abs(x(3)) + 0.5}, ["y"]),
    ("gridsample_16_bilinear", 16, [N("GridSample", ["x", "g"], ["y"], mode="bilinear", align_corners=1)],
     {"x": x(1, 2, 4, 5), "g": np.clip(x(1, 3, 3, 2), -1, 1)}, ["y"]),
    ("roialign_10", 10, [N("RoiAlign", ["x", "rois", "idx"], ["y"], output_height=2, output_width=2, sampling_ratio=2)],
     {"x": x(1, 2, 6, 6), "rois": np.array([[0.5, 0.5, 4.0, 5.0], [1.0, 0.0, 3.5, 3.0]], np.float32),
      "idx": np.array([0, 0], np.int64)}, ["y"]),
    ("groupnorm_18_per_group_affine", 18,
     [N("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=3, epsilon=1e-4)],
     {"x": x(2, 6, 3, 4), "s": x(3), "b": x(3)}, ["y"]),
    ("scatter_9", 9, [N("Scatter", ["x", "i", "u"], ["y"], axis=1)],
     {"x": x(2, 4), "i": np.array([[0, 3], [2, 1]], np.int64), "u": x(2, 2)}, ["y"]),
]


def resize_10_case():
    # The scales are a constant, as exporters write them: Kiln plans shapes before running.
    scales = N("Constant", [], ["s"], value=onnx.numpy_helper.from_array(np.array([1, 1, 2, 1.5], np.float32)))
    return [("resize_10_nearest", 10, [scales, N("Resize", ["x", "s"], ["y"], mode="nearest")],
             {"x": x(1, 2, 3, 4)}, ["y"]),
            ("resize_10_linear", 10, [scales, N("Resize", ["x", "s"], ["y"], mode="linear")],
             {"x": x(1, 2, 3, 4)}, ["y"])]


def main() -> int:
    kiln, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    failures = []
    for name, opset, nodes, inputs, outputs in CASES + resize_10_case():
        folder = os.path.join(work, name)
        os.makedirs(folder, exist_ok=True)
        m = model(name, opset, nodes, inputs, outputs)
        path = os.path.join(folder, "model.onnx")
        onnx.save(m, path)
        expected = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(outputs, inputs)
        args = [kiln, "run", path, "--output-dir", os.path.join(folder, "out")]
        for key, value in inputs.items():
            np.save(os.path.join(folder, key + ".npy"), value)
            args += ["--input", f"{key}={os.path.join(folder, key + '.npy')}"]
        result = subprocess.run(args, capture_output=True, text=True)
        if result.returncode != 0:
            failures.append(f"{name} (opset {opset}): kiln failed: {result.stderr.strip()}")
            continue
        for out, want in zip(outputs, expected):
            got = np.load(os.path.join(folder, "out", out + ".npy"))
            if got.shape != want.shape or got.dtype != want.dtype:
                failures.append(f"{name}: output {out} is {got.dtype}{got.shape}, ONNX Runtime gives "
                                f"{want.dtype}{want.shape}")
            elif not np.allclose(got, want, rtol=1e-5, atol=1e-6):
                failures.append(f"{name}: output {out} differs by {np.abs(got - want).max()}")
        print(f"{'FAIL' if failures and failures[-1].startswith(name) else 'ok  '} {name} (opset {opset})")
    for f in failures:
        print("FAIL:", f)
    print(f"onnx_opsets: {len(CASES) + 2 - len({f.split()[0] for f in failures})} of {len(CASES) + 2} cases agree "
          "with ONNX Runtime")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
