"""Optimizers (mx.optimizer) as Trainer arguments: `gluon.Trainer(params, mx.optimizer.Adam(
learning_rate=0.001))` is `gluon.Trainer(params, 'adam', {'learning_rate': 0.001})`. The updates
themselves are Kiln's C++ optimizers (kiln/nn/optimizer.hpp), created by the Trainer."""


class Optimizer:
    """An optimizer's name and its options, with MXNet's option names."""

    def __init__(self, name, **kwargs):
        self.name = name
        self.kwargs = kwargs

    def __repr__(self):
        return f"{type(self).__name__}({self.kwargs})"


def _named(name, class_name):
    def init(self, **kwargs):
        Optimizer.__init__(self, name, **kwargs)
    return type(class_name, (Optimizer,), {"__init__": init})


SGD = _named("sgd", "SGD")
NAG = _named("nag", "NAG")
Adam = _named("adam", "Adam")
AdamW = _named("adamw", "AdamW")
RMSProp = _named("rmsprop", "RMSProp")
AdaGrad = _named("adagrad", "AdaGrad")


def create(name, **kwargs):
    return Optimizer(name.lower(), **kwargs)


__all__ = ["Optimizer", "SGD", "NAG", "Adam", "AdamW", "RMSProp", "AdaGrad", "create"]
