"""MXNet's symbol tutorial ("Symbol - Neural network graphs"), unchanged except for importing kiln
instead of mxnet (the graph-drawing calls of mx.viz are left out)."""
import kiln as mx

# Basic symbol composition
a = mx.sym.Variable('a')
b = mx.sym.Variable('b')
c = a + b
print((a, b, c))

# elemental wise multiplication
d = a * b
# matrix multiplication
e = mx.sym.dot(a, b)
# reshape
f = mx.sym.reshape(d + e, shape=(1, 4))

# Basic neural networks
net = mx.sym.Variable('data')
net = mx.sym.FullyConnected(data=net, name='fc1', num_hidden=128)
net = mx.sym.Activation(data=net, name='relu1', act_type="relu")
net = mx.sym.FullyConnected(data=net, name='fc2', num_hidden=10)
net = mx.sym.SoftmaxOutput(data=net, name='out')
print(net.list_arguments())

net = mx.symbol.Variable('data')
w = mx.symbol.Variable('myweight')
net = mx.symbol.FullyConnected(data=net, weight=w, name='fc1', num_hidden=128)
print(net.list_arguments())

lhs = mx.symbol.Variable('data1')
rhs = mx.symbol.Variable('data2')
net = mx.symbol.FullyConnected(data=lhs + rhs, name='fc1', num_hidden=128)
print(net.list_arguments())

# Group multiple symbols
net = mx.sym.Variable('data')
fc1 = mx.sym.FullyConnected(data=net, name='fc1', num_hidden=128)
net = mx.sym.Activation(data=fc1, name='relu1', act_type="relu")
out1 = mx.sym.SoftmaxOutput(data=net, name='softmax')
out2 = mx.sym.LinearRegressionOutput(data=net, name='regression')
group = mx.sym.Group([out1, out2])
print(group.list_outputs())

# Infer data shape
arg_name = c.list_arguments()  # get the names of the inputs
out_name = c.list_outputs()    # get the names of the outputs
# infers output shape given the shape of input arguments
arg_shape, out_shape, _ = c.infer_shape(a=(2, 3), b=(2, 3))
print({'input': dict(zip(arg_name, arg_shape)),
       'output': dict(zip(out_name, out_shape))})

# Bind with data and evaluate
ex = c.bind(ctx=mx.cpu(), args={'a': mx.nd.ones([2, 3]),
                                'b': mx.nd.ones([2, 3])})
ex.forward()
print('number of outputs = %d\nthe first output = \n%s' % (
    len(ex.outputs), ex.outputs[0].asnumpy()))

ex = c.eval(ctx=mx.cpu(), a=mx.nd.ones([2, 3]), b=mx.nd.ones([2, 3]))
print('number of outputs = %d\nthe first output = \n%s' % (
    len(ex), ex[0].asnumpy()))

# simple_bind allocates the arguments from the data's shape
exe = f.simple_bind(mx.cpu(), a=(2, 2), b=(2, 2))
print(exe.forward(a=mx.nd.ones((2, 2)), b=mx.nd.ones((2, 2)) * 2)[0].asnumpy())

# Load and save
print(c.tojson())
c.save('symbol-c.json')
c2 = mx.sym.load('symbol-c.json')
print(c.tojson() == c2.tojson())
