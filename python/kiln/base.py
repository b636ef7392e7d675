"""Errors: every failure inside Kiln's C++ core raises KilnError (a RuntimeError) with its message.

MXNetError is the same class, so code written for MXNet (``except mx.base.MXNetError``) works.
"""
from ._kiln import KilnError

MXNetError = KilnError

__all__ = ["KilnError", "MXNetError"]
