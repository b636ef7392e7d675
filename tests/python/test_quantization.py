"""kiln.contrib.quantization.quantize_model: a small conv net built with mx.sym, quantized in each
calibration mode, against a numpy fp32 reference; the graph it writes (excluded nodes stay float),
its round trip through JSON and files, and argument errors."""
import json

import numpy as np
import pytest

import kiln as mx
from kiln.contrib.quantization import quantize_model

RNG = np.random.RandomState(11)
SHAPE = (4, 3, 10, 10)
# INT8 error budget: the largest output error stays under this fraction of the largest fp32
# output magnitude (8-bit steps are 1/127 to 1/255 of a threshold; three quantized layers).
TOLERANCE = 0.04


def net():
    x = mx.sym.Variable("data")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv0")
    x = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, name="bn0")
    x = mx.sym.Activation(x, act_type="relu", name="relu0")
    x = mx.sym.Convolution(x, kernel=(3, 3), num_filter=8, pad=(1, 1), name="conv1")
    x = mx.sym.Activation(x, act_type="relu", name="relu1")
    x = mx.sym.Pooling(x, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool0")
    return mx.sym.FullyConnected(x, num_hidden=10, name="fc0")


def make_params():
    arg = {"conv0_weight": RNG.normal(0, 0.3, (8, 3, 3, 3)), "conv0_bias": RNG.normal(0, 0.1, 8),
           "bn0_gamma": RNG.uniform(0.5, 1.5, 8), "bn0_beta": RNG.normal(0, 0.1, 8),
           "conv1_weight": RNG.normal(0, 0.2, (8, 8, 3, 3)), "conv1_bias": RNG.normal(0, 0.1, 8),
           "fc0_weight": RNG.normal(0, 0.2, (10, 200)), "fc0_bias": RNG.normal(0, 0.1, 10)}
    aux = {"bn0_moving_mean": RNG.normal(0, 0.1, 8), "bn0_moving_var": RNG.uniform(0.5, 1.5, 8)}
    return ({k: v.astype(np.float32) for k, v in arg.items()}, {k: v.astype(np.float32) for k, v in aux.items()})


ARG, AUX = make_params()
CALIB = [RNG.normal(0, 1, SHAPE).astype(np.float32) for _ in range(4)]
TEST = RNG.normal(0, 1, SHAPE).astype(np.float32)


def conv(x, w, b):
    """3x3 convolution, pad 1, stride 1, in numpy."""
    n, _, h, wd = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((n, w.shape[0], h, wd), np.float64)
    for i in range(3):
        for j in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    return out + b[None, :, None, None]


def reference(x):
    """The fp32 net in numpy."""
    y = conv(x, ARG["conv0_weight"], ARG["conv0_bias"])
    inv = ARG["bn0_gamma"] / np.sqrt(AUX["bn0_moving_var"] + 1e-5)
    y = (y - AUX["bn0_moving_mean"][None, :, None, None]) * inv[None, :, None, None] + ARG["bn0_beta"][None, :, None, None]
    y = np.maximum(conv(np.maximum(y, 0), ARG["conv1_weight"], ARG["conv1_bias"]), 0)
    y = y.reshape(y.shape[0], 8, 5, 2, 5, 2).max(axis=(3, 5)).reshape(y.shape[0], -1)
    return y @ ARG["fc0_weight"].T + ARG["fc0_bias"]


def run(qsym, qarg, qaux, x):
    exe = qsym.simple_bind(mx.cpu(), grad_req="null", data=x.shape)
    exe.copy_params_from(qarg, qaux)
    return exe.forward(data=x)[0].asnumpy()


def quantize(**kwargs):
    kwargs.setdefault("calib_data", CALIB)
    return quantize_model(net(), dict(ARG), dict(AUX), **kwargs)


def nodes_by_name(sym):
    graph = json.loads(sym.tojson())
    return graph["nodes"], {n["name"]: n for n in graph["nodes"]}


def weight_source(sym, name):
    """The op of the node that feeds op node `name` its weight (input 1)."""
    nodes, by_name = nodes_by_name(sym)
    return nodes[by_name[name]["inputs"][1][0]]["op"]


def assert_close_to_fp32(out, ref):
    err = np.abs(out - ref).max()
    assert err <= TOLERANCE * np.abs(ref).max(), (err, np.abs(ref).max())


@pytest.mark.parametrize("calib_mode", ["naive", "entropy", "percentile"])
@pytest.mark.parametrize("quantized_dtype", ["int8", "auto"])
def test_modes_within_tolerance_of_fp32(calib_mode, quantized_dtype):
    qsym, qarg, qaux = quantize(calib_mode=calib_mode, quantized_dtype=quantized_dtype)
    ref = reference(TEST)
    assert_close_to_fp32(run(qsym, qarg, qaux, TEST), ref)
    for name in ("conv0", "conv1", "fc0"):
        assert weight_source(qsym, name) == "_kiln_DequantizeLinear"
    # Per-channel int8 weights, with BatchNorm folded into conv0 (its statistics are gone).
    int8 = {k for k, v in qarg.items() if v.dtype == np.int8 and v.ndim >= 2}
    assert len(int8) == 3 and qaux == {}
    # The quantized result is not the float one: a mode that quantized nothing would match exactly.
    assert np.abs(run(qsym, qarg, qaux, TEST) - ref).max() > 1e-5


def test_uint8_everywhere_for_nonnegative_data():
    x = np.abs(TEST)
    qsym, qarg, qaux = quantize(calib_mode="entropy", quantized_dtype="uint8", calib_data=[np.abs(b) for b in CALIB])
    assert {v.dtype for k, v in qarg.items() if "zero_point" in k and v.ndim == 0} == {np.uint8}
    assert_close_to_fp32(run(qsym, qarg, qaux, x), reference(x))


def test_naive_threshold_of_the_input_is_its_largest_magnitude():
    qsym, qarg, _ = quantize(calib_mode="naive", quantized_dtype="int8")
    nodes, by_name = nodes_by_name(qsym)
    # conv0 reads data through a QuantizeLinear whose scale is max|calibration data| / 127.
    dq = nodes[by_name["conv0"]["inputs"][0][0]]
    q = nodes[dq["inputs"][0][0]]
    assert q["op"] == "_kiln_QuantizeLinear" and nodes[q["inputs"][0][0]]["name"] == "data"
    scale = qarg[nodes[q["inputs"][1][0]]["name"]].asnumpy()
    np.testing.assert_allclose(scale, max(np.abs(b).max() for b in CALIB) / 127, rtol=1e-6)


def test_uint8_after_relu_and_calibration_limits():
    qsym, qarg, qaux = quantize(calib_mode="naive", quantized_dtype="auto")
    zero_points = [v.dtype for k, v in qarg.items() if "zero_point" in k and v.ndim == 0]  # activations
    assert np.uint8 in zero_points and np.int8 in zero_points  # data is signed, relu outputs are not
    one = quantize(calib_mode="naive", calib_data=CALIB[:1])
    for limited in (quantize(calib_mode="naive", num_calib_batches=1),
                    quantize(calib_mode="naive", num_calib_examples=3)):
        np.testing.assert_array_equal(run(*limited, TEST), run(*one, TEST))


class DataBatch:
    def __init__(self, data, label):
        self.data, self.label = data, label


def test_calibration_batch_forms_agree():
    expected = run(*quantize(calib_mode="naive"), TEST)
    forms = [[mx.nd.array(b) for b in CALIB],
             [(b, np.zeros(SHAPE[0], np.float32)) for b in CALIB],  # (data, label) as a DataLoader gives
             [DataBatch([mx.nd.array(b)], [mx.nd.zeros((SHAPE[0],))]) for b in CALIB],
             [{"data": b} for b in CALIB],
             iter(CALIB)]
    for calib_data in forms:
        np.testing.assert_array_equal(run(*quantize(calib_mode="naive", calib_data=calib_data), TEST), expected)


def test_excluded_names_and_ops_stay_float():
    qsym, qarg, qaux = quantize(calib_mode="naive", excluded_sym_names=["conv1"],
                                excluded_op_names=["FullyConnected"])
    assert weight_source(qsym, "conv0") == "_kiln_DequantizeLinear"
    for name in ("conv1", "fc0"):
        assert weight_source(qsym, name) == "null"
        assert qarg[f"{name}_weight"].dtype == np.float32
    assert_close_to_fp32(run(qsym, qarg, qaux, TEST), reference(TEST))


def test_dynamic_mode_quantizes_fully_connected_only():
    qsym, qarg, qaux = quantize(calib_mode="none", calib_data=None, data_shapes={"data": SHAPE})
    assert weight_source(qsym, "fc0") == "_kiln_DequantizeLinear"
    assert weight_source(qsym, "conv0") == "null" and weight_source(qsym, "conv1") == "null"
    assert_close_to_fp32(run(qsym, qarg, qaux, TEST), reference(TEST))


def test_round_trip_through_json_files_and_predictor(tmp_path):
    qsym, qarg, qaux = quantize(calib_mode="entropy", quantized_dtype="auto")
    text = qsym.tojson()
    assert "_kiln_QuantizeLinear" in text and "_kiln_DequantizeLinear" in text
    expected = run(qsym, qarg, qaux, TEST)
    np.testing.assert_array_equal(run(mx.sym.load_json(text), qarg, qaux, TEST), expected)
    prefix = str(tmp_path / "qnet")
    qsym.save(prefix + "-symbol.json")
    mx.nd.save(prefix + "-0000.params", {**{"arg:" + k: v for k, v in qarg.items()},
                                         **{"aux:" + k: v for k, v in qaux.items()}})
    np.testing.assert_array_equal(run(mx.sym.load(prefix + "-symbol.json"), qarg, qaux, TEST), expected)
    # The Predictor runs int8 kernels, which may round a requantized value one step apart.
    predictor = mx.Predictor(prefix + "-symbol.json")
    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=str(tmp_path / "profile.json"))
    mx.profiler.set_state("run")
    out = predictor.predict([TEST])[0].asnumpy()
    mx.profiler.set_state("stop")
    ops = mx.profiler.dumps(reset=True)
    assert "FusedQLinearConv" in ops and "FusedQLinearMatMul" in ops  # the int8 kernels ran
    assert_close_to_fp32(out, reference(TEST))
    assert np.abs(out - expected).max() <= 0.02 * np.abs(expected).max()


