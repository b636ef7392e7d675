"""Writes the seeds of the fuzz targets for the files the tools read and for external data:
  labels/               a .npy of classes, a .npy of boxes (K, 6), a text file (first byte: the form)
  calibration_folder/   folders in fuzz_calibration_folder's encoding: batch files, batch folders
  onnx_external/        small ONNX models whose tensors live in weights.bin, as onnx writes them,
                        within the 64 KiB file fuzz_onnx_external puts beside them
  npy/, tensor_pb/      complex numbers: numpy's '<c8' and '<c16', ONNX's float_data / double_data
                        pairs and raw bytes
Every .npy inside is numpy's own np.save, every model onnx's own writer.
    .venv/bin/python tests/fuzz/tools/write_file_seeds.py"""
import io
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.external_data_helper import convert_model_to_external_data

CORPUS = os.path.join(os.path.dirname(__file__), "..", "corpus")


def npy_bytes(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def write(folder, name, data):
    assert len(data) < 4096, (folder, name, len(data))
    with open(os.path.join(CORPUS, folder, name), "wb") as f:
        f.write(data)


def labels():
    write("labels", "classes.bin", b"\x00" + npy_bytes(np.array([3, 1, 4, 1, 5], dtype=np.int64)))
    boxes = np.array([[0, 1, 0.1, 0.2, 0.5, 0.6], [2, 0, 0.3, 0.3, 0.9, 0.8]], dtype=np.float32)
    write("labels", "boxes.bin", b"\x00" + npy_bytes(boxes))
    write("labels", "text.bin", b"\x01" + b"7\n2, 1\n0 4\n")


def entry(place, name, data):
    """One file in fuzz_calibration_folder's encoding: low bits 0-3 the folder itself, 4-7 batch
    folder b0..b3; bits 3-4 the name (0.npy, 1.npy, data.npy, notes.txt)."""
    names = ["0.npy", "1.npy", "data.npy", "notes.txt"]
    code = place | (names.index(name) << 3)
    return bytes([code, len(data) & 0xFF, len(data) >> 8]) + data


def calibration():
    rng = np.random.default_rng(1)
    batch = lambda: npy_bytes(rng.standard_normal((2, 3)).astype(np.float32))  # noqa: E731
    write("calibration_folder", "files.bin", entry(0, "0.npy", batch()) + entry(0, "1.npy", batch()))
    write("calibration_folder", "folders.bin", entry(4, "data.npy", batch()) + entry(5, "data.npy", batch()))
    write("calibration_folder", "mixed.bin", entry(0, "0.npy", batch()) + entry(4, "data.npy", batch()) +
          entry(0, "notes.txt", b"not a batch"))


def external_model(name, nodes, inputs, outputs, initializers):
    model = helper.make_model(helper.make_graph(nodes, name, inputs, outputs, initializers),
                              opset_imports=[helper.make_opsetid("", 17)])
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    with tempfile.TemporaryDirectory() as folder:  # onnx writes the data; the fuzz target brings its own file
        path = os.path.join(folder, "model.onnx")
        onnx.save_model(model, path)
        assert os.path.getsize(os.path.join(folder, "weights.bin")) <= 65536
        with open(path, "rb") as f:
            write("onnx_external", name + ".onnx", f.read())


def onnx_external():
    rng = np.random.default_rng(2)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(rng.standard_normal((4,)).astype(np.float32), "b")
    external_model("conv", [helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [w, b])
    m = numpy_helper.from_array(rng.standard_normal((16, 8)).astype(np.float32), "m")
    shape = numpy_helper.from_array(np.array([2, 8], dtype=np.int64), "shape")
    external_model("matmul_reshape", [helper.make_node("MatMul", ["x", "m"], ["h"]),
                                      helper.make_node("Reshape", ["h", "shape"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8])], [m, shape])


def complex_numbers():
    write("npy", "c64_2x3.npy", npy_bytes((np.arange(6) + 1j * np.arange(6)[::-1]).astype(np.complex64).reshape(2, 3)))
    write("npy", "c128_1.npy", npy_bytes(np.array([1.5 - 2j], np.complex128)))
    write("tensor_pb", "complex64_float_data.pb",
          helper.make_tensor("pairs", TensorProto.COMPLEX64, [2], [1 + 2j, -3.5j]).SerializeToString())
    write("tensor_pb", "complex128_double_data.pb",
          helper.make_tensor("pairs", TensorProto.COMPLEX128, [1, 2], [0.25 + 1j, 2 - 1j]).SerializeToString())
    write("tensor_pb", "complex64_raw.pb",
          numpy_helper.from_array(np.array([[1 + 1j, 2]], np.complex64), "raw").SerializeToString())


if __name__ == "__main__":
    labels()
    calibration()
    onnx_external()
    complex_numbers()
