"""Gluon losses written in Python (LogisticLoss, CosineEmbeddingLoss, PoissonNLLLoss) against
real MXNet 1.9.1 running the same calls on the same inputs; split_data's cuts, Block.apply's order,
and symbols through pickle, copy and abs()."""
import json

import numpy as np
import pytest

import kiln as mx

RNG = np.random.default_rng(7)
PRED = RNG.uniform(-4, 4, (6, 3)).round(3)
BINARY = RNG.integers(0, 2, (6, 3)).astype(np.float32)
A, B = RNG.normal(size=(5, 4)).round(3), RNG.normal(size=(5, 4)).round(3)
SIGNS = np.array([1, -1, 1, -1, -1], dtype=np.float32)
RATE = RNG.uniform(0.1, 3, (4, 3)).round(3)
COUNTS = RNG.integers(0, 6, (4, 3)).astype(np.float32)
WEIGHT = RNG.uniform(0, 1, (6, 1)).round(3)

CALLS = [
    "gluon.loss.LogisticLoss()(nd.array(PRED), 2 * nd.array(BINARY) - 1)",
    "gluon.loss.LogisticLoss(label_format='binary')(nd.array(PRED), nd.array(BINARY))",
    "gluon.loss.LogisticLoss(weight=0.5)(nd.array(PRED), nd.array(BINARY), nd.array(WEIGHT))",
    "gluon.loss.CosineEmbeddingLoss()(nd.array(A), nd.array(B), nd.array(SIGNS))",
    "gluon.loss.CosineEmbeddingLoss(margin=0.2)(nd.array(A), nd.array(B), nd.array(SIGNS))",
    "gluon.loss.PoissonNLLLoss()(nd.array(RATE), nd.array(COUNTS))",
    "gluon.loss.PoissonNLLLoss(from_logits=False)(nd.array(RATE), nd.array(COUNTS))",
    "gluon.loss.PoissonNLLLoss(from_logits=False, compute_full=True)(nd.array(RATE), nd.array(COUNTS))",
]


def _inputs():
    return {"PRED": PRED.tolist(), "BINARY": BINARY.tolist(), "A": A.tolist(), "B": B.tolist(),
            "SIGNS": SIGNS.tolist(), "RATE": RATE.tolist(), "COUNTS": COUNTS.tolist(), "WEIGHT": WEIGHT.tolist()}


def test_python_losses_match_mxnet(run_mxnet):
    script = ("import json, numpy as np, mxnet as mx\nfrom mxnet import gluon, nd\n"
              f"globals().update({{k: np.array(v, dtype='float32') for k, v in {_inputs()!r}.items()}})\n"
              f"print(json.dumps([eval(c).asnumpy().tolist() for c in {CALLS!r}]))")
    want = json.loads(run_mxnet(script))
    scope = {"gluon": mx.gluon, "nd": mx.nd}
    scope.update({k: np.array(v, dtype="float32") for k, v in _inputs().items()})
    for call, expected in zip(CALLS, want):
        got = eval(call, scope)  # noqa: S307 - the calls above
        np.testing.assert_allclose(got.asnumpy(), np.array(expected, dtype=np.float32).reshape(got.shape),
                                   rtol=1e-5, atol=1e-6, err_msg=call)


def test_python_losses_train_through_autograd():
    pred = mx.nd.array(PRED)
    pred.attach_grad()
    with mx.autograd.record():
        loss = mx.gluon.loss.LogisticLoss(label_format="binary")(pred, mx.nd.array(BINARY))
    loss.backward()
    # d/dp mean_j log(1 + exp(-p y)) with y = 2b - 1 is -y sigmoid(-p y) / 3.
    y = 2 * BINARY - 1
    want = -y / (1 + np.exp(PRED * y)) / PRED.shape[1]
    np.testing.assert_allclose(pred.grad.asnumpy(), want, rtol=1e-5, atol=1e-6)


def test_split_data_cuts_as_mxnet():
    x = mx.nd.arange(30).reshape((10, 3))
    parts = mx.gluon.utils.split_data(x, 3, even_split=False)
    assert [p.shape for p in parts] == [(4, 3), (3, 3), (3, 3)]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x.asnumpy())
    assert [p.shape for p in mx.gluon.utils.split_data(x, 3, batch_axis=1)] == [(10, 1)] * 3
    with pytest.raises(ValueError, match="does not split evenly"):
        mx.gluon.utils.split_data(x, 3)
    with pytest.raises(ValueError, match="cannot make 11 parts"):
        mx.gluon.utils.split_data(x, 11, even_split=False)


def test_apply_visits_children_before_their_parent():
    net = mx.gluon.nn.HybridSequential(prefix="test_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(10))
        net.add(mx.gluon.nn.Dropout(0.5))
    seen = []
    assert net.apply(lambda block: seen.append(block.name)) is net
    assert seen == ["test_dense0", "test_dropout0", "test"]


def test_symbols_pickle_and_copy_through_their_json():
    import copy
    import pickle

    data = mx.sym.Variable("data")
    net = mx.sym.FullyConnected(data, num_hidden=4, name="fc")
    for clone in (pickle.loads(pickle.dumps(net)), copy.copy(net), copy.deepcopy(net)):
        assert clone.tojson() == net.tojson()
    np.testing.assert_array_equal(abs(data).eval(data=mx.nd.array([-1.5, 2]))[0].asnumpy(), [1.5, 2])
    # MXNet's math ops import with MXNet's rounding rules.
    x = mx.nd.array([-1.5, 2.5, 0.25])
    np.testing.assert_array_equal(mx.sym.round(data).eval(data=x)[0].asnumpy(), [-2, 3, 0])
    np.testing.assert_array_equal(mx.sym.fix(data).eval(data=x)[0].asnumpy(), [-1, 2, 0])
    np.testing.assert_allclose(mx.sym.log1p(mx.sym.exp(data)).eval(data=x)[0].asnumpy(),
                               np.log1p(np.exp(x.asnumpy())), rtol=1e-6)
