"""The modules MXNet 1.x code imports besides nd, sym and gluon: mx.test_utils (tolerances by dtype,
which comparisons fail, np_reduce, shapes, environment) against real MXNet 1.9.1 where there is a
value to compare; mx.runtime.Features, mx.util's shape semantics, mx.base's helpers, the
mx.nd.ndarray module, gluon.contrib.nn's Concurrent blocks, and mx.numpy / mx.nd.sparse, which Kiln
does not have and says so when used."""
import json
import os

import numpy as np
import pytest

import kiln as mx
from kiln import test_utils

PAIRS = [  # (a, b, dtype, rtol, atol): which of these does assert_almost_equal accept?
    ([1.0, 2.0], [1.0, 2.0001], "float32", None, None),
    ([1.0, 2.0], [1.0, 2.01], "float32", None, None),
    ([1.0, 2.0], [1.0, 2.01], "float16", None, None),
    ([1.0, 2.0], [1.0, 2.000001], "float64", None, None),
    ([1.0, 2.0], [1.0, 2.0001], "float64", None, None),
    ([1.0, 100.0], [1.0, 101.0], "float32", 0.02, 0),
    ([0.0], [1e-4], "float32", 0, None),
    ([[1.0, 2.0]], [1.0, 2.0], "float32", None, None),
]


def test_assert_almost_equal_accepts_what_mxnet_accepts(run_mxnet):
    script = ("import json, mxnet as mx, numpy as np\nfrom mxnet.test_utils import assert_almost_equal\n"
              f"pairs = {PAIRS!r}\nresults = []\n"
              "for a, b, dtype, rtol, atol in pairs:\n"
              "    try:\n"
              "        assert_almost_equal(np.array(a, dtype), mx.nd.array(b, dtype=dtype), rtol=rtol, atol=atol)\n"
              "        results.append(True)\n"
              "    except AssertionError:\n"
              "        results.append(False)\n"
              "print(json.dumps(results))")
    want = json.loads(run_mxnet(script).splitlines()[-1])  # MXNet prints its mismatches before
    got = []
    for a, b, dtype, rtol, atol in PAIRS:
        try:
            test_utils.assert_almost_equal(np.array(a, dtype), mx.nd.array(b, dtype=dtype), rtol=rtol, atol=atol)
            got.append(True)
        except AssertionError as e:
            assert "differ beyond" in str(e)
            got.append(False)
    assert got == want
    assert test_utils.almost_equal(mx.nd.ones((2,)), np.ones(2)) and test_utils.same(np.arange(3), mx.nd.arange(3))


def test_np_reduce_and_random_shapes_match_mxnet(run_mxnet):
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    cases = [((0, 2), True, "sum"), ((1,), False, "max"), (None, False, "prod"), (-1, True, "min")]
    script = ("import json, numpy as np\nfrom mxnet.test_utils import np_reduce\n"
              "data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)\n"
              f"print(json.dumps([np_reduce(data, a, k, getattr(np, f)).tolist() for a, k, f in {cases!r}]))")
    want = json.loads(run_mxnet(script))
    for (axis, keepdims, fn), w in zip(cases, want):
        np.testing.assert_array_equal(test_utils.np_reduce(data, axis, keepdims, getattr(np, fn)), np.array(w))
    for _ in range(20):
        shape = test_utils.rand_shape_nd(3, dim=4)
        assert len(shape) == 3 and all(1 <= d <= 4 for d in shape)
    assert test_utils.rand_ndarray((2, 3)).shape == (2, 3)
    with pytest.raises(ValueError, match="Kiln has no sparse storage"):
        test_utils.rand_ndarray((2, 3), stype="csr")


def test_environment_sets_and_restores_variables():
    os.environ.pop("KILN_TEST_UNSET", None)
    os.environ["KILN_TEST_SET"] = "before"
    with test_utils.environment({"KILN_TEST_UNSET": "1", "KILN_TEST_SET": None}):
        assert os.environ["KILN_TEST_UNSET"] == "1" and "KILN_TEST_SET" not in os.environ
    assert "KILN_TEST_UNSET" not in os.environ and os.environ["KILN_TEST_SET"] == "before"
    with test_utils.environment("KILN_TEST_SET", 3):
        assert os.environ["KILN_TEST_SET"] == "3"
    assert os.environ.pop("KILN_TEST_SET") == "before"
    test_utils.assert_exception(lambda: 1 / 0, ZeroDivisionError)
    with pytest.raises(AssertionError, match="did not raise"):
        test_utils.assert_exception(lambda: None, ValueError)


def test_runtime_util_and_base_helpers():
    features = mx.runtime.Features()
    assert features.is_enabled("CUDA") == mx.features()["cuda"]
    assert features.is_enabled("mkldnn") == mx.features()["onednn"]
    assert features.is_enabled("INT64_TENSOR_SIZE")
    with pytest.raises(RuntimeError, match="Feature 'WARP_DRIVE' is unknown"):
        features.is_enabled("WARP_DRIVE")
    assert mx.is_np_shape() and not mx.util.is_np_array()
    with mx.np_shape(True):
        assert mx.nd.zeros((0, 3)).shape == (0, 3)
    with pytest.raises(NotImplementedError, match="legacy semantics"):
        mx.set_np_shape(False)
    assert mx.base.py_str(b"caf\xc3\xa9") == "café" and isinstance(np.int64(3), mx.base.integer_types)
    assert issubclass(mx.base.NotImplementedForSymbol, mx.base.MXNetError)
    from kiln.ndarray.ndarray import NDArray, _STORAGE_TYPE_STR_TO_ID, py_slice
    assert NDArray is mx.nd.NDArray and _STORAGE_TYPE_STR_TO_ID["row_sparse"] == 1 and py_slice is slice


def test_interfaces_kiln_lacks_say_so_when_used():
    import kiln.ndarray.sparse as sparse
    import kiln.numpy as mxnp
    with pytest.raises(NotImplementedError, match="Kiln has no mxnet.numpy interface"):
        mxnp.concatenate
    with pytest.raises(NotImplementedError, match="Kiln has no sparse storage"):
        sparse.csr_matrix
    with pytest.raises(NotImplementedError, match="MXNet's numpy interface"):
        test_utils.use_np(lambda: None)()


@pytest.mark.parametrize("hybridize", [False, True])
def test_hybrid_concurrent_concatenates_its_children(hybridize):
    from kiln.gluon.contrib.nn import HybridConcurrent, Identity
    block = HybridConcurrent(axis=1)
    block.add(mx.gluon.nn.Dense(3, in_units=4), Identity(), mx.gluon.nn.Dense(2, in_units=4))
    block.initialize()
    if hybridize:
        block.hybridize()
    x = mx.nd.array(np.random.default_rng(0).normal(size=(5, 4)))
    children = [child for _, child in block._children()]
    want = np.concatenate([children[0](x).asnumpy(), x.asnumpy(), children[2](x).asnumpy()], axis=1)
    np.testing.assert_allclose(block(x).asnumpy(), want, rtol=1e-6)


def test_concurrent_runs_its_children_op_by_op():
    from kiln.gluon.contrib.nn import Concurrent, Identity
    block = Concurrent(axis=0)
    block.add(Identity(), Identity())
    x = mx.nd.array([[1.0, 2.0]])
    np.testing.assert_array_equal(block(x).asnumpy(), [[1.0, 2.0], [1.0, 2.0]])
