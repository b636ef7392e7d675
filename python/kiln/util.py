"""MXNet's shape-semantics switches (mx.util). Kiln always uses NumPy's shape semantics: () is a scalar
and a 0 dimension holds no elements (-1 marks an unknown one), which MXNet 1.x turns on with
mx.np_shape(True). Asking for MXNet's legacy semantics (0 as an unknown dimension) is refused."""
import contextlib
import functools


def is_np_shape():
    return True


def is_np_array():
    """Whether arrays are mxnet.numpy arrays: never in Kiln, which has no numpy interface."""
    return False


def _refuse_legacy(active):
    if not active:
        raise NotImplementedError("Kiln always uses NumPy shape semantics (a 0 dimension is empty, () is a scalar); "
                                  "MXNet's legacy semantics, where 0 is an unknown dimension, are not available")


def set_np_shape(active):
    """Returns the previous state (always True)."""
    _refuse_legacy(active)
    return True


@contextlib.contextmanager
def np_shape(active=True):
    _refuse_legacy(active)
    yield


def use_np_shape(func):
    """A decorator for functions that need NumPy shape semantics: Kiln's always."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)
    return wrapper


__all__ = ["is_np_shape", "is_np_array", "set_np_shape", "np_shape", "use_np_shape"]
