"""Models with sequences and optional values through mx.Predictor, compared with ONNX Runtime:
detection post-processing that cuts per-class scores into a sequence, maps a subgraph over it and
stacks the result; a Loop that collects a piece of a different length per iteration into a
sequence and joins it; a model that takes a sequence (tensors of different shapes) and gives one
back, edited; an optional input that may be left empty. Then the same models written back by
`kiln convert` and run by ONNX Runtime, and the errors bad positions and wrong kinds of input
give. Weights are random; the models are written here with onnx.helper."""
import json
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln as mx
from onnx_models import const, model, ort_run, save

RTOL = 1e-5
KILN_CLI = os.environ.get("KILN_CLI")


def seq_info(name, elem_type, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem_type, shape)


def as_numpy(value):
    """A Predictor output as ONNX Runtime gives it: an array, or a list of arrays for a sequence."""
    if isinstance(value, list):
        return [v.asnumpy() for v in value]
    return value.asnumpy()


def assert_same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-6)
    else:
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)


def per_class_scores(path, rng, classes=3, features=8):
    """features (boxes, 8) -> scores (boxes, classes) cut into a sequence of one column per class,
    each mapped by a subgraph to its top score and the box holding it, stacked: (classes, 1) each,
    and the number of classes."""
    body = helper.make_graph(
        [helper.make_node("ReduceMax", ["column"], ["best"], keepdims=1),
         helper.make_node("ArgMax", ["column"], ["where"], axis=0, keepdims=1),
         helper.make_node("Add", ["best", "bias"], ["best_shifted"])],
        "per_class",
        [helper.make_tensor_value_info("column", TensorProto.FLOAT, ["boxes", 1]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("best_shifted", TensorProto.FLOAT, [1, 1]),
         helper.make_tensor_value_info("where", TensorProto.INT64, [1, 1])])
    nodes = [
        helper.make_node("MatMul", ["features", "w"], ["logits"]),
        helper.make_node("Sigmoid", ["logits"], ["scores"]),
        helper.make_node("SplitToSequence", ["scores"], ["columns"], axis=1, keepdims=1),
        helper.make_node("SequenceMap", ["columns", "bias"], ["bests", "wheres"], body=body, name="per_class"),
        helper.make_node("ConcatFromSequence", ["bests"], ["top"], axis=0, new_axis=0),
        helper.make_node("ConcatFromSequence", ["wheres"], ["top_boxes"], axis=0, new_axis=1),
        helper.make_node("SequenceLength", ["columns"], ["classes"]),
    ]
    graph = helper.make_graph(
        nodes, "per_class_scores",
        [helper.make_tensor_value_info("features", TensorProto.FLOAT, ["boxes", features])],
        [helper.make_tensor_value_info("top", TensorProto.FLOAT, [classes, 1]),
         helper.make_tensor_value_info("top_boxes", TensorProto.INT64, [classes, 1, 1]),
         helper.make_tensor_value_info("classes", TensorProto.INT64, [])],
        [const("w", rng.normal(0, 1, (features, classes)).astype(np.float32)),
         const("bias", np.array([0.25], np.float32))])
    return save(model(graph), path)


def collect_in_loop(path, rng):
    """x (n, 4), steps () -> a Loop whose iteration i appends rows [0, i + 1) of tanh(x + i) to a
    sequence (a piece longer each time), then the pieces joined along axis 0 and the sequence."""
    body = helper.make_graph(
        [helper.make_node("Cast", ["i"], ["i_float"], to=TensorProto.FLOAT),
         helper.make_node("Add", ["x", "i_float"], ["shifted"]),
         helper.make_node("Tanh", ["shifted"], ["squashed"]),
         helper.make_node("Add", ["i", "one"], ["end_scalar"]),
         helper.make_node("Unsqueeze", ["end_scalar", "zero_axis"], ["end"]),
         helper.make_node("Slice", ["squashed", "zero_axis", "end", "zero_axis"], ["piece"]),
         helper.make_node("SequenceInsert", ["pieces_in", "piece"], ["pieces_out"]),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "collect",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         seq_info("pieces_in", TensorProto.FLOAT)],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         seq_info("pieces_out", TensorProto.FLOAT)])
    nodes = [
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=TensorProto.FLOAT),
        helper.make_node("Loop", ["steps", "", "empty"], ["pieces"], body=body, name="collect"),
        helper.make_node("ConcatFromSequence", ["pieces"], ["joined"], axis=0),
    ]
    graph = helper.make_graph(
        nodes, "collect_in_loop",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 4]),
         helper.make_tensor_value_info("steps", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("joined", TensorProto.FLOAT, ["total", 4]), seq_info("pieces", TensorProto.FLOAT)],
        [const("one", np.array(1, np.int64)), const("zero_axis", np.array([0], np.int64))])
    return save(model(graph), path)


