"""Models with control flow through mx.Predictor, compared with ONNX Runtime: a voice-activity
detector with an If on its sample-rate input (the branches frame the audio differently), a greedy
decoder Loop that stops at an end token, a Scan RNN read backwards, and a Loop with an If inside
reading the model's weights two scopes out. Then the same models written back by `kiln convert`
and run by ONNX Runtime, and the errors a broken subgraph or a bad trip count give. Weights are
random; the models are written here with onnx.helper."""
import os
import subprocess

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import kiln as mx
from onnx_models import const, model, ort_run, save

RTOL = 1e-4
KILN_CLI = os.environ.get("KILN_CLI")


def vad(path, rng):
    """audio (1, n) f32, sr () int64 -> speech probability (): frames of 64 samples at 16 kHz,
    32 at 8 kHz, each through its own projection (weights of the outer graph), then the mean."""
    w16 = const("w16", rng.normal(0, 0.2, (64, 8)).astype(np.float32))
    w8 = const("w8", rng.normal(0, 0.2, (32, 8)).astype(np.float32))
    head = const("head", rng.normal(0, 0.5, (8, 1)).astype(np.float32))

    def branch(name, frame, weight):
        nodes = [
            helper.make_node("Reshape", ["audio", f"{name}_frame"], [f"{name}_frames"]),
            helper.make_node("MatMul", [f"{name}_frames", weight], [f"{name}_proj"]),
            helper.make_node("Relu", [f"{name}_proj"], [f"{name}_features"]),
        ]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_features",
                                                                                TensorProto.FLOAT, None)],
                                 [const(f"{name}_frame", np.array([-1, frame], np.int64))])

    nodes = [
        helper.make_node("Equal", ["sr", "sixteen_k"], ["is_16k"]),
        helper.make_node("If", ["is_16k"], ["features"], then_branch=branch("at16k", 64, "w16"),
                         else_branch=branch("at8k", 32, "w8"), name="by_rate"),
        helper.make_node("MatMul", ["features", "head"], ["logit"]),
        helper.make_node("ReduceMean", ["logit"], ["mean_logit"], keepdims=0),
        helper.make_node("Sigmoid", ["mean_logit"], ["probability"]),
    ]
    graph = helper.make_graph(
        nodes, "vad",
        [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, "n"]),
         helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("probability", TensorProto.FLOAT, [])],
        [w16, w8, head, const("sixteen_k", np.array(16000, np.int64))])
    return save(model(graph), path)


def test_vad_with_an_if_on_the_sample_rate_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(11)
    path = vad(tmp_path / "vad.onnx", rng)
    p = mx.Predictor(path)
    for sr, n in [(16000, 512), (8000, 256), (16000, 1024), (8000, 256)]:
        feeds = {"audio": rng.normal(0, 1, (1, n)).astype(np.float32), "sr": np.array(sr, np.int64)}
        want = ort_run(path, feeds)[0]
        got = p.predict(feeds)[0].asnumpy()
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=1e-6)


def decoder(path, rng, vocab=10, hidden=16, eos=3):
    """h0 (1, hidden), start () int64, max_len () int64 -> a greedy decoder Loop: embed the last
    token, h = tanh(h W + e), the next token is argmax(h V); it stops at the end token. Gives the
    last state, the tokens (steps, 1) and the logits (steps, 1, vocab)."""
    body_nodes = [
        helper.make_node("Gather", ["embedding", "token_in"], ["embedded"], axis=0),
        helper.make_node("MatMul", ["h_in", "w_h"], ["recurrent"]),
        helper.make_node("Add", ["recurrent", "embedded"], ["pre"]),
        helper.make_node("Tanh", ["pre"], ["h_out"]),
        helper.make_node("MatMul", ["h_out", "w_o"], ["logits"]),
        helper.make_node("ArgMax", ["logits"], ["token_out"], axis=1, keepdims=0),
        helper.make_node("Equal", ["token_out", "eos"], ["at_end"]),
        helper.make_node("Not", ["at_end"], ["go_on_1"]),
        helper.make_node("Squeeze", ["go_on_1"], ["go_on"]),
        helper.make_node("Identity", ["token_out"], ["token_scan"]),
    ]
    body = helper.make_graph(
        body_nodes, "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("token_in", TensorProto.INT64, [1])],
        [helper.make_tensor_value_info("go_on", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("token_out", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("token_scan", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, vocab])])
    nodes = [
        helper.make_node("Unsqueeze", ["start", "zero_axis"], ["start_1"]),
        helper.make_node("Loop", ["max_len", "true", "h0", "start_1"],
                         ["h_last", "token_last", "tokens", "all_logits"], body=body, name="decode"),
    ]
    graph = helper.make_graph(
        nodes, "decoder",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("start", TensorProto.INT64, []),
         helper.make_tensor_value_info("max_len", TensorProto.INT64, [])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("token_last", TensorProto.INT64, [1]),
         helper.make_tensor_value_info("tokens", TensorProto.INT64, ["steps", 1]),
         helper.make_tensor_value_info("all_logits", TensorProto.FLOAT, ["steps", 1, vocab])],
        [const("embedding", rng.normal(0, 1, (vocab, hidden)).astype(np.float32)),
         const("w_h", rng.normal(0, 0.6, (hidden, hidden)).astype(np.float32)),
         const("w_o", rng.normal(0, 1, (hidden, vocab)).astype(np.float32)),
         const("eos", np.array([eos], np.int64)), const("true", np.array(True)),
         const("zero_axis", np.array([0], np.int64))])
    return save(model(graph), path)


