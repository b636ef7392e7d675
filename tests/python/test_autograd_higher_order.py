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


def test_create_graph_through_a_hybridized_block_is_refused():
    net = mx.gluon.nn.Dense(2, in_units=3)
    net.initialize()
    net.hybridize()
    x = mx.nd.ones((1, 3))
    x.attach_grad()
    with mx.autograd.record():
        y = net(x)
        with pytest.raises(mx.KilnError, match="hybridize"):
            mx.autograd.grad(y, x, create_graph=True)
