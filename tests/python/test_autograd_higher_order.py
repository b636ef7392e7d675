"""autograd.grad(..., create_graph=True): higher-order gradients against closed forms, with MXNet's
conventions (a single variable gives a single array, the graph is kept with create_graph)."""
import numpy as np
import pytest

import kiln as mx


def test_second_derivative_of_a_cube_is_6x():
    x = mx.nd.array([0.5, -1.5, 2.0])
    x.attach_grad()
    with mx.autograd.record():
        y = x ** 3
        (dy,) = mx.autograd.grad(y, [x], create_graph=True)
    np.testing.assert_allclose(dy.asnumpy(), 3 * x.asnumpy() ** 2, rtol=1e-6)
    np.testing.assert_array_equal(x.grad.asnumpy(), [0, 0, 0])  # grad() leaves the buffer alone
    dy.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 6 * x.asnumpy(), rtol=1e-6)


def test_third_derivative_of_x_sin_x():
    x = mx.nd.array([0.3, -1.2, 2.5], dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        z = mx.nd.sin(x) * x
        dz = mx.autograd.grad(z, x, create_graph=True)
        d2 = mx.autograd.grad(dz, x, create_graph=True)
    d3 = mx.autograd.grad(d2, x)
    v = x.asnumpy()
    np.testing.assert_allclose(dz.asnumpy(), np.sin(v) + v * np.cos(v), rtol=1e-12)
    np.testing.assert_allclose(d2.asnumpy(), 2 * np.cos(v) - v * np.sin(v), rtol=1e-12)
    np.testing.assert_allclose(d3.asnumpy(), -3 * np.sin(v) - v * np.cos(v), rtol=1e-12)


def _penalty_gradient(net, x_value):
    """d/dweights of sum((d sum(net(x)) / dx)^2): a gradient penalty, a second derivative."""
    x = mx.nd.array(x_value, dtype="float64")
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
        dx = mx.autograd.grad(y, x, create_graph=True)
        penalty = (dx * dx).sum()
    penalty.backward()
    return dx.asnumpy(), {name: p.grad().asnumpy() for name, p in net.collect_params().items()}


def _mlp(hybridize):
    mx.random.seed(3)
    net = mx.gluon.nn.HybridSequential(prefix="mlp_")
    with net.name_scope():
        net.add(mx.gluon.nn.Dense(5, in_units=3, activation="tanh", dtype="float64"))
        net.add(mx.gluon.nn.Dense(2, in_units=5, dtype="float64"))
    net.initialize(mx.init.Uniform(0.8))
    if hybridize:
        net.hybridize()
    return net


def test_create_graph_through_a_hybridized_block_matches_the_imperative_block():
    x = np.array([[0.3, -0.6, 0.9], [0.1, 0.4, -0.2]])
    dx_h, grads_h = _penalty_gradient(_mlp(True), x)
    dx_i, grads_i = _penalty_gradient(_mlp(False), x)
    np.testing.assert_allclose(dx_h, dx_i, rtol=1e-12, atol=1e-14)
    assert grads_h.keys() == grads_i.keys() and len(grads_h) == 4
    for name in grads_h:
        np.testing.assert_allclose(grads_h[name], grads_i[name], rtol=1e-10, atol=1e-14, err_msg=name)
        # The output bias does not move dx, so its gradient is zero; every other one is not.
        assert (np.abs(grads_h[name]).max() > 0) == (name != "mlp_dense1_bias"), name


def test_create_graph_through_a_hybridized_block_matches_finite_differences():
    net = _mlp(True)
    x = np.array([[0.3, -0.6, 0.9], [0.1, 0.4, -0.2]])
    _, grads = _penalty_gradient(net, x)

    def penalty():  # through the compiled first-order gradient of the hybridized block
        xa = mx.nd.array(x, dtype="float64")
        xa.attach_grad()
        with mx.autograd.record():
            y = net(xa)
        return float((mx.autograd.grad(y, xa).asnumpy() ** 2).sum())

    h = 1e-6
    for name, param in net.collect_params().items():
        value = param.data().asnumpy()
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            for sign in (1, -1):
                moved = value.copy()
                moved[index] += sign * h
                param.set_data(mx.nd.array(moved, dtype="float64"))
                numeric[index] += sign * penalty() / (2 * h)
            param.set_data(mx.nd.array(value, dtype="float64"))
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-8, err_msg=name)
