"""mx.nd functions of MXNet 1.x that older code calls (concatenate, moveaxis, linspace, repeat,
ElementWiseSum / add_n, tostype, contrib.isinf / isnan / isfinite, topk with every ret_typ, sort,
argsort, array of a scalar; MXNet's rounding rules, expm1 & co, pick, pad, split_v2, slice_like,
reshape_like, the *_element_0index and onehot_encode functions, squeeze/expand_dims/flatten with
inplace= and the fluent methods), each compared with real MXNet 1.9.1 running the same calls;
pickled arrays and load_frombuffer against MXNet's bytes."""
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
    "mx.nd.round(h)", "mx.nd.rint(h)", "mx.nd.fix(h)", "mx.nd.trunc(h)", "h.round()", "h.floor()", "h.ceil()",
    "mx.nd.expm1(t)", "mx.nd.log1p(t)", "t.expm1()", "mx.nd.log2(x)", "mx.nd.log10(x * 10)", "mx.nd.cbrt(-x)",
    "mx.nd.rcbrt(x)", "mx.nd.sinh(t)", "mx.nd.cosh(t)", "mx.nd.arcsinh(x)", "mx.nd.arccosh(x)",
    "mx.nd.arctanh(t)", "mx.nd.degrees(x)", "mx.nd.radians(x)", "x.sin()", "x.arctan()", "x.rsqrt()",
    "mx.nd.softmin(x)", "mx.nd.softmin(x, axis=0)", "mx.nd.nansum(z2)", "mx.nd.nansum(z2, axis=1)",
    "mx.nd.nanprod(z2, axis=0)", "mx.nd.argmax_channel(w)", "mx.nd.argmax_channel(y)", "mx.nd.shape_array(y)",
    "mx.nd.size_array(y)", "mx.nd.flip(y, axis=1)", "y.flip(axis=(0, 2))",
    "mx.nd.split_v2(y, (1, 3), axis=2)[1]", "mx.nd.split_v2(y, 3, axis=1)[2]",
    "mx.nd.split_v2(y, 1, axis=0)", "mx.nd.split_v2(y, 2, axis=0, squeeze_axis=True)[1]",
    "mx.nd.slice_like(y, mx.nd.zeros((1, 2, 3)))", "mx.nd.slice_like(y, mx.nd.zeros((1, 2, 3)), axes=(0, -1))",
    "mx.nd.reshape_like(y, mx.nd.zeros((4, 6)))",
    "mx.nd.reshape_like(y, mx.nd.zeros((6, 2)), lhs_begin=1, lhs_end=3, rhs_begin=0, rhs_end=2)",
    "mx.nd.broadcast_axes(mx.nd.ones((2, 1, 1)), axis=(1, 2), size=(3, 4))",
    "mx.nd.broadcast_axis(x.reshape((2, 3, 1)), axis=2, size=2)",
    "mx.nd.pick(w, mx.nd.array([0, 2]), axis=1)", "mx.nd.pick(w, mx.nd.array([-1, 5]), axis=1)",
    "mx.nd.pick(w, mx.nd.array([-1, 5]), axis=1, mode='wrap')",
    "mx.nd.pick(w, mx.nd.array([[1], [0]]), axis=1, keepdims=True)", "w.pick(mx.nd.array([1, 0, 1]), axis=0)",
    "mx.nd.pad(y.reshape((1, 2, 3, 4)), mode='constant', pad_width=(0, 0, 0, 0, 1, 2, 2, 1), constant_value=5)",
    "mx.nd.pad(y.reshape((1, 2, 3, 4)), mode='edge', pad_width=(0, 0, 0, 0, 1, 1, 1, 1))",
    "mx.nd.pad(y.reshape((1, 2, 3, 4)), mode='reflect', pad_width=(0, 0, 0, 0, 1, 1, 2, 2))",
    "mx.nd.choose_element_0index(w, mx.nd.array([2, 0]))",
    "mx.nd.fill_element_0index(w, mx.nd.array([7, 8]), mx.nd.array([1, 2]))",
    "mx.nd.onehot_encode(mx.nd.array([2, 0]), mx.nd.zeros((2, 4)))",
    "mx.nd.squeeze(mx.nd.ones((1, 1, 1)))", "mx.nd.ones((2, 1, 3)).squeeze(axis=1, inplace=True)",
    "x.expand_dims(axis=-1)", "y.flatten(inplace=True)",
]


