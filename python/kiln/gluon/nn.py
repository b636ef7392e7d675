"""Gluon layers (mx.gluon.nn): the C++ layers, and Block / HybridBlock for Python subclasses."""
from .. import _kiln
from .block import Block, HybridBlock

_nn = _kiln.gluon.nn
Sequential = _kiln.gluon.Sequential
HybridSequential = _kiln.gluon.HybridSequential

Dense = _nn.Dense
Dropout = _nn.Dropout
Embedding = _nn.Embedding
Flatten = _nn.Flatten
Activation = _nn.Activation
LeakyReLU = _nn.LeakyReLU
PReLU = _nn.PReLU
ELU = _nn.ELU
SELU = _nn.SELU
Swish = _nn.Swish
SiLU = _nn.SiLU
GELU = _nn.GELU
Conv1D = _nn.Conv1D
Conv2D = _nn.Conv2D
Conv3D = _nn.Conv3D
Conv2DTranspose = _nn.Conv2DTranspose
MaxPool1D = _nn.MaxPool1D
MaxPool2D = _nn.MaxPool2D
MaxPool3D = _nn.MaxPool3D
AvgPool1D = _nn.AvgPool1D
AvgPool2D = _nn.AvgPool2D
AvgPool3D = _nn.AvgPool3D
GlobalAvgPool1D = _nn.GlobalAvgPool1D
GlobalAvgPool2D = _nn.GlobalAvgPool2D
GlobalAvgPool3D = _nn.GlobalAvgPool3D
GlobalMaxPool1D = _nn.GlobalMaxPool1D
GlobalMaxPool2D = _nn.GlobalMaxPool2D
GlobalMaxPool3D = _nn.GlobalMaxPool3D
BatchNorm = _nn.BatchNorm
LayerNorm = _nn.LayerNorm
InstanceNorm = _nn.InstanceNorm
GroupNorm = _nn.GroupNorm



class Lambda(Block):
    """A block running a function of NDArrays (or the name of a kiln.nd function)."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        from .. import ndarray
        self._func = getattr(ndarray, function) if isinstance(function, str) else function

    def forward(self, *args):
        return self._func(*args)


class HybridLambda(HybridBlock):
    """A hybrid block running function(F, *inputs) (or the name of an F function); hybridize()
    traces it like any HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        self._func = (lambda F, *args: getattr(F, function)(*args)) if isinstance(function, str) else function

    def hybrid_forward(self, F, *args):
        return self._func(F, *args)


__all__ = [name for name in dir() if not name.startswith("_")]