def test_greedy_decoder_loop_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(12)
    path = decoder(tmp_path / "decoder.onnx", rng)
    p = mx.Predictor(path)
    lengths = set()
    for _ in range(12):
        feeds = {"h0": rng.normal(0, 1, (1, 16)).astype(np.float32),
                 "start": np.array(rng.integers(0, 10), np.int64), "max_len": np.array(12, np.int64)}
        want = ort_run(path, feeds)
        got = [t.asnumpy() for t in p.predict(feeds)]
        lengths.add(want[2].shape[0])
        np.testing.assert_array_equal(got[1], want[1])
        np.testing.assert_array_equal(got[2], want[2])
        np.testing.assert_allclose(got[0], want[0], rtol=RTOL, atol=1e-5)
        np.testing.assert_allclose(got[3], want[3], rtol=RTOL, atol=1e-5)
    assert len(lengths) > 1, "some sequences should stop at the end token, others run to max_len"
    assert p.num_cached_plans == 1


def scan_rnn(path, rng, width=4, hidden=8):
    """x (steps, 1, width), h0 (1, hidden) -> a tanh RNN as a Scan walking x backwards, its states
    stacked along axis 1: (1, steps, hidden)."""
    body = helper.make_graph(
        [helper.make_node("MatMul", ["x_t", "w"], ["from_x"]),
         helper.make_node("MatMul", ["h", "u"], ["from_h"]),
         helper.make_node("Add", ["from_x", "from_h"], ["pre"]),
         helper.make_node("Tanh", ["pre"], ["h_next"]),
         helper.make_node("Identity", ["h_next"], ["h_seen"])],
        "cell",
        [helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("x_t", TensorProto.FLOAT, [1, width])],
        [helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("h_seen", TensorProto.FLOAT, [1, hidden])])
    graph = helper.make_graph(
        [helper.make_node("Scan", ["h0", "x"], ["h_last", "states"], body=body, num_scan_inputs=1,
                          scan_input_directions=[1], scan_output_axes=[1], name="rnn")],
        "scan_rnn",
        [helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, ["steps", 1, width])],
        [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [1, hidden]),
         helper.make_tensor_value_info("states", TensorProto.FLOAT, [1, "steps", hidden])],
        [const("w", rng.normal(0, 0.5, (width, hidden)).astype(np.float32)),
         const("u", rng.normal(0, 0.5, (hidden, hidden)).astype(np.float32))])
    return save(model(graph), path)


def test_scan_rnn_read_backwards_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(13)
    path = scan_rnn(tmp_path / "rnn.onnx", rng)
    p = mx.Predictor(path)
    for steps in (5, 1, 7):
        feeds = {"h0": rng.normal(0, 1, (1, 8)).astype(np.float32),
                 "x": rng.normal(0, 1, (steps, 1, 4)).astype(np.float32)}
        want = ort_run(path, feeds)
        got = [t.asnumpy() for t in p.predict(feeds)]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-5)


