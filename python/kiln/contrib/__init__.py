"""Contributed APIs (MXNet's mx.contrib): quantization."""
from . import quantization

__all__ = ["quantization"]
