"""kiln.sym (composition, infer_shape, tojson, save/load, simple_bind, bind, forward, backward),
kiln.Predictor and kiln.profiler, against numpy and MXNet 1.9.1."""
import json

import numpy as np
import pytest

import kiln as mx

RNG = np.random.RandomState(3)


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def mlp():
    net = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data=net, name="fc1", num_hidden=8)
    net = mx.sym.Activation(data=net, name="relu1", act_type="relu")
    return mx.sym.FullyConnected(data=net, name="fc2", num_hidden=3)


def test_listing_and_infer_shape():
    net = mlp()
    assert net.list_arguments() == ["data", "fc1_weight", "fc1_bias", "fc2_weight", "fc2_bias"]
    assert net.list_outputs() == ["fc2_output"]
    args, outs, aux = net.infer_shape(data=(4, 5))
    assert args == [(4, 5), (8, 5), (8,), (3, 8), (3,)] and outs == [(4, 3)] and aux == []
    assert net.infer_shape() == (None, None, None)
    bn = mx.sym.BatchNorm(mx.sym.Variable("x"), name="bn")
    assert bn.list_auxiliary_states() == ["bn_moving_mean", "bn_moving_var"]
    with pytest.raises(mx.KilnError, match="fc1"):
        net.infer_shape(data=(4, 5), fc1_weight=(7, 5))


def test_arithmetic_and_generic_ops():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    c = (a + b) * 2 - a / b
    x, y = rand(2, 3), rand(2, 3) + 2
    out = c.eval(ctx=mx.cpu(), a=mx.nd.array(x), b=mx.nd.array(y))[0]
    np.testing.assert_allclose(out.asnumpy(), (x + y) * 2 - x / y, rtol=1e-5)
    d = mx.sym.reshape(mx.sym.dot(a, b), shape=(1, 4))
    ex = d.bind(mx.cpu(), {"a": mx.nd.array(x[:, :2]), "b": mx.nd.array(y[:2, :2])})
    np.testing.assert_allclose(ex.forward()[0].asnumpy(), (x[:, :2] @ y[:2, :2]).reshape(1, 4), rtol=1e-5)
    r = 1 - a
    np.testing.assert_allclose(r.eval(a=mx.nd.array(x))[0].asnumpy(), 1 - x, rtol=1e-6)


def test_simple_bind_forward_backward_against_numpy():
    net = mlp()
    exe = net.simple_bind(mx.cpu(), data=(4, 5))
    params = {n: rand(*exe.arg_dict[n].shape) for n in net.list_arguments() if n != "data"}
    exe.copy_params_from({k: mx.nd.array(v) for k, v in params.items()})
    x = rand(4, 5)
    hidden = np.maximum(x @ params["fc1_weight"].T + params["fc1_bias"], 0)
    expected = hidden @ params["fc2_weight"].T + params["fc2_bias"]
    (out,) = exe.forward(data=mx.nd.array(x))
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exe.outputs[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)
    exe.forward(is_train=True, data=mx.nd.array(x))
    exe.backward(mx.nd.ones((4, 3)))
    np.testing.assert_allclose(exe.grad_dict["fc2_bias"].asnumpy(), np.full(3, 4.0), rtol=1e-6)
    np.testing.assert_allclose(exe.grad_dict["fc2_weight"].asnumpy(), np.ones((3, 4)) @ hidden, rtol=1e-5)


def test_tojson_save_load(tmp_path):
    net = mlp()
    doc = json.loads(net.tojson())
    assert [n["op"] for n in doc["nodes"]].count("FullyConnected") == 2
    path = str(tmp_path / "net-symbol.json")
    net.save(path)
    again = mx.sym.load(path)
    assert again.tojson() == net.tojson()
    assert mx.sym.load_json(net.tojson()).list_arguments() == net.list_arguments()


def test_symbol_json_loads_in_mxnet(tmp_path, run_mxnet):
    path = str(tmp_path / "net-symbol.json")
    mlp().save(path)
    out = run_mxnet(f"""
import mxnet as mx
s = mx.sym.load({path!r})
print(s.list_arguments(), s.infer_shape(data=(4, 5))[1])
""")
    assert out.strip() == "['data', 'fc1_weight', 'fc1_bias', 'fc2_weight', 'fc2_bias'] [(4, 3)]"


def test_predictor_matches_the_block(tmp_path):
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(16, activation="relu"), mx.gluon.nn.Dense(4))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = rand(2, 10)
    expected = net(mx.nd.array(x)).asnumpy()
    net.export(str(tmp_path / "mlp"))
    p = mx.Predictor(str(tmp_path / "mlp"), opt_level="all")
    assert p.input_names == ["data"] and len(p.output_names) == 1
    np.testing.assert_allclose(p.predict([x])[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.predict({"data": mx.nd.array(x)})[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(p.predict(data=x)[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert p.num_cached_plans == 1
    with pytest.raises(mx.KilnError, match="data"):
        p.predict([rand(2, 11)])
    np.testing.assert_allclose(p.predict([x])[0].asnumpy(), expected, rtol=1e-5, atol=1e-6)  # still usable


def test_profiler_writes_chrome_trace(tmp_path):
    path = str(tmp_path / "profile.json")
    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename=path)
    mx.profiler.set_state("run")
    a = mx.nd.ones((64, 64))
    mx.nd.dot(a, a).wait_to_read()
    mx.profiler.set_state("stop")
    mx.profiler.dump()
    events = json.load(open(path))["traceEvents"]
    assert any(e.get("name") == "MatMul" for e in events)
    assert "MatMul" in mx.profiler.dumps(reset=True)
    with pytest.raises(mx.KilnError, match="run"):
        mx.profiler.set_state("go")


def test_predictor_from_several_python_threads(tmp_path):
    from concurrent.futures import ThreadPoolExecutor
    net = mx.gluon.nn.HybridSequential()
    net.add(mx.gluon.nn.Dense(32, activation="relu"), mx.gluon.nn.Dense(4))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    inputs = [rand(3, 8) for _ in range(16)]
    expected = [net(mx.nd.array(x)).asnumpy() for x in inputs]
    net.export(str(tmp_path / "mlp"))
    p = mx.Predictor(str(tmp_path / "mlp"))
    with ThreadPoolExecutor(max_workers=4) as pool:  # predict releases the GIL: the calls overlap
        outputs = list(pool.map(lambda x: p.predict([x])[0].asnumpy(), inputs))
    for out, exp in zip(outputs, expected):
        np.testing.assert_allclose(out, exp, rtol=1e-5, atol=1e-6)