@pytest.mark.parametrize("kwargs, named", [
    ({"calib_mode": "kl"}, "calib_mode"),
    ({"quantized_dtype": "int4"}, "quantized_dtype"),
    ({"excluded_sym_names": "conv0"}, "excluded_sym_names"),
    ({"excluded_sym_names": ["conv9"]}, "conv9"),
    ({"calib_data": None}, "calib_data"),
    ({"calib_data": 3}, "calib_data"),
    ({"calib_data": [[]]}, "calib_data"),
    ({"calib_data": [{"x": CALIB[0]}]}, "calib_data"),
    ({"data_names": ("x",)}, "data_names"),
    ({"num_calib_batches": 0}, "num_calib_batches"),
    ({"quantize_granularity": "row-wise"}, "quantize_granularity"),
    ({"percentile": 120}, "percentile"),
])
def test_bad_arguments_name_them(kwargs, named):
    with pytest.raises(mx.KilnError, match=named):
        quantize(**kwargs)


def test_missing_parameters_and_bad_batch_shapes():
    args = {k: v for k, v in ARG.items() if k != "conv1_weight"}
    with pytest.raises(mx.KilnError, match="arg_params.*conv1_weight"):
        quantize_model(net(), args, AUX, calib_data=CALIB)
    with pytest.raises(mx.KilnError, match="aux_params.*bn0_moving_var"):
        quantize_model(net(), ARG, {"bn0_moving_mean": AUX["bn0_moving_mean"]}, calib_data=CALIB)
    with pytest.raises(mx.KilnError):
        quantize(calib_data=[np.zeros((2, 5, 10, 10), np.float32)])


