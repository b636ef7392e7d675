"""mx.random / mx.nd.random as MXNet 1.9 documents them: every distribution's shapes and dtypes for
number and NDArray parameters compared with real MXNet 1.9.1 (.venv-mxnet runs the same calls),
the draws' moments and distributions checked against the closed forms (scipy's tests), seeding that
reproduces draws, the MXNet operator names (nd.random_uniform, nd.sample_gamma, ...), nd.slice against
MXNet's values, and bad parameters refused by name. Draws cannot equal MXNet's own (another
generator); everything else about them is compared."""
import json
import re

import numpy as np
import pytest
from scipy import stats

import kiln as mx

# Calls written once, run by Kiln here and by MXNet in run_mxnet: (expression, label).
CALLS = [
    "mx.nd.random.uniform(0, 1)",
    "mx.nd.random.uniform(-1, 1, shape=(2, 3))",
    "mx.nd.random.uniform(mx.nd.array([0, 1]), mx.nd.array([1, 2]), shape=4)",
    "mx.nd.random.normal(0, 1, shape=(3,), dtype='float64')",
    "mx.nd.random.normal(mx.nd.array([[0], [1]]), mx.nd.array([[1], [2]]))",
    "mx.nd.random.randn(2, 5)",
    "mx.nd.random.gamma(2, 3, shape=(4, 1))",
    "mx.nd.random.gamma(mx.nd.array([1, 2, 3]), mx.nd.array([1, 1, 1]), shape=(2,))",
    "mx.nd.random.exponential(2, shape=5)",
    "mx.nd.random.poisson(3, shape=(2, 2))",
    "mx.nd.random.poisson(mx.nd.array([1, 4]))",
    "mx.nd.random.negative_binomial(3, 0.4, shape=(3,))",
    "mx.nd.random.generalized_negative_binomial(2, 0.5, shape=(3,))",
    "mx.nd.random.randint(0, 5, shape=(3, 2))",
    "mx.nd.random.randint(-3, 3, shape=(4,), dtype='int64')",
    "mx.nd.random.multinomial(mx.nd.array([[0.2, 0.8], [0.5, 0.5]]))",
    "mx.nd.random.multinomial(mx.nd.array([0.1, 0.2, 0.7]), shape=(2, 3))",
    "mx.nd.random.shuffle(mx.nd.arange(12).reshape((4, 3)))",
    "mx.random.uniform(0, 1, shape=(2,))",
    "mx.nd.random_uniform(low=0, high=1, shape=(2, 2))",
    "mx.nd.sample_gamma(mx.nd.array([1, 2]), mx.nd.array([1, 1]), shape=(3,))",
    "mx.nd.random_exponential(lam=4, shape=(2,))",
]


def describe(value):
    return [list(value.shape), np.dtype(value.dtype).name]


def test_random_shapes_and_dtypes_match_mxnet(run_mxnet):
    script = ("import json, mxnet as mx, numpy as np\n"
              f"calls = {CALLS!r}\n"
              "print(json.dumps([[list(v.shape), np.dtype(v.dtype).name] for v in (eval(c) for c in calls)]))")
    want = json.loads(run_mxnet(script))
    got = [describe(eval(c)) for c in CALLS]  # noqa: S307 - the calls above, not input
    for call, g, w in zip(CALLS, got, want):
        assert g == w, f"{call}: Kiln {g}, MXNet {w}"


@pytest.mark.parametrize("draw, distribution", [
    (lambda n: mx.nd.random.uniform(-2, 3, shape=n), stats.uniform(-2, 5)),
    (lambda n: mx.nd.random.normal(1.5, 2, shape=n, dtype="float64"), stats.norm(1.5, 2)),
    (lambda n: mx.nd.random.gamma(2.5, 0.5, shape=n), stats.gamma(2.5, scale=0.5)),
    (lambda n: mx.nd.random.gamma(0.3, 2, shape=n), stats.gamma(0.3, scale=2)),
    (lambda n: mx.nd.random.exponential(4, shape=n), stats.expon(scale=4)),
])
def test_continuous_draws_follow_their_distribution(draw, distribution):
    values = draw(20000).asnumpy().astype(np.float64)
    assert stats.kstest(values, distribution.cdf).pvalue > 1e-3
    assert abs(values.mean() - distribution.mean()) < 4 * distribution.std() / np.sqrt(values.size)


@pytest.mark.parametrize("draw, mean, variance", [
    (lambda n: mx.nd.random.poisson(3.5, shape=n), 3.5, 3.5),
    (lambda n: mx.nd.random.negative_binomial(3, 0.4, shape=n), 3 * 0.6 / 0.4, 3 * 0.6 / 0.16),
    (lambda n: mx.nd.random.negative_binomial(2.5, 0.7, shape=n), 2.5 * 0.3 / 0.7, 2.5 * 0.3 / 0.49),
    (lambda n: mx.nd.random.generalized_negative_binomial(4, 0.25, shape=n), 4, 4 + 0.25 * 16),
    (lambda n: mx.nd.random.generalized_negative_binomial(2, 0, shape=n), 2, 2),
    (lambda n: mx.nd.random.randint(-3, 5, shape=n), 0.5, (8 ** 2 - 1) / 12),
])
def test_discrete_draws_have_their_mean_and_variance(draw, mean, variance):
    values = draw(40000).asnumpy().astype(np.float64)
    assert np.all(values == np.round(values))
    assert abs(values.mean() - mean) < 5 * np.sqrt(variance / values.size)
    assert abs(values.var() - variance) < 0.06 * variance


