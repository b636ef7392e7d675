"""ONNX models with the random ops (RandomUniform, RandomNormal, their Like forms, Bernoulli,
Multinomial) through mx.Predictor: output shapes and dtypes compared with ONNX Runtime, the draws
against their distributions (scipy's tests; ONNX Runtime's own draws are another generator's), a
seed attribute that repeats the draws on every call, and unseeded draws that change per call."""
import numpy as np
import onnxruntime  # noqa: F401 - ort_run needs it
import pytest
from onnx import TensorProto, helper
from scipy import stats

import kiln as mx
from onnx_models import model, ort_run, save


def random_model(path, seeded):
    seed = {"seed": 3.0} if seeded else {}
    nodes = [
        helper.make_node("RandomNormalLike", ["x"], ["normal"], mean=1.0, scale=2.0, **seed),
        helper.make_node("RandomUniform", [], ["uniform"], shape=[4000], low=-1.0, high=3.0,
                         dtype=TensorProto.DOUBLE, **seed),
        helper.make_node("Bernoulli", ["p"], ["coin"], **seed),
        helper.make_node("Multinomial", ["logits"], ["classes"], sample_size=3000, dtype=TensorProto.INT64, **seed),
        helper.make_node("RandomUniformLike", ["x"], ["like"], dtype=TensorProto.DOUBLE, **seed),
    ]
    graph = helper.make_graph(
        nodes, "random",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [40, 100]),
         helper.make_tensor_value_info("p", TensorProto.FLOAT, [2, 2000]),
         helper.make_tensor_value_info("logits", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("normal", TensorProto.FLOAT, [40, 100]),
         helper.make_tensor_value_info("uniform", TensorProto.DOUBLE, [4000]),
         helper.make_tensor_value_info("coin", TensorProto.FLOAT, [2, 2000]),
         helper.make_tensor_value_info("classes", TensorProto.INT64, [2, 3000]),
         helper.make_tensor_value_info("like", TensorProto.DOUBLE, [40, 100])])
    return save(model(graph, 18), path)


def feeds():
    return {"x": np.zeros((40, 100), np.float32), "p": np.tile(np.float32([[0.2], [0.9]]), (1, 2000)),
            "logits": np.log(np.float32([[0.5, 0.3, 0.2], [0.05, 0.05, 0.9]]))}


def test_random_ops_draw_from_their_distributions_in_onnxruntimes_shapes(tmp_path):
    path = random_model(tmp_path / "random.onnx", seeded=False)
    got = [g.asnumpy() for g in mx.Predictor(path).predict(feeds())]
    for g, w in zip(got, ort_run(path, feeds())):
        assert g.shape == w.shape and g.dtype == w.dtype
    normal, uniform, coin, classes, like = got
    assert stats.kstest(normal.ravel(), stats.norm(1, 2).cdf).pvalue > 1e-3
    assert stats.kstest(uniform, stats.uniform(-1, 4).cdf).pvalue > 1e-3
    np.testing.assert_allclose(coin.mean(axis=1), [0.2, 0.9], atol=0.03)
    assert set(np.unique(coin)) <= {0.0, 1.0}
    np.testing.assert_allclose(np.bincount(classes[0], minlength=3) / 3000, [0.5, 0.3, 0.2], atol=0.03)
    np.testing.assert_allclose(np.bincount(classes[1], minlength=3) / 3000, [0.05, 0.05, 0.9], atol=0.03)
    assert like.min() >= 0 and like.max() < 1 and abs(like.mean() - 0.5) < 0.02


@pytest.mark.parametrize("seeded", [True, False])
def test_a_seed_repeats_the_draws_and_no_seed_changes_them(tmp_path, seeded):
    p = mx.Predictor(random_model(tmp_path / "random.onnx", seeded))
    first = [g.asnumpy() for g in p.predict(feeds())]
    second = [g.asnumpy() for g in p.predict(feeds())]
    for a, b in zip(first, second):
        assert np.array_equal(a, b) == seeded


def test_probabilities_outside_zero_to_one_are_refused(tmp_path):
    p = mx.Predictor(random_model(tmp_path / "random.onnx", seeded=True))
    bad = feeds()
    bad["p"][1, 7] = 1.5
    with pytest.raises(mx.KilnError, match="probabilities must lie in \\[0, 1\\], got 1.5 at element 2007"):
        p.predict(bad)
    assert p.predict(feeds())[0].shape == (40, 100)  # still usable