def edit_sequence(path, rng):
    """images (a sequence of float tensors of any shapes), extra (any shape), at () -> the sequence
    with its first tensor erased and `extra` inserted at `at`; its last tensor; its length."""
    nodes = [
        helper.make_node("SequenceErase", ["images", "zero"], ["rest"]),
        helper.make_node("SequenceInsert", ["rest", "extra", "at"], ["edited"]),
        helper.make_node("SequenceAt", ["edited", "minus_one"], ["last"]),
        helper.make_node("SequenceLength", ["edited"], ["count"]),
    ]
    graph = helper.make_graph(
        nodes, "edit_sequence",
        [seq_info("images", TensorProto.FLOAT), helper.make_tensor_value_info("extra", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("at", TensorProto.INT64, [])],
        [seq_info("edited", TensorProto.FLOAT), helper.make_tensor_value_info("last", TensorProto.FLOAT, None),
         helper.make_tensor_value_info("count", TensorProto.INT64, [])],
        [const("zero", np.array(0, np.int64)), const("minus_one", np.array(-1, np.int64))])
    return save(model(graph, opset=17), path, check=False)


def optional_bias(path, rng):
    """x (2, 3), bias: an optional (3,) tensor -> x + bias when it is given, else x * 2; and
    whether it was given."""
    then_branch = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["bias"], ["b"]), helper.make_node("Add", ["x", "b"], ["y_then"])],
        "with_bias", [], [helper.make_tensor_value_info("y_then", TensorProto.FLOAT, [2, 3])])
    else_branch = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["y_else"])],
        "without_bias", [], [helper.make_tensor_value_info("y_else", TensorProto.FLOAT, [2, 3])])
    nodes = [
        helper.make_node("OptionalHasElement", ["bias"], ["given"]),
        helper.make_node("If", ["given"], ["y"], then_branch=then_branch, else_branch=else_branch, name="by_bias"),
    ]
    optional_tensor = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, [3]))
    graph = helper.make_graph(
        nodes, "optional_bias",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_value_info("bias", optional_tensor)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("given", TensorProto.BOOL, [])],
        [const("two", np.array(2, np.float32))])
    return save(model(graph, opset=18), path)


def test_a_subgraph_mapped_over_per_class_scores_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(21)
    path = per_class_scores(tmp_path / "scores.onnx", rng)
    p = mx.Predictor(path)
    for boxes in (5, 9, 5):
        feeds = {"features": rng.normal(0, 1, (boxes, 8)).astype(np.float32)}
        for got, want in zip(p.predict(feeds), ort_run(path, feeds)):
            assert_same(as_numpy(got), want)


def test_a_loop_collecting_pieces_of_growing_length_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(22)
    path = collect_in_loop(tmp_path / "collect.onnx", rng)
    p = mx.Predictor(path)
    for steps in (3, 1, 5, 3):
        feeds = {"x": rng.normal(0, 1, (6, 4)).astype(np.float32), "steps": np.array(steps, np.int64)}
        got = [as_numpy(v) for v in p.predict(feeds)]
        want = ort_run(path, feeds)
        assert len(got[1]) == steps
        for g, w in zip(got, want):
            assert_same(g, w)


