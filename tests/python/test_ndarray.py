"""kiln.nd against numpy: creation, arithmetic with broadcasting, in-place ops, dot, reshape,
slicing and indexing, reductions, copies out and in, save/load."""
import numpy as np
import pytest

import kiln as mx

RNG = np.random.RandomState(1)


def rand(*shape):
    return RNG.uniform(-2, 2, shape).astype(np.float32)


def test_creation():
    assert mx.nd.zeros((2, 3)).asnumpy().tolist() == np.zeros((2, 3)).tolist()
    assert mx.nd.ones((4,)).dtype == np.float32
    np.testing.assert_array_equal(mx.nd.full((2, 2), 7.5).asnumpy(), np.full((2, 2), 7.5, np.float32))
    np.testing.assert_array_equal(mx.nd.arange(2, 11, 3).asnumpy(), np.arange(2, 11, 3, dtype=np.float32))
    np.testing.assert_array_equal(mx.nd.arange(3, repeat=2).asnumpy(), [0, 0, 1, 1, 2, 2])
    a = mx.nd.array([[1, 2, 3], [4, 5, 6]])
    assert a.shape == (2, 3) and a.size == 6 and a.ndim == 2 and a.dtype == np.float32
    assert mx.nd.array(np.arange(4), dtype="int64").dtype == np.int64
    assert mx.nd.array(a).asnumpy().tolist() == [[1, 2, 3], [4, 5, 6]]
    assert a.context == mx.cpu() and str(mx.cpu(0)) == "cpu(0)"
    # The CUDA driver's count against the device files its kernel module makes, one per GPU.
    import glob
    assert mx.context.num_gpus() == len(glob.glob("/dev/nvidia[0-9]*"))