def nested(path, rng):
    """y0 (2, 3), n () int64 -> Loop n times: y = If(i even, y @ a, y - b) with a and b weights of
    the outer graph, read by the If two scopes out; scan output: sum(y) each step."""
    then_branch = helper.make_graph([helper.make_node("MatMul", ["y_in", "a"], ["mixed"])], "even",
                                    [], [helper.make_tensor_value_info("mixed", TensorProto.FLOAT, [2, 3])])
    else_branch = helper.make_graph([helper.make_node("Sub", ["y_in", "b"], ["shifted"])], "odd",
                                    [], [helper.make_tensor_value_info("shifted", TensorProto.FLOAT, [2, 3])])
    body = helper.make_graph(
        [helper.make_node("Mod", ["i", "two"], ["parity"]),
         helper.make_node("Equal", ["parity", "zero"], ["even"]),
         helper.make_node("If", ["even"], ["y_out"], then_branch=then_branch, else_branch=else_branch,
                          name="pick"),
         helper.make_node("ReduceSum", ["y_out"], ["total"], keepdims=0),
         helper.make_node("Identity", ["cond_in"], ["cond_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_in", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("y_out", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("total", TensorProto.FLOAT, [])],
        [const("two", np.array(2, np.int64)), const("zero", np.array(0, np.int64))])
    graph = helper.make_graph(
        [helper.make_node("Add", ["y0", "offset"], ["start"]),
         helper.make_node("Loop", ["n", "", "start"], ["y", "totals"], body=body, name="steps")],
        "nested",
        [helper.make_tensor_value_info("y0", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("n", TensorProto.INT64, []),
         helper.make_tensor_value_info("offset", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("totals", TensorProto.FLOAT, ["n"])],
        [const("a", rng.normal(0, 0.7, (3, 3)).astype(np.float32)),
         const("b", rng.normal(0, 1, (2, 3)).astype(np.float32))])
    return save(model(graph), path)


def test_if_nested_in_a_loop_reading_outer_weights_matches_onnxruntime(tmp_path):
    rng = np.random.default_rng(14)
    path = nested(tmp_path / "nested.onnx", rng)
    p = mx.Predictor(path)
    for n in (0, 1, 4, 7):
        feeds = {"y0": rng.normal(0, 1, (2, 3)).astype(np.float32), "n": np.array(n, np.int64),
                 "offset": rng.normal(0, 1, (2, 3)).astype(np.float32)}
        want = ort_run(path, feeds)
        got = [t.asnumpy() for t in p.predict(feeds)]
        for g, w in zip(got, want):
            assert g.shape == w.shape
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-5)


@pytest.mark.parametrize("make, feeds", [
    (vad, lambda rng: {"audio": rng.normal(0, 1, (1, 256)).astype(np.float32), "sr": np.array(8000, np.int64)}),
    (decoder, lambda rng: {"h0": rng.normal(0, 1, (1, 16)).astype(np.float32), "start": np.array(2, np.int64),
                           "max_len": np.array(9, np.int64)}),
    (scan_rnn, lambda rng: {"h0": rng.normal(0, 1, (1, 8)).astype(np.float32),
                            "x": rng.normal(0, 1, (4, 1, 4)).astype(np.float32)}),
    (nested, lambda rng: {"y0": rng.normal(0, 1, (2, 3)).astype(np.float32), "n": np.array(5, np.int64),
                          "offset": rng.normal(0, 1, (2, 3)).astype(np.float32)}),
])
def test_kiln_convert_writes_control_flow_that_onnxruntime_runs_the_same(tmp_path, make, feeds):
    assert KILN_CLI, "KILN_CLI names the kiln command (ctest sets it)"
    rng = np.random.default_rng(15)
    path = make(tmp_path / "model.onnx", rng)
    out = str(tmp_path / "written.onnx")
    subprocess.run([KILN_CLI, "convert", path, out, "--simplify"], check=True, capture_output=True)
    onnx.checker.check_model(onnx.load(out), full_check=True)
    given = feeds(rng)
    want = ort_run(path, given)
    for got in (ort_run(out, given), [t.asnumpy() for t in mx.Predictor(out).predict(given)]):
        for g, w in zip(got, want):
            np.testing.assert_allclose(g, w, rtol=RTOL, atol=1e-5)


def test_a_negative_trip_count_names_the_loop_and_the_predictor_stays_usable(tmp_path):
    rng = np.random.default_rng(16)
    path = nested(tmp_path / "nested.onnx", rng)
    p = mx.Predictor(path)
    feeds = {"y0": np.ones((2, 3), np.float32), "n": np.array(-1, np.int64), "offset": np.zeros((2, 3), np.float32)}
    with pytest.raises(mx.KilnError, match="Loop 'steps'.*trip count is -1"):
        p.predict(feeds)
    feeds["n"] = np.array(2, np.int64)
    np.testing.assert_allclose(p.predict(feeds)[1].asnumpy(), ort_run(path, feeds)[1], rtol=RTOL)


def test_a_loop_that_never_ends_stops_at_max_loop_iterations(tmp_path):
    rng = np.random.default_rng(17)
    path = decoder(tmp_path / "decoder.onnx", rng, eos=99)  # a token that never comes
    p = mx.Predictor(path, max_loop_iterations=30)
    feeds = {"h0": np.zeros((1, 16), np.float32), "start": np.array(1, np.int64),
             "max_len": np.array(2**62, np.int64)}
    with pytest.raises(mx.KilnError, match="Loop 'decode'.*max_loop_iterations = 30"):
        p.predict(feeds)
    feeds["max_len"] = np.array(5, np.int64)
    assert p.predict(feeds)[2].shape == (5, 1)


def test_branches_of_different_element_types_are_refused_at_load(tmp_path):
    then_branch = helper.make_graph([helper.make_node("Identity", ["x"], ["as_float"])], "t", [],
                                    [helper.make_tensor_value_info("as_float", TensorProto.FLOAT, [2])])
    else_branch = helper.make_graph([helper.make_node("Cast", ["x"], ["as_int"], to=TensorProto.INT64)], "e", [],
                                    [helper.make_tensor_value_info("as_int", TensorProto.INT64, [2])])
    graph = helper.make_graph(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_branch, else_branch=else_branch, name="mixed")],
        "mixed_types",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    path = str(tmp_path / "mixed.onnx")
    onnx.save(model(graph), path)  # the checker would refuse it too
    with pytest.raises(mx.KilnError, match="If 'mixed'.*then_branch is float32 but else_branch's is int64"):
        mx.Predictor(path)
