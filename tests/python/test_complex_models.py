"""Models whose graph inputs, outputs and initializers are complex64 or complex128, through
mx.Predictor and `kiln run`, compared with numpy (ONNX Runtime registers no complex tensor type,
so it cannot run them): every op that ONNX lets move complex data and Kiln runs (Transpose,
Reshape, Gather, Concat, Where, Slice, Pad, Compress, ReverseSequence, Expand, Tile, Squeeze,
Unsqueeze, Flatten, Split, GatherElements, ScatterND, DepthToSpace, Identity, Shape, the sequence
ops and If); and the ops that compute, refused by name."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln as mx
from onnx_models import const, model, save

KILN_CLI = os.environ.get("KILN_CLI")
CODES = {np.complex64: TensorProto.COMPLEX64, np.complex128: TensorProto.COMPLEX128}


def complex_values(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def mover(path, dtype):
    """x (2, 3, 4) complex, keep (5,) bool, lens (4,) int64 -> thirteen outputs, each from a different op."""
    code = CODES[dtype]
    rng = np.random.default_rng(7)
    # The table lies in float_data / double_data as (real, imaginary) pairs, the fill in raw_data.
    table = helper.make_tensor("table", code, [2, 3], complex_values(rng, (2, 3), dtype).ravel().tolist())
    nodes = [
        helper.make_node("Transpose", ["x"], ["turned"], perm=[0, 2, 1]),
        helper.make_node("Reshape", ["turned", "rows_shape"], ["rows"]),
        helper.make_node("Gather", ["rows", "pick"], ["picked"], axis=0),
        helper.make_node("Concat", ["picked", "table"], ["joined"], axis=0),
        helper.make_node("Unsqueeze", ["keep", "one"], ["keep_col"]),
        helper.make_node("Where", ["keep_col", "joined", "fill"], ["kept"]),
        helper.make_node("Slice", ["kept", "starts", "ends"], ["middle"]),
        helper.make_node("Pad", ["middle", "pads", "fill"], ["padded"]),
        helper.make_node("Compress", ["joined", "keep"], ["compressed"], axis=0),
        helper.make_node("ReverseSequence", ["turned", "lens"], ["reversed"], batch_axis=1, time_axis=0),
        helper.make_node("Expand", ["fill", "grid"], ["filled"]),
        helper.make_node("Tile", ["table", "twice"], ["tiled"]),
        helper.make_node("Flatten", ["x"], ["flat"], axis=2),
        helper.make_node("Split", ["x", "halves"], ["front", "back"], axis=2),
        helper.make_node("GatherElements", ["table", "order"], ["shuffled"], axis=1),
        helper.make_node("ScatterND", ["table", "where", "patch"], ["patched"]),
        helper.make_node("Reshape", ["x", "image_shape"], ["image"]),
        helper.make_node("DepthToSpace", ["image"], ["spread"], blocksize=2),
        helper.make_node("Shape", ["x"], ["dims"]),
        helper.make_node("Identity", ["back"], ["same"]),
    ]
    c = lambda name, shape: helper.make_tensor_value_info(name, code, shape)
    graph = helper.make_graph(
        nodes, "mover",
        [c("x", [2, 3, 4]), helper.make_tensor_value_info("keep", TensorProto.BOOL, [5]),
         helper.make_tensor_value_info("lens", TensorProto.INT64, [4])],
        [c("picked", [3, 3]), c("kept", [5, 3]), c("padded", [4, 4]), c("compressed", ["kept_rows", 3]),
         c("reversed", [2, 4, 3]), c("filled", [2, 2]), c("tiled", [2, 6]), c("flat", [6, 4]),
         c("shuffled", [2, 3]), c("patched", [2, 3]), c("spread", [1, 1, 6, 4]), c("same", [2, 3, 3]),
         helper.make_tensor_value_info("dims", TensorProto.INT64, [3])],
        [table, const("fill", np.array(0.5 - 2j, dtype)), const("rows_shape", np.array([8, 3], np.int64)),
         const("pick", np.array([7, 0, 3], np.int64)), const("one", np.array([1], np.int64)),
         const("image_shape", np.array([1, 4, 3, 2], np.int64)), const("starts", np.array([1, 1], np.int64)),
         const("ends", np.array([4, 3], np.int64)), const("pads", np.array([1, 0, 0, 2], np.int64)),
         const("grid", np.array([2, 2], np.int64)), const("twice", np.array([1, 2], np.int64)),
         const("halves", np.array([1, 3], np.int64)),
         const("order", np.array([[2, 0, 1], [1, 1, 0]], np.int64)),
         const("where", np.array([[1, 2], [0, 0]], np.int64)),
         const("patch", np.array([3 + 3j, -1j], dtype))])
    return save(model(graph, 18), path), onnx.numpy_helper.to_array(table)


def reference(x, keep, lens, table, dtype):
    """What `mover` computes, in numpy."""
    fill = np.array(0.5 - 2j, dtype)
    turned = x.transpose(0, 2, 1)
    picked = turned.reshape(8, 3)[[7, 0, 3]]
    joined = np.concatenate([picked, table])
    kept = np.where(keep[:, None], joined, fill)
    middle = kept[1:4, 1:3]
    padded = np.pad(middle, [(1, 0), (0, 2)], constant_values=fill)
    reversed_ = turned.copy()
    for b, n in enumerate(lens):
        reversed_[:n, b] = turned[:n, b][::-1]
    patched = table.copy()
    patched[1, 2], patched[0, 0] = 3 + 3j, -1j
    spread = x.reshape(1, 2, 2, 1, 3, 2).transpose(0, 3, 4, 1, 5, 2).reshape(1, 1, 6, 4)
    return [picked, kept, padded, joined[keep], reversed_, np.full((2, 2), fill), np.tile(table, (1, 2)),
            x.reshape(6, 4), np.take_along_axis(table, np.array([[2, 0, 1], [1, 1, 0]]), 1), patched, spread,
            x[:, :, 1:], np.array(x.shape)]


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_data_moved_by_the_moving_ops_matches_numpy(tmp_path, dtype):
    path, table = mover(tmp_path / "mover.onnx", dtype)
    p = mx.Predictor(path)
    rng = np.random.default_rng(3)
    for _ in range(2):
        x = complex_values(rng, (2, 3, 4), dtype)
        keep = rng.random(5) > 0.4
        lens = rng.integers(0, 3, 4)
        got = p.predict({"x": x, "keep": keep, "lens": lens})
        want = reference(x, keep, lens, table, dtype)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            g = g.asnumpy()
            assert g.dtype == w.dtype or w.dtype == np.int64
            np.testing.assert_array_equal(g, w)


def test_complex_sequences_and_branches_match_numpy(tmp_path):
    """parts (2, 3) complex128: a sequence of its rows, and an If whose branches pass it on or reorder it."""
    c = lambda name, shape: helper.make_tensor_value_info(name, TensorProto.COMPLEX128, shape)
    then_graph = helper.make_graph([helper.make_node("Identity", ["parts"], ["chosen"])], "then", [],
                                   [c("chosen", [2, 3])])
    else_graph = helper.make_graph([helper.make_node("Transpose", ["parts"], ["swapped"], perm=[1, 0]),
                                    helper.make_node("Reshape", ["swapped", "shape"], ["chosen"])],
                                   "else", [], [c("chosen", [2, 3])])
    nodes = [
        helper.make_node("Split", ["parts", "ones"], ["a", "b"], axis=0),
        helper.make_node("SequenceConstruct", ["b", "a"], ["seq"]),
        helper.make_node("ConcatFromSequence", ["seq"], ["stacked"], axis=0),
        helper.make_node("SequenceAt", ["seq", "zero"], ["first"]),
        helper.make_node("If", ["flag"], ["chosen"], then_branch=then_graph, else_branch=else_graph),
    ]
    graph = helper.make_graph(
        nodes, "seq", [c("parts", [2, 3]), helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
        [c("stacked", [2, 3]), c("first", [1, 3]), c("chosen", [2, 3])],
        [const("ones", np.array([1, 1], np.int64)), const("zero", np.array(0, np.int64)),
         const("shape", np.array([2, 3], np.int64))])
    p = mx.Predictor(save(model(graph, 18), tmp_path / "seq.onnx"))
    parts = complex_values(np.random.default_rng(1), (2, 3), np.complex128)
    for flag in (True, False):
        stacked, first, chosen = (t.asnumpy() for t in p.predict({"parts": parts, "flag": np.array(flag)}))
        np.testing.assert_array_equal(stacked, parts[::-1])
        np.testing.assert_array_equal(first, parts[1:])
        np.testing.assert_array_equal(chosen, parts if flag else parts.T.reshape(2, 3))


def test_kiln_run_reads_and_writes_complex_npy(tmp_path):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    path, table = mover(tmp_path / "mover.onnx", np.complex64)
    rng = np.random.default_rng(5)
    x, keep, lens = complex_values(rng, (2, 3, 4), np.complex64), np.ones(5, bool), np.array([2, 1, 0, 2], np.int64)
    for name, value in (("x", x), ("keep", keep), ("lens", lens)):
        np.save(tmp_path / f"{name}.npy", value)
    subprocess.run([KILN_CLI, "run", path, "--output-dir", str(tmp_path / "out")]
                   + [arg for n in ("x", "keep", "lens") for arg in ("--input", f"{n}={tmp_path / n}.npy")],
                   check=True, capture_output=True)
    picked = np.load(tmp_path / "out" / "picked.npy")
    assert picked.dtype == np.complex64
    np.testing.assert_array_equal(picked, reference(x, keep, lens, table, np.complex64)[0])


def test_computing_on_complex_numbers_is_refused_by_name(tmp_path):
    graph = helper.make_graph([helper.make_node("Add", ["x", "x"], ["y"], name="add")], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [2])])
    path = str(tmp_path / "bad.onnx")
    onnx.save(model(graph, 18), path)
    with pytest.raises(mx.KilnError, match="Add.*input 0 \\(A\\) is complex64, a complex type Kiln moves but "
                                           "does not compute in"):
        mx.Predictor(path)
    graph = helper.make_graph([helper.make_node("ScatterND", ["x", "at", "x"], ["y"], reduction="add")], "sum",
                              [helper.make_tensor_value_info("x", TensorProto.COMPLEX128, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.COMPLEX128, [2])],
                              [const("at", np.array([[0], [1]], np.int64))])
    onnx.save(model(graph, 18), path)
    with pytest.raises(mx.KilnError, match="attribute 'reduction' add: input 0 \\(data\\) is complex128"):
        mx.Predictor(path).predict({"x": np.ones(2, np.complex128)})
    p = mx.Predictor(mover(tmp_path / "mover.onnx", np.complex64)[0])
    with pytest.raises(mx.KilnError, match="input 'x': expected complex64"):
        p.predict({"x": np.zeros((2, 3, 4), np.complex128), "keep": np.ones(5, bool),
                   "lens": np.zeros(3, np.int64)})


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_arrays_cross_numpy_and_dlpack_unchanged(dtype):
    x = complex_values(np.random.default_rng(2), (3, 2), dtype)
    a = mx.nd.array(x, dtype=x.dtype)
    assert a.dtype == dtype
    np.testing.assert_array_equal(a.asnumpy(), x)
    viewed = mx.nd.from_dlpack(x)
    x[0, 0] = 9 - 9j  # the array views numpy's memory
    assert viewed.asnumpy()[0, 0] == 9 - 9j
    np.testing.assert_array_equal(np.from_dlpack(viewed), x)
