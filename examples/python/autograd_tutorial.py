"""MXNet's autograd tutorials (the crash course's "Automatic differentiation with autograd" and
the x**2 + 3x + 2 example), unchanged except for importing kiln instead of mxnet."""
import kiln as mx
from kiln import autograd, nd

# x**2 + 3x + 2 at [1, 2, 3]: the gradient is 2x + 3
x = mx.nd.array([1, 2, 3])
x.attach_grad()
with mx.autograd.record():
    y = x ** 2 + 3 * x + 2
y.backward()
print(x.grad)

# Basic usage
x = nd.array([[1, 2], [3, 4]])
x.attach_grad()
with autograd.record():
    y = 2 * x * x
y.backward()
print(x.grad)


# Using Python control flows
def f(a):
    b = a * 2
    while b.norm().asscalar() < 1000:
        b = b * 2
    if b.sum().asscalar() >= 0:
        c = b[0]
    else:
        c = b[1]
    return c


a = nd.random.uniform(shape=2)
a.attach_grad()
with autograd.record():
    c = f(a)
c.backward()
print([a.grad, c / a])

# Head gradients and pause
x = nd.array([1.0, 2.0, 3.0])
x.attach_grad()
with autograd.record():
    y = x * x
    with autograd.pause():
        print(autograd.is_recording())
    z = y * 2
z.backward(nd.array([1.0, 0.1, 0.01]))
print(x.grad)
