"""MXNet's NDArray tutorials (the crash course's "Manipulate data with ndarray" and the NDArray
API tutorial), unchanged except for importing kiln instead of mxnet."""
import kiln as mx
import numpy as np
from kiln import nd

# Get started
print(nd.array(((1, 2, 3), (5, 6, 7))))
x = nd.ones((2, 3))
print(x)
y = nd.random.uniform(-1, 1, (2, 3))
print(y)
x = nd.full((2, 3), 2.0)
print(x)
print((x.shape, x.size, x.dtype))

# Operations
print(x * y)
print(y.exp())
print(nd.dot(x, y.T))

# Indexing
print(y[1, 2])
print(y[:, 1:3])
y[:, 1:3] = 2
print(y)
y[1:2, 0:2] = 4
print(y)

# Converting between MXNet NDArray and NumPy
a = x.asnumpy()
print((type(a), a))
print(nd.array(a))

# Array creation
a = mx.nd.array([1, 2, 3])
b = mx.nd.array([[1, 2, 3], [2, 3, 4]], dtype=np.int32)
print({'a.shape': a.shape, 'b.shape': b.shape})
print(b.dtype.__name__)
c = mx.nd.array(np.arange(6).reshape(3, 2))
print(c.shape)
a = mx.nd.empty((2, 3))
b = mx.nd.zeros((2, 3))
c = mx.nd.ones((2, 3))
d = mx.nd.full((2, 3), 7)
print(b.asnumpy(), c.asnumpy(), d.asnumpy())

# Basic operations, elementwise
a = mx.nd.ones((2, 3))
b = mx.nd.full((2, 3), 5)
c = a + b
d = a - b
e = a * b
f = -b
g = a / b
h = b ** 2
print(c.asnumpy(), d.asnumpy(), e.asnumpy(), f.asnumpy(), g.asnumpy(), h.asnumpy())
a += b
print(a.asnumpy())
a = mx.nd.arange(4).reshape((2, 2))
b = a * a
c = mx.nd.dot(a, a)
print("b: %s, \n c: %s" % (b.asnumpy(), c.asnumpy()))

# Indexing and slicing
a = mx.nd.array(np.arange(6).reshape(3, 2))
a[1:2] = 1
print(a[:].asnumpy())
d = mx.nd.slice_axis(a, axis=1, begin=1, end=2)
print(d.asnumpy())

# Shape changing, concatenation, reduce, broadcast
a = mx.nd.array(np.arange(24))
b = a.reshape((2, 3, 4))
print(b.asnumpy())
a = mx.nd.ones((2, 3))
b = mx.nd.ones((2, 3)) * 2
c = mx.nd.concat(a, b)
print(c.asnumpy())
a = mx.nd.ones((2, 3))
b = mx.nd.sum(a)
print(b.asnumpy())
c = mx.nd.sum_axis(a, axis=1)
print(c.asnumpy())
a = mx.nd.array(np.arange(6).reshape(6, 1))
b = a.broadcast_to((6, 4))
print(b.asnumpy())
c = a.reshape((2, 1, 1, 3))
d = c.broadcast_to((2, 2, 2, 3))
print(d.asnumpy())
a = mx.nd.ones((3, 2))
b = mx.nd.ones((1, 2))
c = a + b
print(c.asnumpy())

# Copies
a = mx.nd.ones((2, 2))
b = a
print(b is a)
b = a.copy()
print(b is a)
b = mx.nd.ones(a.shape)
c = b
c[:] = a
d = b
a.copyto(d)
print(c is b, d is b)

# Lazy evaluation and synchronization
a = mx.nd.ones((1000, 1000))
b = mx.nd.ones((1000, 1000))
c = mx.nd.dot(a, b)
c.wait_to_read()
mx.nd.waitall()
print(c[0, 0].asscalar())

# Serialize from/to (distributed) filesystems
a = mx.nd.ones((2, 3))
b = mx.nd.ones((5, 6))
mx.nd.save("temp.ndarray", [a, b])
c = mx.nd.load("temp.ndarray")
print(c)
d = {'a': a, 'b': b}
mx.nd.save("temp.ndarray", d)
c = mx.nd.load("temp.ndarray")
print(c)
