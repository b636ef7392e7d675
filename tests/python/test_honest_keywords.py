"""Every keyword the Python API accepts does what it says or is refused: mx.nd's out= and name=,
creation contexts and stypes, mx.sym's layout, attr= and Variable(init=), the Predictor's threads
and its inputs, quantize_model's granularity and mode; and a Predictor given the parameters of
another model fails when it loads, naming the file and what it holds."""
import json

import numpy as np
import pytest

import kiln as mx
from kiln.contrib.quantization import quantize_model


def test_nd_out_writes_into_the_given_array():
    x = mx.nd.array([[1.0, 4.0], [9.0, 16.0]])
    for fn, want in [(mx.nd.sqrt, np.sqrt), (mx.nd.exp, np.exp)]:
        out = mx.nd.zeros((2, 2))
        assert fn(x, out=out) is out
        np.testing.assert_allclose(out.asnumpy(), want(x.asnumpy()), rtol=1e-6)
    out = mx.nd.zeros((2,))
    mx.nd.sum(x, axis=0, out=out)
    np.testing.assert_allclose(out.asnumpy(), [10.0, 20.0])
    with pytest.raises(ValueError, match="out= has shape"):
        mx.nd.sqrt(x, out=mx.nd.zeros((3,)))
    assert mx.nd.sqrt(x, name="root").shape == (2, 2)  # name= is ignored, as MXNet's imperative calls do


def test_nd_unknown_keywords_are_refused():
    x = mx.nd.ones((2, 2))
    for call in (lambda: mx.nd.sqrt(x, bogus=1), lambda: mx.nd.sum(x, axes=1), lambda: mx.nd.reshape(x, (4,), rev=1),
                 lambda: mx.nd.concat(x, x, dimension=0)):
        with pytest.raises(TypeError, match="unexpected keyword"):
            call()
    with pytest.raises(ValueError, match="stype 'csr'"):
        mx.nd.zeros((2, 2), stype="csr")
    a = mx.nd.arange(4, ctx=mx.cpu())
    assert a.context == mx.cpu() and a.asnumpy().tolist() == [0, 1, 2, 3]


def test_sym_layout_attr_and_init():
    data = mx.sym.Variable("data")
    with pytest.raises(ValueError, match="layout 'NHWC'"):
        mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), layout="NHWC")
    with pytest.raises(ValueError, match="layout 'NHWC'"):
        mx.sym.Pooling(data, kernel=(2, 2), layout="NHWC")
    conv = mx.sym.Convolution(data, num_filter=4, kernel=(3, 3), layout="NCHW", attr={"lr_mult": "0.5"}, name="c")
    node = [n for n in json.loads(conv.tojson())["nodes"] if n["name"] == "c"][0]
    assert node["attrs"]["lr_mult"] == "0.5" and node["attrs"]["num_filter"] == "4", node
    assert conv.list_arguments() == ["data", "c_weight", "c_bias"]
    for init, name, kwargs in [(mx.init.Normal(0.02), "normal", {"sigma": 0.02}),
                               (mx.init.Uniform(0.5), "uniform", {"scale": 0.5}),
                               (mx.init.Constant(3), "constant", {"value": 3.0}),
                               (mx.init.Zero(), "zero", {}),
                               (mx.init.Xavier("gaussian", "in", 2), "xavier",
                                {"rnd_type": "gaussian", "factor_type": "in", "magnitude": 2.0})]:
        w = mx.sym.Variable("w", init=init)
        written = json.loads(w.tojson())["nodes"][0]["attrs"]["__init__"]
        assert written == json.dumps([name, kwargs]), written  # MXNet's Initializer.dumps() form
    assert json.loads(mx.sym.Variable("w", init='["one", {}]').tojson())["nodes"][0]["attrs"]["__init__"] == \
        '["one", {}]'
    with pytest.raises(TypeError, match="init"):
        mx.sym.Variable("w", init=0.5)
    with pytest.raises(TypeError, match="unexpected keyword 'shapes'"):
        mx.sym.Variable("w", shapes=(2,))


def test_predictor_threads_and_inputs(tmp_path):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(3))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = np.random.RandomState(0).uniform(-1, 1, (4, 6)).astype(np.float32)
    expected = net(mx.nd.array(x)).asnumpy()
    net.export(str(tmp_path / "dense"))
    with pytest.raises(mx.KilnError, match="threads must be 0"):
        mx.Predictor(str(tmp_path / "dense"), threads=-1)
    with pytest.raises(mx.KilnError, match="precision"):
        mx.Predictor(str(tmp_path / "dense"), kernels="reference", precision="bf16")
    p = mx.Predictor(str(tmp_path / "dense"))
    with pytest.raises(TypeError, match=r"needs the inputs \(data\)"):
        p.predict()
    strided = np.asfortranarray(x)  # the same values, column-major
    assert not strided.flags.c_contiguous
    np.testing.assert_allclose(p.predict([strided])[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)
    wide = np.zeros((4, 12), np.float32)
    wide[:, ::2] = x
    np.testing.assert_allclose(p.predict([wide[:, ::2]])[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)


def test_quantize_refuses_what_it_does_not_do():
    data = mx.sym.Variable("data")
    fc = mx.sym.FullyConnected(data, num_hidden=2, name="fc")
    args = {"fc_weight": mx.nd.ones((2, 3)), "fc_bias": mx.nd.zeros((2,))}
    calib = [np.ones((2, 3), np.float32)]
    with pytest.raises(mx.KilnError, match="quantize_granularity must be 'channel-wise'"):
        quantize_model(fc, args, {}, calib_data=calib, calib_mode="naive", quantize_granularity="tensor-wise")
    with pytest.raises(mx.KilnError, match="quantize_mode must be 'smart'"):
        quantize_model(fc, args, {}, calib_data=calib, calib_mode="naive", quantize_mode="full")
    qsym, _, _ = quantize_model(fc, args, {}, calib_data=calib, calib_mode="naive",
                                quantize_granularity="channel-wise")
    assert qsym is not None


def test_predictor_refuses_the_parameters_of_another_model(tmp_path):
    import shutil
    for prefix, units in [("first", 3), ("second", 5)]:
        net = mx.gluon.nn.HybridSequential()
        net.add(mx.gluon.nn.Dense(units))
        net.initialize(mx.init.Xavier())
        net.hybridize()
        net(mx.nd.ones((1, 4)))
        net.export(str(tmp_path / prefix))
    shutil.copy(tmp_path / "second-0000.params", tmp_path / "first-0000.params")
    with pytest.raises(mx.KilnError, match=r"parameter '(dense\d+)_weight' \(read by FullyConnected '[^']+'\) and 1 "
                                           r"more are not in .*first-0000.params', which holds 2 arrays "
                                           r"\(arg:(?!\1)dense\d+_weight, arg:dense\d+_bias\)"):
        mx.Predictor(str(tmp_path / "first"))


def test_gluon_prefix_names_parameters_and_shared_params_are_refused():
    net = mx.gluon.nn.HybridSequential(prefix="net_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(3, in_units=2))
    assert sorted(net.collect_params().keys()) == ["net_dense0_bias", "net_dense0_weight"]

    class Two(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x

    assert Two(prefix="two_").prefix == "two_"
    with pytest.raises(NotImplementedError, match=r"Two\(params=...\): sharing another block's parameters"):
        Two(params=net.collect_params())
