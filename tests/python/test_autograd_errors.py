"""kiln.autograd (record, pause, backward, attach_grad, grad) against closed forms, and kiln::Error
surfacing as kiln.KilnError with its message."""
import numpy as np
import pytest

import kiln as mx


def test_quadratic_gradient():
    x = mx.nd.array([1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = x ** 2 + 3 * x + 2
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [5, 7, 9])


def test_head_gradient_and_broadcast():
    x = mx.nd.array([[1, 2], [3, 4]])
    b = mx.nd.array([10, 20])
    x.attach_grad()
    b.attach_grad()
    with mx.autograd.record():
        y = (x * b).sum(axis=1)
    y.backward(mx.nd.array([1, 2]))
    np.testing.assert_allclose(x.grad.asnumpy(), [[10, 20], [20, 40]])
    np.testing.assert_allclose(b.grad.asnumpy(), [1 * 1 + 3 * 2, 2 * 1 + 4 * 2])


def test_pause_and_modes():
    x = mx.nd.array([2.0])
    x.attach_grad()
    assert not mx.autograd.is_recording()
    with mx.autograd.record():
        assert mx.autograd.is_recording() and mx.autograd.is_training()
        y = x * x
        with mx.autograd.pause():
            assert not mx.autograd.is_recording()
            z = y * 100  # not recorded
        w = y + z
    with mx.autograd.record(train_mode=False):
        assert not mx.autograd.is_training()
    w.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [4.0])


def test_detach_stops_the_gradient():
    x = mx.nd.array([3.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x * x
        z = y.detach() * 5 + y
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.0])


def test_grad_add_and_functional_grad():
    x = mx.nd.array([1.0, -1.0])
    x.attach_grad(grad_req="add")
    for _ in range(2):
        with mx.autograd.record():
            y = (x * 3).sum()
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6, 6])
    v = mx.nd.array([0.5])
    v.attach_grad()
    with mx.autograd.record():
        out = mx.nd.exp(v)
    (g,) = mx.autograd.grad(out, [v])
    np.testing.assert_allclose(g.asnumpy(), np.exp([0.5]), rtol=1e-6)


def test_backward_of_several_heads():
    x = mx.nd.array([1.0, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        a = x * 2
        b = x * x
    mx.autograd.backward([a, b])
    np.testing.assert_allclose(x.grad.asnumpy(), [2 + 2, 2 + 4])


def test_tutorial_dynamic_control_flow():
    def f(a):
        b = a * 2
        while b.norm().asscalar() < 1000:
            b = b * 2
        c = b[0] if b.sum().asscalar() >= 0 else b[1]
        return c
    a = mx.nd.random.uniform(shape=2)
    a.attach_grad()
    with mx.autograd.record():
        c = f(a)
    c.backward()
    expected = np.zeros(2, np.float32)
    index = 0 if (a.asnumpy() * 2).sum() >= 0 else 1
    expected[index] = (c / a)[index].asscalar()
    np.testing.assert_allclose(a.grad.asnumpy(), expected, rtol=1e-5)


def test_errors_carry_the_message():
    assert issubclass(mx.KilnError, RuntimeError) and mx.base.MXNetError is mx.KilnError
    with pytest.raises(mx.base.MXNetError, match=r"MatMul.*\(2, 3\)"):
        mx.nd.dot(mx.nd.ones((2, 3)), mx.nd.ones((2, 3)))
    with pytest.raises(mx.KilnError, match="broadcast"):
        mx.nd.ones((2, 3)) + mx.nd.ones((4,))
    with pytest.raises(mx.KilnError, match="out of range"):
        mx.nd.ones((2, 3))[5]
    with pytest.raises(mx.KilnError, match="No such file|cannot open|missing.params"):
        mx.nd.load("/nonexistent/missing.params")
    with pytest.raises(mx.KilnError, match="record"):
        mx.nd.ones((2,)).backward()
