"""Trains the MLP of examples/cpp/train_mlp.cpp from Python with Gluon's API: Dense(256, relu) -
Dropout(0.3) - Dense(128, relu) - Dense(10), hybridized, Adam lr 0.002, 15 epochs of batch 64 on
the 8x8 digits (data/digits, written by scripts/setup.sh). Prints the loss and accuracies per
epoch and the training throughput (the training loop only, as the C++ example counts it); test
accuracy reaches >= 97%.

    python examples/python/train_mlp.py [data_dir] [--imperative]
"""
import sys
import time

import numpy as np

import kiln as mx
from kiln import autograd, gluon, nd
from kiln.gluon import nn


def accuracy(net, x, y):
    metric = mx.metric.Accuracy()
    metric.update(y, net(x))
    return metric.get()[1]


def main():
    data_dir = sys.argv[1] if len(sys.argv) > 1 else "data/digits"
    imperative = "--imperative" in sys.argv
    train_x, train_y = (nd.array(np.load(f"{data_dir}/train_{k}.npy"), dtype=d) for k, d in (("x", "float32"), ("y", "int64")))
    test_x, test_y = (nd.array(np.load(f"{data_dir}/test_{k}.npy"), dtype=d) for k, d in (("x", "float32"), ("y", "int64")))

    mx.random.seed(42)
    np.random.seed(7)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation="relu"), nn.Dropout(0.3), nn.Dense(128, activation="relu"), nn.Dense(10))
    net.initialize(mx.init.Xavier())
    if not imperative:
        net.hybridize()

    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 0.002})
    loader = gluon.data.DataLoader(gluon.data.ArrayDataset(train_x, train_y), batch_size=64, shuffle=True)

    test_acc, train_seconds, trained_samples = 0.0, 0.0, 0
    for epoch in range(1, 16):
        loss_sum, samples = 0.0, 0
        start = time.perf_counter()
        for data, label in loader:
            with autograd.record():
                loss = loss_fn(net(data), label)
            loss.backward()
            trainer.step(data.shape[0])
            loss_sum += loss.sum().asscalar()
            samples += data.shape[0]
        train_seconds += time.perf_counter() - start
        trained_samples += samples
        test_acc = accuracy(net, test_x, test_y)
        print(f"epoch {epoch:2d}  loss {loss_sum / samples:.4f}  train acc {accuracy(net, train_x, train_y):.4f}"
              f"  test acc {test_acc:.4f}")
    print(f"training throughput: {trained_samples / train_seconds:.0f} samples/s")
    print(f"final test accuracy: {test_acc:.4f}")
    return 0 if test_acc >= 0.97 else 1


if __name__ == "__main__":
    sys.exit(main())
