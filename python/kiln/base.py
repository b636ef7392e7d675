"""Errors: every failure inside Kiln's C++ core raises KilnError (a RuntimeError) with its message.

MXNetError is the same class, so code written for MXNet (``except mx.base.MXNetError``) works.
"""
import numpy as np

from ._kiln import KilnError

MXNetError = KilnError

# The Python types MXNet's code checks arguments against.
integer_types = (int, np.integer)
numeric_types = (float, int, np.generic)
string_types = (str,)


def py_str(x):
    """Text from bytes (UTF-8) or text, as MXNet's C API strings come back in Python."""
    return x.decode("utf-8") if isinstance(x, bytes) else str(x)


class NotImplementedForSymbol(MXNetError):
    """An NDArray operation that a Symbol, a placeholder with no value, cannot do (bool(sym), len(sym),
    iterating it)."""

    def __init__(self, function, alias=None, *args):
        super().__init__(f"Function {getattr(function, '__name__', function)}"
                         + (f" (namely operator \"{alias}\")" if alias else "")
                         + " is not implemented for Symbol and only available in NDArray.")
        self.function = getattr(function, "__name__", function)
        self.alias = alias


__all__ = ["KilnError", "MXNetError", "integer_types", "numeric_types", "string_types", "py_str",
           "NotImplementedForSymbol"]
