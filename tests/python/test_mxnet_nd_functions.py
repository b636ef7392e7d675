"""mx.nd functions of MXNet 1.x that older code calls (concatenate, moveaxis, linspace, repeat,
ElementWiseSum / add_n, tostype, contrib.isinf / isnan / isfinite, topk with every ret_typ, sort,
argsort, array of a scalar), each compared with real MXNet 1.9.1 running the same calls."""
import json

import numpy as np
import pytest

import kiln as mx

CALLS = [
    "mx.nd.concatenate([x, x * 2], axis=1)",
    "mx.nd.concatenate([x, x])",
    "mx.nd.moveaxis(y, 0, 2)",
    "mx.nd.moveaxis(y, -1, 0)",
    "mx.nd.linspace(2.5, 9.7, 7)",
    "mx.nd.linspace(0, 1, 4, endpoint=False)",
    "mx.nd.linspace(2.5, 9.7, 7, dtype='int32')",
    "mx.nd.linspace(3, 3, 1)",
    "mx.nd.repeat(x, 2)",
    "mx.nd.repeat(x, 3, axis=0)",
    "mx.nd.repeat(x, 2, axis=-1)",
    "x.repeat(2, axis=1)",
    "mx.nd.ElementWiseSum(x, x * 2, x * 4)",
    "mx.nd.add_n(x, x)",
    "x.tostype('default')",
    "mx.nd.contrib.isinf(z)",
    "mx.nd.contrib.isnan(z)",
    "mx.nd.contrib.isfinite(z)",
    "mx.nd.array(3.0)",
    "mx.nd.array(np.ones([]))",
    "mx.nd.array([3.0])",
    "mx.nd.topk(w, axis=None, k=3, ret_typ='value')",
    "mx.nd.topk(w, axis=None, k=3, dtype='int32')",
    "mx.nd.topk(w, axis=1, k=2, ret_typ='mask')",
    "mx.nd.topk(w, axis=0, k=1, ret_typ='mask', is_ascend=True)",
    "mx.nd.topk(w, k=0, ret_typ='value')",
    "mx.nd.sort(w)",
    "mx.nd.sort(w, axis=0, is_ascend=False)",
    "mx.nd.argsort(w, axis=None)",
    "w.argsort(is_ascend=False)",
    "w.sort()",
]


def test_nd_functions_match_mxnet(run_mxnet):
    setup = ("x = mx.nd.array([[1, 2, 3], [4, 5, 6]])\ny = mx.nd.arange(24).reshape((2, 3, 4))\n"
             "z = mx.nd.array([[np.inf, -np.inf], [np.nan, 5]])\nw = mx.nd.array([[3, 1, 2], [0, 5, 4]])\n")
    script = ("import json, mxnet as mx, numpy as np\n" + setup +
              f"print(json.dumps([[eval(c).asnumpy().tolist(), np.dtype(eval(c).dtype).name] for c in {CALLS!r}]))")
    want = json.loads(run_mxnet(script))
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    y = mx.nd.arange(24).reshape((2, 3, 4))
    z = mx.nd.array([[np.inf, -np.inf], [np.nan, 5]])  # noqa: F841 - read by the calls
    w = mx.nd.array([[3, 1, 2], [0, 5, 4]])  # noqa: F841
    for call, (values, dtype) in zip(CALLS, want):
        got = eval(call)  # noqa: S307 - the calls above
        np.testing.assert_allclose(got.asnumpy(), np.array(values), rtol=1e-6, err_msg=call)
        assert got.shape == np.array(values).shape, call
        assert str(np.dtype(got.dtype)) == np.dtype(dtype).name, call
    assert x.tostype("default") is not x


def test_sparse_storage_types_are_refused_by_name():
    with pytest.raises(ValueError, match="tostype: stype 'csr' is not supported"):
        mx.nd.ones((2, 2)).tostype("csr")