def test_a_sequence_input_of_different_shapes_is_edited_as_onnxruntime_edits_it(tmp_path):
    rng = np.random.default_rng(23)
    path = edit_sequence(tmp_path / "edit.onnx", rng)
    p = mx.Predictor(path)
    assert p.inputs[0]["sequence"] and p.inputs[0]["shape"] is None
    assert p.outputs[0]["sequence"]
    for at in (0, 2, -1, 1):
        images = [rng.normal(0, 1, shape).astype(np.float32) for shape in [(2, 3), (4,), (1, 5, 2)]]
        feeds = {"images": images, "extra": rng.normal(0, 1, (3, 3)).astype(np.float32), "at": np.array(at, np.int64)}
        got = [as_numpy(v) for v in p.predict(feeds)]
        for g, w in zip(got, ort_run(path, feeds)):
            assert_same(g, w)


def test_an_optional_input_given_or_left_empty_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(24)
    path = optional_bias(tmp_path / "optional.onnx", rng)
    p = mx.Predictor(path)
    assert p.inputs[1]["optional"]
    x = rng.normal(0, 1, (2, 3)).astype(np.float32)
    bias = rng.normal(0, 1, (3,)).astype(np.float32)
    for given in (bias, None, bias):
        feeds = {"x": x, "bias": given}
        got = [as_numpy(v) for v in p.predict(feeds)]
        want = ort_run(path, feeds)
        for g, w in zip(got, want):
            assert_same(g, w)
        assert bool(got[1]) == (given is not None)


@pytest.mark.parametrize("make, feeds", [
    (per_class_scores, lambda rng: {"features": rng.normal(0, 1, (7, 8)).astype(np.float32)}),
    (collect_in_loop, lambda rng: {"x": rng.normal(0, 1, (5, 4)).astype(np.float32), "steps": np.array(4, np.int64)}),
    (edit_sequence, lambda rng: {"images": [rng.normal(0, 1, (2, 2)).astype(np.float32),
                                            rng.normal(0, 1, (3,)).astype(np.float32)],
                                 "extra": np.ones((1,), np.float32), "at": np.array(1, np.int64)}),
])
def test_kiln_convert_writes_sequence_models_that_onnxruntime_runs_the_same(tmp_path, make, feeds):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    rng = np.random.default_rng(25)
    path = make(tmp_path / "model.onnx", rng)
    out = str(tmp_path / "written.onnx")
    subprocess.run([KILN_CLI, "convert", path, out, "--simplify"], check=True, capture_output=True)
    if make is not edit_sequence:
        onnx.checker.check_model(onnx.load(out), full_check=True)
    given = feeds(rng)
    want = ort_run(path, given)
    for got in (ort_run(out, given), [as_numpy(v) for v in mx.Predictor(out).predict(given)]):
        for g, w in zip(got, want):
            assert_same(g, w)


def test_a_position_outside_the_sequence_names_the_node_and_the_predictor_stays_usable(tmp_path):
    rng = np.random.default_rng(26)
    path = edit_sequence(tmp_path / "edit.onnx", rng)
    p = mx.Predictor(path)
    images = [np.ones((2,), np.float32), np.zeros((3,), np.float32)]
    with pytest.raises(mx.KilnError, match=r"SequenceInsert.*position 5 is outside \[-1, 1\]"):
        p.predict({"images": images, "extra": np.ones((1,), np.float32), "at": np.array(5, np.int64)})
    with pytest.raises(mx.KilnError, match=r"SequenceErase.*empty"):
        p.predict({"images": [], "extra": np.ones((1,), np.float32), "at": np.array(0, np.int64)})
    got = p.predict({"images": images, "extra": np.ones((1,), np.float32), "at": np.array(1, np.int64)})
    assert [a.shape for a in as_numpy(got[0])] == [(3,), (1,)]


