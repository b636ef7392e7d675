"""MXNet's Gluon tutorials (the crash course's "Create a neural network" and the "Hybridize"
tutorial), unchanged except for importing kiln instead of mxnet."""
import kiln as mx
from kiln import nd
from kiln.gluon import nn

# Create your neural network's first layer
layer = nn.Dense(2)
print(layer)
layer.initialize()
x = nd.random.uniform(-1, 1, (3, 4))
print(layer(x))
print(layer.weight.data())

# Chain layers into a neural network
net = nn.Sequential()
# Add a sequence of layers.
net.add(  # Similar to Dense, it is not necessary to specify the input channels
        # by the argument `in_channels`, which will be  automatically inferred
        # in the first forward pass. Also, we apply a relu activation on the
        # output. In addition, we can use a tuple to specify a  non-square
        # kernel size, such as `kernel_size=(2,4)`
        nn.Conv2D(channels=6, kernel_size=5, activation='relu'),
        # One can also use a tuple to specify non-symmetric pool and stride sizes
        nn.MaxPool2D(pool_size=2, strides=2),
        nn.Conv2D(channels=16, kernel_size=3, activation='relu'),
        nn.MaxPool2D(pool_size=2, strides=2),
        # The dense layer will automatically reshape the 4-D output of last
        # max pooling layer into the 2-D shape: (x.shape[0], x.size/x.shape[0])
        nn.Dense(120, activation="relu"),
        nn.Dense(84, activation="relu"),
        nn.Dense(10))
print(net)
net.initialize()
# Input shape is (batch_size, color_channels, height, width)
x = nd.random.uniform(shape=(4, 1, 28, 28))
y = net(x)
print(y.shape)
print((net[0].weight.data().shape, net[5].bias.data().shape))


# Create a neural network flexibly
class MixMLP(nn.Block):
    def __init__(self, **kwargs):
        # Run `nn.Block`'s init method
        super(MixMLP, self).__init__(**kwargs)
        self.blk = nn.Sequential()
        self.blk.add(nn.Dense(3, activation='relu'),
                     nn.Dense(4, activation='relu'))
        self.dense = nn.Dense(5)

    def forward(self, x):
        y = nd.relu(self.blk(x))
        print(y)
        return self.dense(y)


net = MixMLP()
print(net)
net.initialize()
x = nd.random.uniform(shape=(2, 2))
print(net(x))
print(net.blk[1].weight.data())


# Hybridize: the same network imperatively and as one compiled graph
def get_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation="relu"),
                nn.Dense(128, activation="relu"),
                nn.Dense(2))
    net.initialize()
    return net


x = nd.random.normal(shape=(1, 512))
net = get_net()
print('=== net(x) ==={}'.format(net(x)))
net.hybridize()
print('=== net(x) ==={}'.format(net(x)))


class HybridNet(mx.gluon.HybridBlock):
    def __init__(self, **kwargs):
        super(HybridNet, self).__init__(**kwargs)
        with self.name_scope():
            self.fc1 = nn.Dense(3)
            self.fc2 = nn.Dense(2)

    def hybrid_forward(self, F, x):
        x = F.relu(self.fc1(x))
        return self.fc2(x)


net = HybridNet()
net.initialize()
x = nd.random.normal(shape=(1, 4))
print(net(x))
net.hybridize()
print(net(x))
net.export('hybridnet', epoch=1)
net.save_parameters('hybridnet.params')
net2 = HybridNet()
net2.load_parameters('hybridnet.params')
print((net2(x) - net(x)).abs().max())