def test_dynamic_mode_needs_data_shapes():
    with pytest.raises(mx.KilnError, match="data_shapes"):
        quantize(calib_mode="none", calib_data=None)


def gluon_net():
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Conv2D(8, 3, padding=1, activation="relu"), mx.gluon.nn.MaxPool2D(), mx.gluon.nn.Dense(10))
    net.initialize(mx.init.Xavier())
    return net


@pytest.mark.parametrize("calib_mode", ["naive", "entropy", "none"])
def test_quantize_net_within_tolerance_of_the_float_block(calib_mode):
    from kiln.contrib.quantization import quantize_net
    net = gluon_net()
    ref = net(mx.nd.array(TEST)).asnumpy()
    qnet = quantize_net(net, calib_data=CALIB, calib_mode=calib_mode)
    out = qnet(mx.nd.array(TEST)).asnumpy()
    assert_close_to_fp32(out, ref)
    assert np.abs(out - ref).max() > 1e-5
    # The exported network keeps its batch dimension free, and so does the quantized one.
    assert_close_to_fp32(qnet(mx.nd.array(TEST[:3])).asnumpy(), ref[:3])
    ops = [n["op"] for n in json.loads(qnet.symbol.tojson())["nodes"]]
    assert ops.count("_kiln_QuantizeLinear") == (0 if calib_mode == "none" else 4)


def test_quantize_net_exclusions_and_shapes(tmp_path):
    from kiln.contrib.quantization import quantize_net
    net = gluon_net()
    qnet = quantize_net(net, calib_data=[(b, np.zeros(SHAPE[0])) for b in CALIB], calib_mode="naive",
                        exclude_layers_match=["Gemm"])
    weights = {k: v.dtype for k, v in qnet.arg_params.items() if v.ndim >= 2}  # Gluon names them dense<i>_...
    assert sorted(weights.values(), key=str) == [np.float32, np.int8]  # the conv's int8, the Dense's float
    assert [k for k, v in weights.items() if v == np.float32][0].startswith("dense")
    qnet.export(str(tmp_path / "q"))
    out = mx.Predictor(str(tmp_path / "q-symbol.json")).predict([TEST])[0].asnumpy()
    np.testing.assert_array_equal(out, qnet(TEST).asnumpy())
    with pytest.raises(mx.KilnError, match="data_shapes"):
        quantize_net(net)


def test_logger_reports_each_calibration_batch(caplog):
    import logging
    logger = logging.getLogger("kiln.test.calibration")
    with caplog.at_level(logging.INFO, logger=logger.name):
        quantize(calib_mode="naive", logger=logger)
    batches = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Calibration: batch")]
    assert batches == [f"Calibration: batch {i + 1} ({(i + 1) * len(CALIB[0])} examples)" for i in range(len(CALIB))]
