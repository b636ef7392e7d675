"""Models whose graph inputs and outputs are int16, uint16, uint32 and uint64, through mx.Predictor,
compared with ONNX Runtime: a token-id model (uint16 ids gathered from a table, an int16 offset
cast and added, the uint32 sum masked by a comparison), a uint64 hash step (multiply, xor, shift,
wrapping as C's unsigned arithmetic does) and the same models' outputs written back through
`kiln run`'s .npy files. Written here with onnx.helper."""
import os
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import kiln as mx

KILN_CLI = os.environ.get("KILN_CLI")


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))
    return str(path)


def ort_run(path, feeds):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def token_model(path):
    """ids (n,) uint16, offset (n,) int16 -> masked (n, 2) uint32, above (n,) bool, ids_out (n,) uint16."""
    table = numpy_helper.from_array(np.arange(200, dtype=np.uint32).reshape(100, 2) * 1000, "table")
    limit = numpy_helper.from_array(np.array(50000, dtype=np.uint32), "limit")
    nodes = [
        helper.make_node("Cast", ["ids"], ["index"], to=TensorProto.INT64),
        helper.make_node("Gather", ["table", "index"], ["rows"], axis=0),
        helper.make_node("Cast", ["offset"], ["offset32"], to=TensorProto.UINT32),
        helper.make_node("Unsqueeze", ["offset32", "one"], ["offset_col"]),
        helper.make_node("Add", ["rows", "offset_col"], ["shifted"]),
        helper.make_node("Gather", ["shifted", "zero"], ["first"], axis=1),
        helper.make_node("Gather", ["shifted", "one_index"], ["second"], axis=1),
        helper.make_node("Max", ["first", "second"], ["largest"]),
        helper.make_node("Greater", ["largest", "limit"], ["above"]),
        helper.make_node("Unsqueeze", ["above", "one"], ["above_col"]),
        helper.make_node("Where", ["above_col", "limit", "shifted"], ["masked"]),
        helper.make_node("Identity", ["ids"], ["ids_out"]),
    ]
    graph = helper.make_graph(
        nodes, "tokens",
        [helper.make_tensor_value_info("ids", TensorProto.UINT16, ["n"]),
         helper.make_tensor_value_info("offset", TensorProto.INT16, ["n"])],
        [helper.make_tensor_value_info("masked", TensorProto.UINT32, ["n", 2]),
         helper.make_tensor_value_info("above", TensorProto.BOOL, ["n"]),
         helper.make_tensor_value_info("ids_out", TensorProto.UINT16, ["n"])],
        [table, limit, numpy_helper.from_array(np.array([1], dtype=np.int64), "one"),
         numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"),
         numpy_helper.from_array(np.array(1, dtype=np.int64), "one_index")])
    return save(graph, path)


def hash_model(path):
    """h (n,) uint64, x (n,) uint64 -> next (n,) uint64: (h ^ x) * prime, then xor-shifted right by 29."""
    nodes = [
        helper.make_node("BitwiseXor", ["h", "x"], ["mixed"]),
        helper.make_node("Mul", ["mixed", "prime"], ["spread"]),
        helper.make_node("BitShift", ["spread", "shift"], ["high"], direction="RIGHT"),
        helper.make_node("BitwiseXor", ["spread", "high"], ["next"]),
    ]
    graph = helper.make_graph(
        nodes, "hash",
        [helper.make_tensor_value_info("h", TensorProto.UINT64, ["n"]),
         helper.make_tensor_value_info("x", TensorProto.UINT64, ["n"])],
        [helper.make_tensor_value_info("next", TensorProto.UINT64, ["n"])],
        [numpy_helper.from_array(np.array(0x100000001B3, dtype=np.uint64), "prime"),
         numpy_helper.from_array(np.array(29, dtype=np.uint64), "shift")])
    return save(graph, path)


def test_token_ids_in_16_bit_types_match_onnxruntime(tmp_path):
    rng = np.random.default_rng(3)
    path = token_model(tmp_path / "tokens.onnx")
    p = mx.Predictor(path)
    for n in (5, 9, 5):
        feeds = {"ids": rng.integers(0, 100, n).astype(np.uint16),
                 "offset": rng.integers(-30000, 30000, n).astype(np.int16)}
        want = ort_run(path, feeds)
        got = [t.asnumpy() for t in p.predict(feeds)]
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape
            np.testing.assert_array_equal(g, w)


def test_uint64_hash_wraps_as_onnxruntime_does(tmp_path):
    rng = np.random.default_rng(4)
    path = hash_model(tmp_path / "hash.onnx")
    p = mx.Predictor(path)
    info = np.iinfo(np.uint64)
    feeds = {"h": rng.integers(0, info.max, 16, dtype=np.uint64, endpoint=True),
             "x": rng.integers(0, info.max, 16, dtype=np.uint64, endpoint=True)}
    feeds["h"][:2] = [info.max, 0]
    (want,) = ort_run(path, feeds)
    (got,) = [t.asnumpy() for t in p.predict(feeds)]
    assert got.dtype == np.uint64
    np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(KILN_CLI is None, reason="KILN_CLI names the kiln command (set by ctest)")
def test_kiln_run_reads_and_writes_the_new_types_as_npy(tmp_path):
    path = token_model(tmp_path / "tokens.onnx")
    ids = np.array([1, 7, 99], dtype=np.uint16)
    offset = np.array([-5, 0, 32767], dtype=np.int16)
    np.save(tmp_path / "ids.npy", ids)
    np.save(tmp_path / "offset.npy", offset)
    subprocess.run([KILN_CLI, "run", path, "--input", f"ids={tmp_path / 'ids.npy'}", "--input",
                    f"offset={tmp_path / 'offset.npy'}", "--output-dir", str(tmp_path / "out")], check=True,
                   capture_output=True)
    want = ort_run(path, {"ids": ids, "offset": offset})
    for name, w in zip(("masked", "above", "ids_out"), want):
        got = np.load(tmp_path / "out" / f"{name}.npy")
        assert got.dtype == w.dtype
        np.testing.assert_array_equal(got, w)
