"""Models with string tensors through mx.Predictor, compared with ONNX Runtime: a tokenizer that
normalizes and splits text, looks the words up in a vocabulary (LabelEncoder) and marks the stop
words; text moved by the ops that only move elements (Gather, Reshape, Concat, Where, Transpose,
Slice); text parsed into numbers and numbers written as text; RegexFullMatch and StringConcat.
Then `kiln run` on .npy text files, `kiln convert` writing string models that ONNX Runtime runs
the same, and the errors text where numbers go gives. The models are written here with
onnx.helper."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln as mx
from onnx_models import const, model, ort_run, save

KILN_CLI = os.environ.get("KILN_CLI")
VOCABULARY = ["the", "cat", "sat", "on", "mat", "a", "dog"]


def text(*strings):
    return np.array(strings, dtype=object)


def assert_same(got, want):
    got = got if isinstance(got, np.ndarray) else got.asnumpy()
    assert got.shape == want.shape
    if want.dtype == object:
        assert got.tolist() == want.tolist()
    else:
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-6)


def tokenizer(path):
    """lines (n,) -> words (n, k) in lower case, split at whitespace; their ids in the vocabulary
    (0 for an unknown word, the padding too); whether each is "the"; how many words each line has."""
    nodes = [
        helper.make_node("StringNormalizer", ["lines"], ["lower"], case_change_action="LOWER", locale="C"),
        helper.make_node("StringSplit", ["lower"], ["words", "counts"]),
        helper.make_node("LabelEncoder", ["words"], ["ids"], domain="ai.onnx.ml", keys_strings=VOCABULARY,
                         values_int64s=list(range(1, len(VOCABULARY) + 1)), default_int64=0),
        helper.make_node("Equal", ["words", "stop"], ["is_stop"]),
    ]
    graph = helper.make_graph(
        nodes, "tokenizer", [helper.make_tensor_value_info("lines", TensorProto.STRING, ["n"])],
        [helper.make_tensor_value_info("words", TensorProto.STRING, ["n", "k"]),
         helper.make_tensor_value_info("ids", TensorProto.INT64, ["n", "k"]),
         helper.make_tensor_value_info("is_stop", TensorProto.BOOL, ["n", "k"]),
         helper.make_tensor_value_info("counts", TensorProto.INT64, ["n"])],
        [const("stop", text("the"))])
    return save(model(graph, opset=20, ml=True), path)


def mover(path):
    """names (2, 3) text, pick (2,) int64, flag (2, 3) bool -> the moving ops on text: Gather rows,
    Transpose, Reshape, Concat, Slice, and Where choosing between names and a constant."""
    nodes = [
        helper.make_node("Gather", ["names", "pick"], ["picked"], axis=0),
        helper.make_node("Transpose", ["names"], ["turned"], perm=[1, 0]),
        helper.make_node("Reshape", ["turned", "flat"], ["flattened"]),
        helper.make_node("Concat", ["flattened", "extra"], ["joined"], axis=0),
        helper.make_node("Slice", ["joined", "starts", "ends"], ["tail"]),
        helper.make_node("Where", ["flag", "names", "blank"], ["chosen"]),
    ]
    graph = helper.make_graph(
        nodes, "mover",
        [helper.make_tensor_value_info("names", TensorProto.STRING, [2, 3]),
         helper.make_tensor_value_info("pick", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("flag", TensorProto.BOOL, [2, 3])],
        [helper.make_tensor_value_info("picked", TensorProto.STRING, [2, 3]),
         helper.make_tensor_value_info("tail", TensorProto.STRING, [4]),
         helper.make_tensor_value_info("chosen", TensorProto.STRING, [2, 3])],
        [const("flat", np.array([-1], np.int64)), const("extra", text("x", "y")),
         const("starts", np.array([4], np.int64)), const("ends", np.array([8], np.int64)),
         const("blank", text("-"))])
    return save(model(graph, opset=20), path)


def numbers_as_text(path):
    """values (n,) text -> the numbers they hold (float), doubled, written back as text; and
    whether each looked like a plain decimal; and each with a unit appended."""
    nodes = [
        helper.make_node("Cast", ["values"], ["parsed"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["parsed", "parsed"], ["doubled"]),
        helper.make_node("Cast", ["doubled"], ["written"], to=TensorProto.STRING),
        helper.make_node("RegexFullMatch", ["values"], ["decimal"], pattern=r"-?[0-9]+\.[0-9]+"),
        helper.make_node("StringConcat", ["written", "unit"], ["with_unit"]),
    ]
    graph = helper.make_graph(
        nodes, "numbers_as_text", [helper.make_tensor_value_info("values", TensorProto.STRING, ["n"])],
        [helper.make_tensor_value_info("doubled", TensorProto.FLOAT, ["n"]),
         helper.make_tensor_value_info("written", TensorProto.STRING, ["n"]),
         helper.make_tensor_value_info("decimal", TensorProto.BOOL, ["n"]),
         helper.make_tensor_value_info("with_unit", TensorProto.STRING, ["n"])],
        [const("unit", text(" kg"))])
    return save(model(graph, opset=20), path)


def test_a_tokenizer_with_a_vocabulary_matches_onnxruntime(tmp_path):
    path = tokenizer(tmp_path / "tokenizer.onnx")
    p = mx.Predictor(path)
    assert p.inputs[0]["dtype"] is np.str_
    for lines in (text("The cat sat on the mat", "a DOG", "  zebra  "), text("the the", "")):
        got = p.predict({"lines": lines})
        for g, w in zip(got, ort_run(path, {"lines": lines})):
            assert_same(g, w)


def test_text_moved_by_the_moving_ops_matches_numpy(tmp_path):
    # numpy is the reference here: ONNX Runtime 1.32's Gather on strings copies only the first
    # string of each gathered row (the rest come back empty).
    path = mover(tmp_path / "mover.onnx")
    p = mx.Predictor(path)
    rng = np.random.default_rng(31)
    for _ in range(3):
        names = text(*rng.choice(["ant", "bee", "cow", "doe", "", "ünï"], 6)).reshape(2, 3)
        pick = rng.integers(-2, 2, 2).astype(np.int64)
        flag = rng.random((2, 3)) > 0.5
        want = [names[pick], np.concatenate([names.T.reshape(-1), text("x", "y")])[4:8], np.where(flag, names, "-")]
        for g, w in zip(p.predict({"names": names, "pick": pick, "flag": flag}), want):
            assert_same(g, w.astype(object))
        # The ops ONNX Runtime moves text with correctly agree with it too.
        got_ort = ort_run(path, {"names": names, "pick": pick, "flag": flag})
        assert_same(p.predict({"names": names, "pick": pick, "flag": flag})[2], got_ort[2])


def test_numbers_parsed_from_and_written_as_text_match_onnxruntime(tmp_path):
    path = numbers_as_text(tmp_path / "numbers.onnx")
    p = mx.Predictor(path)
    values = text("0.5", "-1.25", "3", "1e-3", "NaN", "INF", "-INF", "0.1")
    got = p.predict({"values": values})
    want = ort_run(path, {"values": values})
    np.testing.assert_allclose(got[0].asnumpy(), want[0], rtol=1e-6)
    assert_same(got[2], want[2])
    # Floats are written as the shortest text that reads back the same float (as numpy's str does:
    # "0.002"); ONNX Runtime writes 8 significant digits ("0.0020000001"). Both read back the same.
    for written, ort_written in ((got[1], want[1]), (got[3], want[3])):
        assert written.dtype == object
        kiln_values = np.array([s.removesuffix(" kg") for s in written.tolist()]).astype(np.float32)
        ort_values = np.array([s.removesuffix(" kg") for s in ort_written.tolist()]).astype(np.float32)
        np.testing.assert_array_equal(kiln_values, ort_values)
    assert got[1].tolist()[3] == "0.002" and got[1].tolist()[4:7] == ["NaN", "INF", "-INF"]


@pytest.mark.parametrize("make, feeds", [
    (tokenizer, {"lines": text("the cat", "A mat on a dog")}),
    (numbers_as_text, {"values": text("2.5", "-4")}),
])
def test_kiln_convert_writes_string_models_that_onnxruntime_runs_the_same(tmp_path, make, feeds):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    path = make(tmp_path / "model.onnx")
    out = str(tmp_path / "written.onnx")
    subprocess.run([KILN_CLI, "convert", path, out, "--opset", "20"], check=True, capture_output=True)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    for g, w in zip(ort_run(out, feeds), ort_run(path, feeds)):
        assert_same(g, w)


def test_kiln_run_reads_and_writes_text_as_npy(tmp_path):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    path = tokenizer(tmp_path / "tokenizer.onnx")
    lines = np.array(["The cat", "naïve dog sat"])  # numpy's own text arrays ('<U13')
    np.save(tmp_path / "lines.npy", lines)
    subprocess.run([KILN_CLI, "run", path, "--input", f"lines={tmp_path / 'lines.npy'}", "--output-dir",
                    str(tmp_path / "out")], check=True, capture_output=True)
    want = ort_run(path, {"lines": lines.astype(object)})
    words = np.load(tmp_path / "out" / "words.npy")
    assert words.dtype.kind == "U" and words.tolist() == want[0].tolist()
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "ids.npy"), want[1])


def test_text_where_numbers_go_is_refused_by_name(tmp_path):
    p = mx.Predictor(numbers_as_text(tmp_path / "numbers.onnx"))
    with pytest.raises(mx.KilnError, match="input 'values': expected string"):
        p.predict({"values": np.array([1.0], np.float32)})
    with pytest.raises(mx.KilnError, match="element 1 'abc' is not a number"):
        p.predict({"values": text("1", "abc")})
    assert p.predict({"values": text("1")})[0].asnumpy().tolist() == [2.0]
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "bad",
                              [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.STRING, [2])])
    bad = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(bad, str(tmp_path / "bad.onnx"))
    with pytest.raises(mx.KilnError, match="Relu.*input 0 \\(X\\) is a string tensor; Relu takes numbers"):
        mx.Predictor(str(tmp_path / "bad.onnx"))