def test_nd_functions_match_mxnet(run_mxnet):
    setup = ("x = mx.nd.array([[1, 2, 3], [4, 5, 6]])\ny = mx.nd.arange(24).reshape((2, 3, 4))\n"
             "z = mx.nd.array([[np.inf, -np.inf], [np.nan, 5]])\nw = mx.nd.array([[3, 1, 2], [0, 5, 4]])\n"
             "h = mx.nd.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7])\n"
             "t = mx.nd.array([1e-7, -0.3, 0.5, 2e-9])\nz2 = mx.nd.array([[1, np.nan, 2], [np.nan, 3, 4]])\n")
    script = ("import json, mxnet as mx, numpy as np\n" + setup +
              f"print(json.dumps([[eval(c).asnumpy().tolist(), np.dtype(eval(c).dtype).name] for c in {CALLS!r}]))")
    want = json.loads(run_mxnet(script))
    x = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    y = mx.nd.arange(24).reshape((2, 3, 4))
    z = mx.nd.array([[np.inf, -np.inf], [np.nan, 5]])  # noqa: F841 - read by the calls
    w = mx.nd.array([[3, 1, 2], [0, 5, 4]])  # noqa: F841
    h = mx.nd.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -3.7])  # noqa: F841
    t = mx.nd.array([1e-7, -0.3, 0.5, 2e-9])  # noqa: F841
    z2 = mx.nd.array([[1, np.nan, 2], [np.nan, 3, 4]])  # noqa: F841
    for call, (values, dtype) in zip(CALLS, want):
        got = eval(call)  # noqa: S307 - the calls above
        np.testing.assert_allclose(got.asnumpy(), np.array(values), rtol=1e-6, err_msg=call)
        assert got.shape == np.array(values).shape, call
        assert str(np.dtype(got.dtype)) == np.dtype(dtype).name, call
    assert x.tostype("default") is not x


def test_sparse_storage_types_are_refused_by_name():
    with pytest.raises(ValueError, match="tostype: stype 'csr' is not supported"):
        mx.nd.ones((2, 2)).tostype("csr")


def test_pickled_state_is_mxnets_and_round_trips(run_mxnet):
    import pickle

    script = ("import json, mxnet as mx\n"
              "a = mx.nd.arange(6).reshape((2, 3))\n"
              "b = mx.nd.array([[1, 2]], dtype='int32')\n"
              "print(json.dumps([bytes(a.__getstate__()['handle']).hex(), bytes(b.__getstate__()['handle']).hex()]))")
    want_a, want_b = json.loads(run_mxnet(script))
    a = mx.nd.arange(6).reshape((2, 3))
    b = mx.nd.array([[1, 2]], dtype="int32")
    assert bytes(a.__getstate__()["handle"]).hex() == want_a
    assert bytes(b.__getstate__()["handle"]).hex() == want_b
    for x in (a, b, mx.nd.array(np.arange(24, dtype=np.float64).reshape((2, 3, 4))), mx.nd.zeros((0, 3))):
        y = pickle.loads(pickle.dumps(x))
        assert y.shape == x.shape and y.dtype == x.dtype
        np.testing.assert_array_equal(y.asnumpy(), x.asnumpy())
    c = mx.nd.zeros((2, 3))
    c.__setstate__({"handle": bytearray.fromhex(want_a)})
    np.testing.assert_array_equal(c.asnumpy(), np.arange(6).reshape((2, 3)))
    with pytest.raises(ValueError, match="the state holds shape"):
        mx.nd.zeros((3,)).__setstate__({"handle": bytearray.fromhex(want_a)})


def test_load_frombuffer_reads_mxnets_files(run_mxnet, tmp_path):
    path = tmp_path / "arrays.params"
    run_mxnet("import mxnet as mx\n"
              f"mx.nd.save({str(path)!r}, {{'w': mx.nd.arange(4), 'b': mx.nd.ones((2, 2), dtype='float16')}})")
    loaded = mx.nd.load_frombuffer(path.read_bytes())
    assert sorted(loaded) == ["b", "w"]
    np.testing.assert_array_equal(loaded["w"].asnumpy(), np.arange(4))
    assert loaded["b"].dtype == np.float16
    with pytest.raises(mx.base.MXNetError, match="load_frombuffer"):
        mx.nd.load_frombuffer(path.read_bytes()[:40])


def test_inplace_methods_share_memory_and_the_rest_copy():
    data = mx.nd.arange(6).reshape((1, 2, 3))
    view, copy = data.squeeze(axis=0, inplace=True), data.squeeze(axis=0)
    flat_view, flat_copy = data.flatten(inplace=True), data.flatten()
    expanded_view, expanded = data.expand_dims(0, inplace=True), mx.nd.expand_dims(data, 0)
    data[:] = -1
    for shared in (view, flat_view, expanded_view):
        assert (shared.asnumpy() == -1).all()
    for kept in (copy, flat_copy, expanded):
        assert kept.asnumpy().sum() == 15
