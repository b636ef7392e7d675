"""kiln.gluon against numpy and closed forms: layers, Python blocks (imperative and hybridized),
losses, Trainer updates, data loading, initializers, metrics, save/load and export."""
import contextlib
import io
import os

import numpy as np
import pytest

import kiln as mx
from kiln import autograd, gluon, nd
from kiln.gluon import nn

RNG = np.random.RandomState(2)


def rand(*shape):
    return RNG.uniform(-1, 1, shape).astype(np.float32)


def test_dense_matches_numpy_and_names():
    layer = nn.Dense(4, activation="relu", in_units=3)
    layer.initialize(mx.init.Xavier())
    x = rand(5, 3)
    w = layer.weight.data().asnumpy()
    b = layer.bias.data().asnumpy()
    np.testing.assert_allclose(layer(nd.array(x)).asnumpy(), np.maximum(x @ w.T + b, 0), rtol=1e-5, atol=1e-6)
    assert layer.weight.name.endswith("_weight") and layer.weight.shape == (4, 3)
    limit = np.sqrt(3.0 / ((3 + 4) / 2))
    assert np.abs(w).max() <= limit


def test_deferred_initialization_and_sequential():
    net = nn.Sequential()
    with net.name_scope():
        net.add(nn.Dense(8), nn.Dense(2))
    net.initialize()
    out = net(nd.ones((3, 5)))
    assert out.shape == (3, 2)
    params = net.collect_params()
    assert [params[k].shape for k in params.keys()] == [(8, 5), (8,), (2, 8), (2,)]
    assert all(k.startswith(net.prefix) for k in params.keys())
    with pytest.raises(KeyError):
        params["no_such_weight"]
    assert len(net) == 2 and isinstance(net[1], nn.Dense)


class Residual(gluon.HybridBlock):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.dense = nn.Dense(units, in_units=units)
            self.scale = self.params.get("scale", shape=(units,), init=mx.init.Constant(0.5))

    def hybrid_forward(self, F, x, scale):
        return F.relu(self.dense(x)) * scale + x


class Plain(gluon.Block):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.body = nn.Dense(3, in_units=4)

    def forward(self, x):
        y = self.body(x)
        return y * 2 if y.sum().asscalar() > -1e9 else y  # Python control flow is fine imperatively


def test_python_blocks_imperative_and_hybridized():
    net = Residual(4)
    net.initialize(mx.init.Xavier())
    assert set(net.collect_params().keys()) == {"residual0_dense0_weight", "residual0_dense0_bias",
                                                "residual0_scale"}
    x = nd.array(rand(2, 4))
    w, b = net.dense.weight.data().asnumpy(), net.dense.bias.data().asnumpy()
    expected = np.maximum(x.asnumpy() @ w.T + b, 0) * 0.5 + x.asnumpy()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    x.attach_grad()
    with autograd.record():
        y = net(x).sum()
    y.backward()
    mask = (x.asnumpy() @ w.T + b) > 0
    np.testing.assert_allclose(x.grad.asnumpy(), (mask * 0.5) @ w + 1, rtol=1e-5, atol=1e-6)
    plain = Plain()
    plain.initialize()
    assert plain(nd.ones((1, 4))).shape == (1, 3)
    assert "body" in dict(plain._children())


