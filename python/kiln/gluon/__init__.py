"""Gluon (mx.gluon): blocks, layers (nn), losses (loss), the Trainer, data loading (data) and
utilities, bound from Kiln's C++ Gluon (kiln/nn)."""
from .. import _kiln
from .block import Block, HybridBlock
from . import nn, loss, data, utils, contrib

Parameter = _kiln.gluon.Parameter
ParameterDict = _kiln.gluon.ParameterDict
SymbolBlock = _kiln.gluon.SymbolBlock
from .trainer import Trainer

__all__ = ["Block", "HybridBlock", "Parameter", "ParameterDict", "SymbolBlock", "Trainer", "nn", "loss", "data", "utils",
           "contrib"]