def test_the_wrong_kind_of_input_is_refused_by_name(tmp_path):
    rng = np.random.default_rng(27)
    p = mx.Predictor(edit_sequence(tmp_path / "edit.onnx", rng))
    with pytest.raises(mx.KilnError, match="input 'images': expected a sequence of float32 tensors, got float32"):
        p.predict({"images": np.ones((2,), np.float32), "extra": np.ones((1,), np.float32), "at": np.array(0, np.int64)})
    with pytest.raises(mx.KilnError, match="input 'images'.*got a sequence of int64 tensors"):
        p.predict({"images": [np.ones((2,), np.int64)], "extra": np.ones((1,), np.float32), "at": np.array(0, np.int64)})
    with pytest.raises(mx.KilnError, match="input 'extra'.*got an undefined tensor"):
        p.predict({"images": [np.ones((2,), np.float32)], "extra": None, "at": np.array(0, np.int64)})
    q = mx.Predictor(per_class_scores(tmp_path / "scores.onnx", rng))
    with pytest.raises(mx.KilnError, match="input 'features': expected float32 .*got a sequence"):
        q.predict({"features": [np.ones((2, 8), np.float32)]})


def test_kiln_run_takes_a_sequence_as_a_folder_and_writes_one(tmp_path):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    rng = np.random.default_rng(28)
    path = edit_sequence(tmp_path / "edit.onnx", rng)
    images = [rng.normal(0, 1, shape).astype(np.float32) for shape in [(2, 3), (4,), (5,)]]
    (tmp_path / "images").mkdir()
    for k, image in enumerate(images):
        np.save(tmp_path / "images" / f"{k}.npy", image)
    extra = rng.normal(0, 1, (2, 2)).astype(np.float32)
    np.save(tmp_path / "extra.npy", extra)
    np.save(tmp_path / "at.npy", np.array(1, np.int64))
    out = tmp_path / "out"
    subprocess.run([KILN_CLI, "run", path, "--input", f"images={tmp_path / 'images'}", "--input",
                    f"extra={tmp_path / 'extra.npy'}", "--input", f"at={tmp_path / 'at.npy'}", "--output-dir",
                    str(out)], check=True, capture_output=True)
    edited, last, count = ort_run(path, {"images": images, "extra": extra, "at": np.array(1, np.int64)})
    written = sorted((out / "edited").iterdir())
    assert [f.name for f in written] == [f"{k}.npy" for k in range(len(edited))]
    assert_same([np.load(out / "edited" / f"{k}.npy") for k in range(len(edited))], edited)
    assert_same(np.load(out / "last.npy"), last)
    assert_same(np.load(out / "count.npy"), count)
    # A file where the model takes a sequence is refused, naming the input.
    bad = subprocess.run([KILN_CLI, "run", path, "--input", f"images={tmp_path / 'extra.npy'}", "--input",
                          f"extra={tmp_path / 'extra.npy'}", "--input", f"at={tmp_path / 'at.npy'}"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert bad.returncode != 0 and "input 'images'" in bad.stderr and "sequence" in bad.stderr


def test_kiln_info_describes_sequence_and_optional_values(tmp_path):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    rng = np.random.default_rng(25)
    path = edit_sequence(tmp_path / "edit.onnx", rng)
    text = subprocess.run([KILN_CLI, "info", path], check=True, capture_output=True, text=True).stdout
    assert "images  a sequence of float32 tensors" in text, text
    info = json.loads(subprocess.run([KILN_CLI, "info", path, "--json"], check=True, capture_output=True,
                                     text=True).stdout)
    assert info["inputs"][0] == {"name": "images", "dtype": "float32", "shape": None, "sequence": True,
                                 "optional": False}
    optional = optional_bias(tmp_path / "optional.onnx", rng)
    text = subprocess.run([KILN_CLI, "info", optional], check=True, capture_output=True, text=True).stdout
    assert "bias  an optional float32 (3,)" in text and "activation memory: not planned" in text, text