@pytest.mark.parametrize("hybridize", [False, True])
def test_conv_pool_batchnorm_forward(hybridize):
    net = nn.HybridSequential()
    net.add(nn.Conv2D(4, kernel_size=3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(2),
            nn.GlobalAvgPool2D(), nn.Flatten())
    net.initialize()
    if hybridize:
        net.hybridize()
    x = nd.array(rand(2, 3, 8, 8))
    assert net(x).shape == (2, 4)
    with autograd.record():
        out = net(x)
    assert out.shape == (2, 4)


def test_losses_against_numpy():
    pred, label = rand(4, 5), np.array([0, 3, 1, 4])
    log_p = pred - np.log(np.exp(pred).sum(1, keepdims=True))
    ce = gluon.loss.SoftmaxCrossEntropyLoss()(nd.array(pred), nd.array(label))
    np.testing.assert_allclose(ce.asnumpy(), -log_p[np.arange(4), label], rtol=1e-5)
    target = rand(4, 5)
    np.testing.assert_allclose(gluon.loss.L2Loss()(nd.array(pred), nd.array(target)).asnumpy(),
                               ((pred - target) ** 2 / 2).mean(1), rtol=1e-5)
    np.testing.assert_allclose(gluon.loss.L1Loss()(nd.array(pred), nd.array(target)).asnumpy(),
                               np.abs(pred - target).mean(1), rtol=1e-5)


def test_trainer_sgd_step_is_closed_form():
    layer = nn.Dense(1, in_units=2, use_bias=False)
    layer.initialize(mx.init.Constant(1.0))
    trainer = gluon.Trainer(layer.collect_params(), "sgd", {"learning_rate": 0.1})
    x = nd.array([[1.0, 2.0], [3.0, 4.0]])
    with autograd.record():
        loss = layer(x).sum()
    loss.backward()
    trainer.step(2)
    # d(loss)/dw = column sums of x = [4, 6], rescaled by 1 / batch_size.
    np.testing.assert_allclose(layer.weight.data().asnumpy(), [[1 - 0.1 * 2, 1 - 0.1 * 3]], rtol=1e-6)
    assert trainer.learning_rate == pytest.approx(0.1)
    trainer.set_learning_rate(0.5)
    assert trainer.learning_rate == pytest.approx(0.5)


def test_data_loader_covers_every_sample():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    y = np.arange(10, dtype=np.int64)
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(x, y), batch_size=4, shuffle=True)
    seen = []
    sizes = []
    for data, label in loader:
        np.testing.assert_array_equal(data.asnumpy()[:, 0], label.asnumpy())
        assert label.dtype == np.int64
        seen.extend(label.asnumpy().tolist())
        sizes.append(data.shape[0])
    assert sorted(seen) == list(range(10)) and sizes == [4, 4, 2] and len(loader) == 3
    discard = gluon.data.DataLoader(gluon.data.ArrayDataset(x), batch_size=4, last_batch="discard")
    assert [b.shape[0] for b in discard] == [4, 4]

    class Squares(gluon.data.Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return np.float32(i * i), i

    batches = list(gluon.data.DataLoader(Squares(), batch_size=2))
    np.testing.assert_array_equal(batches[1][0].asnumpy(), [4, 9])


# Lists the batches that samplers and DataLoaders give, run with `mx` = kiln here and = MXNet 1.9.1
# under run_mxnet: the printed lists must agree.
SAMPLER_CASES = """
import numpy as np
data = mx.gluon.data
seq = data.SequentialSampler(7, start=2)
cases = {"sequential": list(seq), "len": len(seq)}
for last in ("keep", "discard", "rollover"):
    batches = data.BatchSampler(data.SequentialSampler(10), 3, last)
    cases[last] = [len(batches), [list(map(int, b)) for b in batches], len(batches),
                   [list(map(int, b)) for b in batches], len(batches)]
np.random.seed(3)
cases["random"] = [int(i) for i in data.RandomSampler(9)]
cases["filter"] = list(data.FilterSampler(lambda s: s % 3 == 0, list(range(10))))
x = np.arange(11, dtype=np.float32).reshape(11, 1)
y = np.arange(11, dtype=np.int64) * 10
dataset = data.ArrayDataset(x, y)
def epoch(loader):
    return [len(loader), [[b[0].asnumpy()[:, 0].tolist(), b[1].asnumpy().tolist()] for b in loader]]
np.random.seed(5)
cases["shuffle"] = epoch(data.DataLoader(dataset, batch_size=4, shuffle=True)) + \
    epoch(data.DataLoader(dataset, batch_size=4, shuffle=True, last_batch="discard"))
rollover = data.DataLoader(dataset, batch_size=4, last_batch="rollover")
cases["rollover_loader"] = epoch(rollover) + epoch(rollover) + epoch(rollover)
cases["sampler"] = epoch(data.DataLoader(dataset, batch_size=3, sampler=data.SequentialSampler(5, start=4)))
cases["batch_sampler"] = epoch(data.DataLoader(dataset, batch_sampler=data.BatchSampler(
    data.FilterSampler(lambda s: s[1] % 20 == 0, dataset), 2, "keep")))
errors = []
for kwargs in ({"batch_size": 2, "shuffle": True, "sampler": data.SequentialSampler(3)},
               {"batch_sampler": data.BatchSampler(data.SequentialSampler(3), 2), "batch_size": 2},
               {"batch_sampler": data.BatchSampler(data.SequentialSampler(3), 2), "last_batch": "keep"},
               {}):
    try:
        data.DataLoader(dataset, **kwargs)
        errors.append(None)
    except ValueError:
        errors.append("ValueError")
cases["errors"] = errors
print(repr(cases))
"""


def test_samplers_and_data_loader_match_mxnet(run_mxnet):
    scope = {"mx": mx}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(SAMPLER_CASES, scope)
    ours = eval(out.getvalue())
    assert ours["keep"][1] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert ours["rollover"][3][0] == [9, 0, 1]  # the carried sample opens the next epoch
    theirs = eval(run_mxnet("import mxnet as mx\n" + SAMPLER_CASES))
    assert ours == theirs


def test_metrics_against_numpy():
    pred, label = rand(20, 3), RNG.randint(0, 3, 20)
    acc = mx.metric.Accuracy()
    acc.update(nd.array(label), nd.array(pred))
    assert acc.get() == ("accuracy", pytest.approx(float((pred.argmax(1) == label).mean())))
    mse = mx.metric.create("mse")
    mse.update([nd.array(pred[:, 0])], [nd.array(pred[:, 1])])
    assert mse.get()[1] == pytest.approx(float(((pred[:, 0] - pred[:, 1]) ** 2).mean()), rel=1e-5)
    composite = mx.metric.create(["acc", "ce"])
    composite.update(nd.array(label), nd.softmax(nd.array(pred)))
    assert composite.get()[0] == ["accuracy", "cross-entropy"]


def test_save_load_parameters_and_export(tmp_path):
    net = nn.HybridSequential()
    net.add(nn.Dense(6, activation="relu"), nn.Dense(3))
    net.initialize(mx.init.Xavier())
    x = nd.array(rand(4, 5))
    expected = net(x).asnumpy()
    path = str(tmp_path / "net.params")
    net.save_parameters(path)
    other = nn.HybridSequential()
    other.add(nn.Dense(6, activation="relu"), nn.Dense(3))
    other.load_parameters(path)
    np.testing.assert_allclose(other(x).asnumpy(), expected, rtol=1e-6)
    net.hybridize()
    net(x)
    prefix = str(tmp_path / "mlp")
    net.export(prefix, epoch=3)
    assert os.path.exists(prefix + "-symbol.json") and os.path.exists(prefix + "-0003.params")
    predictor = mx.Predictor(prefix + "-symbol.json")
    (out,) = predictor.predict([x.asnumpy()])
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(mx.KilnError, match="missing|not found|No such"):
        other.load_parameters(str(tmp_path / "missing.params"))


def test_exported_model_loads_in_mxnet(tmp_path, run_mxnet):
    net = nn.HybridSequential()
    net.add(nn.Dense(5, activation="tanh"), nn.Dense(2))
    net.initialize(mx.init.Xavier())
    net.hybridize()
    x = rand(3, 4)
    expected = net(nd.array(x)).asnumpy()
    prefix = str(tmp_path / "net")
    net.export(prefix)
    np.save(str(tmp_path / "x.npy"), x)
    out = run_mxnet(f"""
import mxnet as mx, numpy as np
block = mx.gluon.SymbolBlock.imports({prefix + '-symbol.json'!r}, ['data'], {prefix + '-0000.params'!r})
print(repr(block(mx.nd.array(np.load({str(tmp_path / 'x.npy')!r}))).asnumpy().tolist()))
""")
    np.testing.assert_allclose(np.array(eval(out)), expected, rtol=1e-5, atol=1e-6)


class ConvHead(nn.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.conv = nn.Conv2D(3, 3)
        self.out = nn.Dense(4, flatten=False)

    def hybrid_forward(self, F, x):
        return self.out(F.flatten(self.conv(x)))


def test_export_keeps_the_batch_free(tmp_path, run_mxnet):
    net = ConvHead()
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(nd.array(rand(2, 2, 6, 6)))  # traced at batch 2
    prefix = str(tmp_path / "net")
    net.export(prefix)
    x = rand(5, 2, 6, 6)
    expected = net(nd.array(x)).asnumpy()
    assert expected.shape == (5, 4)
    (out,) = mx.Predictor(prefix + "-symbol.json").predict([x])
    np.testing.assert_allclose(out.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    np.save(str(tmp_path / "x.npy"), x)
    out = run_mxnet(f"""
import mxnet as mx, numpy as np
block = mx.gluon.SymbolBlock.imports({prefix + '-symbol.json'!r}, ['data'], {prefix + '-0000.params'!r})
print(repr(block(mx.nd.array(np.load({str(tmp_path / 'x.npy')!r}))).asnumpy().tolist()))
""")
    np.testing.assert_allclose(np.array(eval(out)), expected, rtol=1e-5, atol=1e-6)


def test_lr_schedulers_and_optimizer_objects():
    sched = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    assert [sched(n) for n in (1, 2, 3, 4, 5)] == [1.0, 1.0, 0.5, 0.5, 0.25]
    cosine = mx.lr_scheduler.CosineScheduler(max_update=10, base_lr=1.0, final_lr=0.0)
    assert cosine(5) == pytest.approx(0.5 * (1 + np.cos(np.pi * 5 / 10)))
    layer = nn.Dense(1, in_units=1, use_bias=False)
    layer.initialize(mx.init.Constant(0.0))
    trainer = gluon.Trainer(layer.collect_params(), mx.optimizer.SGD(lr_scheduler=sched))
    x = nd.array([[1.0]])
    for _ in range(3):
        with autograd.record():
            loss = layer(x).sum()
        loss.backward()
        trainer.step(1)
    # Each step subtracts the rate of its update number: 1 + 1 + 0.5.
    np.testing.assert_allclose(layer.weight.data().asnumpy(), [[-2.5]])
    adam = gluon.Trainer(layer.collect_params(), mx.optimizer.Adam(learning_rate=0.01))
    assert adam.learning_rate == pytest.approx(0.01)


def test_lambda_blocks():
    net = nn.HybridSequential()
    net.add(nn.Dense(3, in_units=2), nn.HybridLambda("tanh"), nn.HybridLambda(lambda F, x: x * 2))
    net.initialize()
    x = nd.array(rand(4, 2))
    expected = net(x).asnumpy()
    w, b = net[0].weight.data().asnumpy(), net[0].bias.data().asnumpy()
    np.testing.assert_allclose(expected, np.tanh(x.asnumpy() @ w.T + b) * 2, rtol=1e-5, atol=1e-6)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert nn.Lambda("relu")(nd.array([-1.0, 2.0])).asnumpy().tolist() == [0.0, 2.0]


NET_SOURCE = """
class Block(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(Block, self).__init__(**kwargs)
        with self.name_scope():
            self.body = nn.HybridSequential()
            self.body.add(nn.Dense(8, activation="relu"), nn.Dense(4))
            self.skip = nn.Dense(4)

    def hybrid_forward(self, F, x):
        return self.body(x) + self.skip(x)


net = nn.HybridSequential()
with net.name_scope():
    net.add(Block(), nn.Dense(2))
"""


def test_same_names_and_parameters_as_mxnet(tmp_path, run_mxnet):
    """The same Gluon code under Kiln and MXNet 1.9.1 names its parameters alike, and MXNet loads the
    parameters Kiln saved and computes the same output."""
    scope = {"gluon": gluon, "nn": nn}
    with mx.name.NameManager():  # names count from zero, as in the fresh MXNet process
        exec(NET_SOURCE, scope)
    net = scope["net"]
    net.initialize(mx.init.Xavier())
    x = rand(3, 5)
    expected = net(nd.array(x)).asnumpy()
    params = str(tmp_path / "net.params")
    net.save_parameters(params)
    np.save(str(tmp_path / "x.npy"), x)
    out = run_mxnet(f"""
import mxnet as mx, numpy as np
from mxnet import gluon
from mxnet.gluon import nn
{NET_SOURCE}
net.load_parameters({params!r})
print(sorted(net.collect_params().keys()))
print(repr(net(mx.nd.array(np.load({str(tmp_path / 'x.npy')!r}))).asnumpy().tolist()))
""")
    keys, values = out.strip().split("\n")
    assert eval(keys) == sorted(net.collect_params().keys())
    np.testing.assert_allclose(np.array(eval(values)), expected, rtol=1e-5, atol=1e-6)


def test_symbol_block_matches_mxnet_symbol_block(tmp_path, run_mxnet):
    """A network built and exported by MXNet 1.9.1, loaded by both SymbolBlock.imports: the same
    outputs in predict mode, and the same gradients and batch-statistics outputs when training."""
    x = rand(4, 3, 6, 6)
    np.save(str(tmp_path / "x.npy"), x)
    prefix = str(tmp_path / "mxnet_net")
    out = run_mxnet(f"""
import mxnet as mx, numpy as np
from mxnet.gluon import nn
mx.random.seed(1)
net = nn.HybridSequential()
with net.name_scope():
    net.add(nn.Conv2D(4, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"), nn.MaxPool2D(),
            nn.Dense(8), nn.PReLU(), nn.Dense(3))
net.initialize(mx.init.Xavier())
net.hybridize()
x = mx.nd.array(np.load({str(tmp_path / 'x.npy')!r}))
net(x)
net.export({prefix!r})
block = mx.gluon.SymbolBlock.imports({prefix + '-symbol.json'!r}, ['data'], {prefix + '-0000.params'!r})
predicted = block(x).asnumpy()
with mx.autograd.record():
    y = block(x)
    loss = (y * y).sum()
loss.backward()
grads = {{name: p.grad().asnumpy().tolist() for name, p in block.collect_params().items() if p.grad_req != 'null'}}
print(repr({{'predicted': predicted.tolist(), 'trained': y.asnumpy().tolist(), 'grads': grads}}))
""")
    want = eval(out)
    block = gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
    xs = nd.array(x)
    np.testing.assert_allclose(block(xs).asnumpy(), want["predicted"], rtol=1e-4, atol=1e-5)
    with autograd.record():
        y = block(xs)
        loss = (y * y).sum()
    loss.backward()
    np.testing.assert_allclose(y.asnumpy(), want["trained"], rtol=1e-4, atol=1e-5)
    params = block.collect_params()
    assert sorted(want["grads"]) == sorted(n for n in params.keys() if params[n].grad_req != "null")
    alpha = "hybridsequential0_prelu0_alpha"
    for name, grad in want["grads"].items():
        if name != alpha:
            np.testing.assert_allclose(params[name].grad().asnumpy(), grad, rtol=1e-3, atol=1e-4, err_msg=name)
    # MXNet 1.9.1 gives a shared PReLU slope 1/batch of its gradient; finite differences decide.
    slope, eps = params[alpha].data().asnumpy(), 1e-2

    def loss_with(value):
        params[alpha].set_data(nd.array(value))
        with autograd.record():  # training mode: batch statistics, as above
            return float((block(xs) ** 2).sum().asscalar())

    numeric = (loss_with(slope + eps) - loss_with(slope - eps)) / (2 * eps)
    np.testing.assert_allclose(params[alpha].grad().asnumpy(), [numeric], rtol=1e-2)
    np.testing.assert_allclose(params[alpha].grad().asnumpy(), np.array(want["grads"][alpha]) * len(x), rtol=1e-3)


def test_symbol_block_from_a_symbol_fine_tunes():
    data = mx.sym.Variable("data")
    hidden = mx.sym.FullyConnected(data, num_hidden=8, name="fc1")
    out = mx.sym.FullyConnected(mx.sym.Activation(hidden, act_type="relu"), num_hidden=1, name="fc2")
    rng = np.random.default_rng(0)
    params = {"fc1_weight": nd.array(rng.normal(size=(8, 2)).astype(np.float32) * 0.5),
              "fc1_bias": nd.zeros((8,)),
              "fc2_weight": nd.array(rng.normal(size=(1, 8)).astype(np.float32) * 0.5),
              "fc2_bias": nd.zeros((1,))}
    block = gluon.SymbolBlock(out, data, params)
    assert sorted(block.collect_params().keys()) == sorted(params)
    x = rng.normal(size=(32, 2)).astype(np.float32)
    w, b = params["fc1_weight"].asnumpy(), params["fc2_weight"].asnumpy()
    np.testing.assert_allclose(block(nd.array(x)).asnumpy(), np.maximum(x @ w.T, 0) @ b.T, rtol=1e-5, atol=1e-5)
    target = nd.array((x[:, :1] - x[:, 1:]).astype(np.float32))
    trainer = gluon.Trainer(block.collect_params(), "adam", {"learning_rate": 0.05})
    losses = []
    for _ in range(60):
        with autograd.record():
            loss = ((block(nd.array(x)) - target) ** 2).mean()
        loss.backward()
        trainer.step(1)
        losses.append(loss.asscalar())
    assert losses[-1] < 0.2 * losses[0]
    with pytest.raises(mx.KilnError, match="'image' is not an input of the graph"):
        gluon.SymbolBlock(out, "image", params)