def test_parameters_given_as_arrays_draw_per_element():
    lam = mx.nd.array([0.5, 20])
    values = mx.nd.random.poisson(lam, shape=(20000,)).asnumpy()
    assert values.shape == (2, 20000)
    np.testing.assert_allclose(values.mean(axis=1), [0.5, 20], rtol=0.03)
    low, high = mx.nd.array([[0], [10]]), mx.nd.array([1, 2, 3])  # broadcast to (2, 3)
    drawn = mx.nd.random.uniform(low, high, shape=(1000,)).asnumpy()
    assert drawn.shape == (2, 3, 1000)
    assert drawn[0].min() >= 0 and (drawn[0].max(axis=-1) < [1, 2, 3]).all()
    assert (drawn[1] <= 10).all() and (drawn[1] >= [[1], [2], [3]]).all()  # low > high: (high, low]


def test_categorical_draws_follow_the_given_probabilities():
    probs = np.array([[0.1, 0.6, 0.3], [0.7, 0.0, 0.3]], np.float32)
    samples, log_prob = mx.nd.random.multinomial(mx.nd.array(probs), shape=20000, get_prob=True)
    samples = samples.asnumpy()
    assert samples.dtype == np.int32 and samples.shape == (2, 20000)
    for row in range(2):
        np.testing.assert_allclose(np.bincount(samples[row], minlength=3) / 20000, probs[row], atol=0.015)
    np.testing.assert_allclose(log_prob.asnumpy(), np.log(probs[np.arange(2)[:, None], samples]), rtol=1e-6)


def test_shuffle_permutes_the_first_axis():
    x = mx.nd.arange(30).reshape((10, 3))
    shuffled = mx.nd.random.shuffle(x).asnumpy()
    assert sorted(shuffled[:, 0].tolist()) == list(range(0, 30, 3))
    np.testing.assert_array_equal(shuffled[:, 1:] - shuffled[:, :1], np.tile([1, 2], (10, 1)))


def test_seed_reproduces_the_draws_of_every_distribution():
    def draws():
        return [mx.nd.random.normal(0, 1, shape=(5,)).asnumpy(), mx.nd.random.gamma(2, 2, shape=(5,)).asnumpy(),
                mx.nd.random.randint(0, 100, shape=(5,)).asnumpy(), mx.random.poisson(2, shape=(5,)).asnumpy()]
    mx.random.seed(42)
    first = draws()
    mx.random.seed(42)
    again = draws()
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    mx.random.seed(43)
    assert not np.array_equal(draws()[0], first[0])


def test_out_writes_the_draws_into_the_given_array():
    out = mx.nd.zeros((3, 4))
    assert mx.nd.random.uniform(5, 6, shape=(3, 4), out=out) is out
    assert (out.asnumpy() >= 5).all()


@pytest.mark.parametrize("call, message", [
    (lambda: mx.nd.random.gamma(-1, 1, shape=(2,)), "alpha must be > 0, got -1"),
    (lambda: mx.nd.random.poisson(mx.nd.array([1, -2])), "lam must be >= 0, got -2 at element 1"),
    (lambda: mx.nd.random.negative_binomial(2, 1.5), "p must lie in \\(0, 1\\]"),
    (lambda: mx.nd.random.randint(5, 5), "expected low < high"),
    (lambda: mx.nd.random.uniform(0, 1, shape=(2,), dtype="int32").asnumpy(), None),
])
def test_bad_parameters_are_refused_by_name(call, message):
    if message is None:  # an integer dtype of uniform draws truncates them, as MXNet's cast would
        call()
        return
    with pytest.raises(mx.KilnError, match=message):
        call().asnumpy()
    # A failure inside an asynchronous op is also waitall()'s to report, once (as in MXNet).
    try:
        mx.nd.waitall()
    except mx.KilnError as e:
        assert re.search(message, str(e)), str(e)
    mx.nd.waitall()


def test_nd_slice_matches_mxnet(run_mxnet):
    calls = ["mx.nd.slice(x, begin=(1, None), end=(None, 3))", "x.slice(begin=(None, 3), end=(None, 0), step=(2, -1))",
             "mx.nd.slice(x, begin=(-2,), end=(None,))", "mx.nd.crop(x, begin=(0, 1, 1), end=(2, 3, 4))"]
    script = ("import json, mxnet as mx\nx = mx.nd.arange(60).reshape((3, 4, 5))\n"
              f"print(json.dumps([eval(c).asnumpy().tolist() for c in {calls!r}]))")
    want = json.loads(run_mxnet(script))
    x = mx.nd.arange(60).reshape((3, 4, 5))
    for call, w in zip(calls, want):
        np.testing.assert_array_equal(eval(call).asnumpy(), np.array(w), err_msg=call)  # noqa: S307


def test_a_hybridized_block_draws_anew_on_every_call():
    class Noisy(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x):
            return x + F.random.normal(0, 1, shape=(4,))

    block = Noisy()
    block.hybridize()
    x = mx.nd.zeros((4,))
    first, second = block(x).asnumpy(), block(x).asnumpy()
    assert not np.array_equal(first, second)  # the draw is not folded into a constant


def test_huge_means_and_seeds_draw_sensibly():
    values = mx.nd.random.poisson(1e13, shape=(2000,), dtype="float64").asnumpy()
    assert abs(values.mean() - 1e13) < 5 * np.sqrt(1e13 / 2000)
    assert np.all(values == np.round(values))
    once = mx.nd._kiln.invoke("RandomUniform", [], {"shape": [3], "seed": 1e30})[0].asnumpy()
    again = mx.nd._kiln.invoke("RandomUniform", [], {"shape": [3], "seed": 1e30})[0].asnumpy()
    np.testing.assert_array_equal(once, again)