@pytest.mark.parametrize("op", ["__add__", "__sub__", "__mul__", "__truediv__", "__pow__"])
def test_binary_broadcasting(op):
    x, y = np.abs(rand(3, 1, 4)) + 0.5, np.abs(rand(2, 1)) + 0.5
    expected = getattr(x, op)(y)
    np.testing.assert_allclose(getattr(mx.nd.array(x), op)(mx.nd.array(y)).asnumpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(getattr(mx.nd.array(x), op)(1.5).asnumpy(), getattr(x, op)(1.5), rtol=1e-5)


def test_reflected_and_unary():
    x = np.abs(rand(3, 4)) + 0.5
    a = mx.nd.array(x)
    np.testing.assert_allclose((2 - a).asnumpy(), 2 - x, rtol=1e-6)
    np.testing.assert_allclose((3 / a).asnumpy(), 3 / x, rtol=1e-6)
    np.testing.assert_allclose((2 ** a).asnumpy(), 2 ** x, rtol=1e-5)
    np.testing.assert_allclose((-a).asnumpy(), -x)
    np.testing.assert_allclose(mx.nd.exp(a).asnumpy(), np.exp(x), rtol=1e-5)
    np.testing.assert_allclose(a.sqrt().asnumpy(), np.sqrt(x), rtol=1e-6)
    np.testing.assert_allclose(mx.nd.relu(a - 1).asnumpy(), np.maximum(x - 1, 0))
    np.testing.assert_allclose(mx.nd.softmax(a).asnumpy(), np.exp(x) / np.exp(x).sum(-1, keepdims=True),
                               rtol=1e-5)
    np.testing.assert_allclose(mx.nd.maximum(a, mx.nd.array(x.T[:1].T)).asnumpy(), np.maximum(x, x[:, :1]))
    np.testing.assert_array_equal((a > 1).asnumpy(), (x > 1).astype(np.float32))
    np.testing.assert_array_equal((a == a).asnumpy(), np.ones_like(x))
    np.testing.assert_array_equal((a != 1).asnumpy(), (x != 1).astype(np.float32))


def test_in_place_keeps_storage():
    x = rand(2, 3)
    a = mx.nd.array(x)
    view = a[0]
    a += 1
    a *= mx.nd.array([1, 2, 3])
    a -= 0.5
    a /= 2
    expected = ((x + 1) * [1, 2, 3] - 0.5) / 2
    np.testing.assert_allclose(a.asnumpy(), expected, rtol=1e-6)
    np.testing.assert_allclose(view.asnumpy(), expected[0], rtol=1e-6)  # still the same storage


def test_dot_and_batch_dot():
    x, y = rand(3, 4), rand(4, 5)
    np.testing.assert_allclose(mx.nd.dot(mx.nd.array(x), mx.nd.array(y)).asnumpy(), x @ y, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(mx.nd.dot(mx.nd.array(x), mx.nd.array(y.T), transpose_b=True).asnumpy(), x @ y,
                               rtol=1e-5, atol=1e-6)
    p, q = rand(2, 3, 4), rand(2, 4, 5)
    np.testing.assert_allclose(mx.nd.batch_dot(mx.nd.array(p), mx.nd.array(q)).asnumpy(), p @ q, rtol=1e-5,
                               atol=1e-6)


def test_reshape_slicing_indexing():
    x = rand(4, 5, 6)
    a = mx.nd.array(x)
    np.testing.assert_array_equal(a.reshape((20, -1)).asnumpy(), x.reshape(20, -1))
    np.testing.assert_array_equal(a.reshape(0, -1).asnumpy(), x.reshape(4, -1))
    np.testing.assert_array_equal(a.reshape(shape=(2, 60)).asnumpy(), x.reshape(2, 60))
    np.testing.assert_array_equal(a[1].asnumpy(), x[1])
    np.testing.assert_array_equal(a[-1, 2].asnumpy(), x[-1, 2])
    np.testing.assert_array_equal(a[:, 1:4].asnumpy(), x[:, 1:4])
    np.testing.assert_array_equal(a[1:3, ::2, 5].asnumpy(), x[1:3, ::2, 5])
    np.testing.assert_array_equal(a[:, 2].asnumpy(), x[:, 2])
    np.testing.assert_array_equal(a[mx.nd.array([3, 0])].asnumpy(), x[[3, 0]])
    np.testing.assert_array_equal(a[[1, 1]].asnumpy(), x[[1, 1]])
    np.testing.assert_array_equal(a.T.asnumpy(), x.T)
    np.testing.assert_array_equal(a.transpose((1, 0, 2)).asnumpy(), x.transpose(1, 0, 2))
    assert a[1, 2, 3].asscalar() == pytest.approx(float(x[1, 2, 3]))
    assert a[1, 2, 3].shape == (1,) and a[0][0][0].shape == (1,)  # MXNet 1.x has no 0-d results
    assert [r.shape for r in a] == [(5, 6)] * 4


def test_setitem():
    x = np.zeros((3, 4), np.float32)
    a = mx.nd.array(x)
    a[1] = 5
    x[1] = 5
    a[:, 2] = [7, 8, 9]
    x[:, 2] = [7, 8, 9]
    a[0:2, 0:2] = mx.nd.array([[1, 2], [3, 4]])
    x[0:2, 0:2] = [[1, 2], [3, 4]]
    a[2, 3] = -1
    x[2, 3] = -1
    a[:] = a * 2
    x[:] = x * 2
    np.testing.assert_array_equal(a.asnumpy(), x)


@pytest.mark.parametrize("key", [np.s_[::-1], np.s_[5:1:-2], np.s_[:, ::-2], np.s_[1, 4::-1, ::-3],
                                 np.s_[1:5:-1], np.s_[::-1, 2], np.s_[-2::-4, 1:, ::-1]])
def test_negative_step_slicing(key):
    x = rand(6, 5, 4)
    a = mx.nd.array(x)
    np.testing.assert_array_equal(a[key].asnumpy(), x[key])
    values = rand(*x[key].shape)
    a[key] = mx.nd.array(values)
    x[key] = values
    np.testing.assert_array_equal(a.asnumpy(), x)


def test_boolean_masks():
    x = rand(6, 5, 4)
    a = mx.nd.array(x)
    rows = x[:, :, 0] > 0.5  # a mask over the leading two axes
    np.testing.assert_array_equal(a[rows].asnumpy(), x[rows])
    np.testing.assert_array_equal(a[mx.nd.array(rows, dtype="bool")].asnumpy(), x[rows])
    a[x > 0.7] = 0
    x[x > 0.7] = 0
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[rows] = -1
    x[rows] = -1
    np.testing.assert_array_equal(a.asnumpy(), x)
    values = rand(int(rows.sum()), 4)
    a[rows] = values
    x[rows] = values
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[rows] = mx.nd.array([1, 2, 3, 4])  # broadcast over the selected rows
    x[rows] = [1, 2, 3, 4]
    np.testing.assert_array_equal(a.asnumpy(), x)
    with pytest.raises(mx.KilnError, match="leading dimensions"):
        a[np.ones((5, 6), bool)] = 1
    with pytest.raises(mx.KilnError, match="leading dimensions"):
        a[np.ones((5, 6), bool)]


def test_gradients_through_negative_steps_and_masks():
    x = mx.nd.array(np.arange(6, dtype=np.float32).reshape(3, 2))
    x.attach_grad()
    w = np.array([[1, 2], [3, 4]], np.float32)
    with mx.autograd.record():
        y = (x[::-2] * mx.nd.array(w)).sum() + (x[np.array([True, False, True])] * 10).sum()
    y.backward()
    # x[::-2] is rows 2 and 0; the mask takes rows 0 and 2.
    np.testing.assert_array_equal(x.grad.asnumpy(), [[3 + 10, 4 + 10], [0, 0], [1 + 10, 2 + 10]])


def test_assignment_through_index_arrays():
    x = rand(6, 3)
    a = mx.nd.array(x)
    a[[4, 0, -1]] = 7
    x[[4, 0, -1]] = 7
    np.testing.assert_array_equal(a.asnumpy(), x)
    values = rand(3, 3)
    a[mx.nd.array([1, 3, 2])] = mx.nd.array(values)
    x[[1, 3, 2]] = values
    np.testing.assert_array_equal(a.asnumpy(), x)
    a[np.array([[0, 5], [2, 3]])] = [9, 8, 7]  # a 2-d index array, one row of values broadcast
    x[np.array([[0, 5], [2, 3]])] = [9, 8, 7]
    np.testing.assert_array_equal(a.asnumpy(), x)


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "prod"])
def test_reductions(name):
    x = rand(3, 4, 5)
    a = mx.nd.array(x)
    fn = getattr(mx.nd, name)
    # atol: a float32 sum of values up to 2 in magnitude may land near 0, where rtol alone fails
    np.testing.assert_allclose(fn(a).asnumpy(), getattr(np, name)(x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fn(a, axis=1).asnumpy(), getattr(np, name)(x, axis=1), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fn(a, axis=(0, 2), keepdims=True).asnumpy(),
                               getattr(np, name)(x, axis=(0, 2), keepdims=True), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(fn(a, axis=1, exclude=True).asnumpy(), getattr(np, name)(x, axis=(0, 2)),
                               rtol=1e-4, atol=1e-5)


def test_argmax_norm_topk():
    x = rand(4, 7)
    a = mx.nd.array(x)
    np.testing.assert_array_equal(a.argmax(axis=1).asnumpy(), x.argmax(1).astype(np.float32))
    assert a.norm().asscalar() == pytest.approx(float(np.linalg.norm(x)), rel=1e-5)
    np.testing.assert_array_equal(mx.nd.topk(a, k=2).asnumpy(), np.argsort(-x, axis=1)[:, :2])


def test_shape_functions():
    x, y = rand(2, 3), rand(2, 3)
    a, b = mx.nd.array(x), mx.nd.array(y)
    np.testing.assert_array_equal(mx.nd.concat(a, b, dim=0).asnumpy(), np.concatenate([x, y], 0))
    np.testing.assert_array_equal(mx.nd.stack(a, b, axis=1).asnumpy(), np.stack([x, y], 1))
    np.testing.assert_array_equal(mx.nd.expand_dims(a, 1).shape, (2, 1, 3))
    np.testing.assert_array_equal(mx.nd.tile(a, (2, 1)).asnumpy(), np.tile(x, (2, 1)))
    np.testing.assert_array_equal(mx.nd.broadcast_to(a[:, :1], (2, 3)).asnumpy(), np.broadcast_to(x[:, :1], (2, 3)))
    np.testing.assert_array_equal(mx.nd.clip(a, -1, 1).asnumpy(), np.clip(x, -1, 1))
    np.testing.assert_array_equal(mx.nd.one_hot(mx.nd.array([0, 2]), 3).asnumpy(), np.eye(3)[[0, 2]])
    np.testing.assert_array_equal(mx.nd.where(a > 0, a, b).asnumpy(), np.where(x > 0, x, y))
    assert a.astype("int32").dtype == np.int32


def test_asnumpy_copies_and_waits():
    a = mx.nd.ones((1000,))
    for _ in range(20):
        a = a + 1
    out = a.asnumpy()
    a += 1
    assert out[0] == 21.0  # a copy: later writes do not show
    a.wait_to_read()
    mx.nd.waitall()
    assert a[0].asscalar() == 22.0


def test_dlpack_zero_copy_both_ways():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    a = mx.nd.from_dlpack(x)
    x[0, 0] = 100  # the array views numpy's memory
    assert a[0, 0].asscalar() == 100
    a = mx.nd.array(x)
    assert a.__dlpack_device__() == (1, 0)  # kDLCPU, device 0
    out = np.from_dlpack(a)
    a += 1
    a.wait_to_read()
    assert out[0, 0] == 101  # numpy views Kiln's memory
    strided = mx.nd.from_dlpack(x[:, ::2])
    np.testing.assert_array_equal(strided.asnumpy(), x[:, ::2])


def test_save_load_roundtrip(tmp_path):
    x, y = rand(2, 3), np.arange(4, dtype=np.int64)
    path = str(tmp_path / "arrays.params")
    mx.nd.save(path, {"x": mx.nd.array(x), "y": mx.nd.array(y, dtype="int64")})
    loaded = mx.nd.load(path)
    np.testing.assert_array_equal(loaded["x"].asnumpy(), x)
    np.testing.assert_array_equal(loaded["y"].asnumpy(), y)
    mx.nd.save(path, [mx.nd.array(x)])
    np.testing.assert_array_equal(mx.nd.load(path)[0].asnumpy(), x)


def test_save_load_with_mxnet(tmp_path, run_mxnet):
    x = rand(2, 3)
    ours = str(tmp_path / "kiln.params")
    theirs = str(tmp_path / "mxnet.params")
    mx.nd.save(ours, {"w": mx.nd.array(x)})
    out = run_mxnet(f"""
import mxnet as mx, numpy as np
d = mx.nd.load({ours!r})
print(repr(d['w'].asnumpy().tolist()))
mx.nd.save({theirs!r}, {{'v': mx.nd.array(np.arange(6).reshape(2, 3)), 'i': mx.nd.array([1, 2], dtype='int32')}})
""")
    assert eval(out) == x.tolist()
    loaded = mx.nd.load(theirs)
    np.testing.assert_array_equal(loaded["v"].asnumpy(), np.arange(6).reshape(2, 3))
    assert loaded["i"].dtype == np.int32


def test_random_is_seeded():
    mx.random.seed(3)
    a = mx.nd.random.uniform(-1, 1, shape=(100,)).asnumpy()
    mx.random.seed(3)
    b = mx.nd.random.uniform(-1, 1, shape=(100,)).asnumpy()
    np.testing.assert_array_equal(a, b)
    assert a.min() >= -1 and a.max() < 1 and abs(a.mean()) < 0.2
    n = mx.nd.random.normal(2, 3, shape=(4000,)).asnumpy()
    assert abs(n.mean() - 2) < 0.2 and abs(n.std() - 3) < 0.2


@pytest.mark.parametrize("shape", [(2, 3), (100, 80)])  # small arithmetic keeps the GIL, larger releases it
def test_in_place_returns_the_array_itself(shape):
    x = rand(*shape)
    a = mx.nd.array(x)
    same = a
    a += 1
    a *= mx.nd.array(x[0])
    a -= 0.5
    a /= 2
    assert a is same
    np.testing.assert_allclose(a.asnumpy(), ((x + 1) * x[0] - 0.5) / 2, rtol=1e-5)


OPERATORS = {"+": lambda u, v: u + v, "-": lambda u, v: u - v, "*": lambda u, v: u * v, "/": lambda u, v: u / v}


def in_place(symbol):
    def apply(u, v):
        before = u
        if symbol == "+":
            u += v
        elif symbol == "-":
            u -= v
        elif symbol == "*":
            u *= v
        else:
            u /= v
        assert u is before
        return u
    return apply


@pytest.mark.parametrize("symbol", sorted(OPERATORS))
@pytest.mark.parametrize("shape", [(2, 3), (90, 70)])  # keeps the GIL / releases it
def test_operator_syntax_with_every_kind_of_operand(symbol, shape):
    # The operators as Python evaluates them (the type's number slots), not called as methods:
    # arrays, Python floats and ints on either side, numpy and bool scalars, in place.
    op = OPERATORS[symbol]
    x, y = np.abs(rand(*shape)) + 0.5, np.abs(rand(shape[-1])) + 0.5
    a, b = mx.nd.array(x), mx.nd.array(y)
    for left, right, expected in [(a, b, op(x, y)), (a, 1.5, op(x, np.float32(1.5))),
                                  (a, 3, op(x, np.float32(3))), (2.5, a, op(np.float32(2.5), x)),
                                  (4, a, op(np.float32(4), x)), (a, np.float32(2), op(x, np.float32(2))),
                                  (np.float64(2), a, op(np.float32(2), x)), (a, True, op(x, np.float32(1)))]:
        result = op(left, right)
        assert isinstance(result, mx.nd.NDArray)
        np.testing.assert_allclose(result.asnumpy(), expected, rtol=1e-6)
    for right, expected in [(b, op(x, y)), (2, op(x, np.float32(2))), (np.float32(0.5), op(x, np.float32(0.5)))]:
        target = mx.nd.array(x)
        np.testing.assert_allclose(in_place(symbol)(target, right).asnumpy(), expected, rtol=1e-6)


@pytest.mark.parametrize("symbol", sorted(OPERATORS))
def test_operators_reject_what_they_cannot_take(symbol):
    a = mx.nd.ones((2, 3))
    for other in ["text", None, [1, 2, 3], 10 ** 400]:  # Python's own TypeError, as for any type
        with pytest.raises(TypeError):
            OPERATORS[symbol](a, other)
        with pytest.raises(TypeError):
            in_place(symbol)(a.copy(), other)
    with pytest.raises(TypeError):
        OPERATORS[symbol]("text", a)
    with pytest.raises(mx.base.KilnError, match="cannot be broadcast"):
        OPERATORS[symbol](a, mx.nd.ones((4,)))
    with pytest.raises(mx.base.KilnError, match="cannot be broadcast"):
        in_place(symbol)(a, mx.nd.ones((4,)))
    np.testing.assert_array_equal(a.asnumpy(), np.ones((2, 3)))  # a failed update leaves the array as it was


def test_wait_to_read_checks_its_receiver():
    with pytest.raises(TypeError, match="wait_to_read"):
        mx.nd.NDArray.wait_to_read(1)
    a = mx.nd.ones((3,)) * 2
    assert a.wait_to_read() is None


def test_small_operators_from_many_threads():
    # Small operators keep the GIL and push work from whichever thread calls them: each thread's
    # chain of updates must come out exactly as if it ran alone.
    import threading
    results, errors = {}, []

    def work(k):
        try:
            acc = mx.nd.zeros((4,))
            for i in range(300):
                acc += mx.nd.ones((4,)) * k
                acc = acc - 0.5 + 0.5
            results[k] = acc.asnumpy()
        except Exception as e:  # reported below, with the thread it came from
            errors.append((k, e))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(1, 5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(1, 5):
        np.testing.assert_array_equal(results[k], np.full(4, 300.0 * k, np.float32))


def test_arithmetic_repeated_over_shapes_matches_numpy():
    # More input signatures than the per-thread cache of inferred result types holds, revisited,
    # with broadcasting, scalars and a shape error after a cached success of the same op.
    shapes = [((3,), (3,)), ((2, 3), (3,)), ((2, 1), (1, 4)), ((4,), ()), ((5, 1, 2), (3, 1)),
              ((1,), (6,)), ((2, 2), (2, 2)), ((3, 1), (3,)), ((7,), (1,)), ((60, 70), (70,))]
    for _ in range(3):
        for sa, sb in shapes:
            x, y = rand(*sa), rand(*sb)
            a, b = mx.nd.array(x), mx.nd.array(y)
            np.testing.assert_allclose((a + b).asnumpy(), x + y, rtol=1e-6)
            np.testing.assert_allclose((a * b - 2).asnumpy(), x * y - 2, rtol=1e-5)
            np.testing.assert_allclose((3 / (a + 2)).asnumpy(), 3 / (x + 2), rtol=1e-5)
        with pytest.raises(mx.base.KilnError, match="Add"):
            mx.nd.ones((2, 3)) + mx.nd.ones((4,))


def test_gil_is_released_while_kiln_works():
    """With a switch interval far longer than the test, a thread holding the GIL keeps it until it
    blocks: the counter thread can advance during the wait only if wait_to_read lets go of the GIL.
    The counter gives the GIL back itself after each burst (sleep(0)), so the main thread resumes."""
    import sys
    import threading
    import time
    burst = 10000
    steps, stop = [0], threading.Event()

    def count():
        while not stop.is_set():
            for _ in range(burst):
                steps[0] += 1
            time.sleep(0)

    big = mx.nd.ones((800, 800))
    big.wait_to_read()
    interval = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        counter = threading.Thread(target=count)
        counter.start()
        time.sleep(0.01)  # the counter runs its first bursts
        out = big
        for _ in range(6):
            out = mx.nd.dot(out, big) / 800  # queued on the engine
        before = steps[0]  # the main thread holds the GIL from here ...
        out.wait_to_read()  # ... unless the wait releases it
        during = steps[0] - before
    finally:
        stop.set()
        counter.join()
        sys.setswitchinterval(interval)
    assert during >= burst, f"the counter advanced {during} steps while Kiln computed"


def test_split_dropout_and_argmax_shapes():
    x = rand(2, 6)
    parts = mx.nd.split(mx.nd.array(x), num_outputs=3, axis=1)
    for part, expected in zip(parts, np.split(x, 3, axis=1)):
        np.testing.assert_array_equal(part.asnumpy(), expected)
    ones = mx.nd.ones((8, 1000))
    np.testing.assert_array_equal(mx.nd.Dropout(ones, p=0.5).asnumpy(), 1)  # predict mode: identity
    with mx.autograd.train_mode():
        dropped = mx.nd.Dropout(ones, p=0.5).asnumpy()
    assert set(np.unique(dropped)) <= {0.0, 2.0} and abs((dropped > 0).mean() - 0.5) < 0.05
    assert mx.nd.array([3, 9, 2]).argmax().asnumpy().tolist() == [1.0]
