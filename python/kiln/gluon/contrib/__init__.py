"""mx.gluon.contrib: the blocks MXNet 1.x keeps outside gluon.nn."""
from . import nn

__all__ = ["nn"]
