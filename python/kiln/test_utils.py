"""Helpers for testing code written against Kiln or MXNet 1.x (mx.test_utils): comparisons of arrays
with tolerances chosen by dtype, random shapes and arrays, environment variables set for a block,
and the default context. Arrays may be NDArrays or numpy arrays."""
import contextlib
import os
import random

import numpy as np

import kiln as mx  # `from mx.test_utils import *` brings mx and np, as MXNet's does

from . import context as _context
from . import ndarray as _nd

_default_ctx = [None]


def default_context():
    """The context tests run on: the one set_default_context() gave, else the current default."""
    return _default_ctx[0] if _default_ctx[0] is not None else _context.current_context()


def set_default_context(ctx):
    _default_ctx[0] = ctx


def default_dtype():
    return np.float32


# The tolerances a comparison uses when none is given: the looser of the two arrays' dtypes.
_RTOLS = {np.dtype(np.float16): 1e-2, np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-5}
_ATOLS = {np.dtype(np.float16): 1e-1, np.dtype(np.float32): 1e-3, np.dtype(np.float64): 1e-20}


def _as_numpy(a):
    if isinstance(a, _nd.NDArray):
        return a.asnumpy()
    return np.asarray(a)


def _tolerance(table, a, b, given):
    if given is not None:
        return given
    return max(table.get(np.dtype(a.dtype), 0), table.get(np.dtype(b.dtype), 0))


def get_rtol(rtol=None, dtype=np.float32):
    return rtol if rtol is not None else _RTOLS.get(np.dtype(dtype), 0)


def get_atol(atol=None, dtype=np.float32):
    return atol if atol is not None else _ATOLS.get(np.dtype(dtype), 0)


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """Whether |a - b| <= atol + rtol * |b| everywhere (shapes broadcast when use_broadcast)."""
    a, b = _as_numpy(a), _as_numpy(b)
    if not use_broadcast and a.shape != b.shape:
        return False
    return bool(np.allclose(a, b, rtol=_tolerance(_RTOLS, a, b, rtol), atol=_tolerance(_ATOLS, a, b, atol),
                            equal_nan=equal_nan))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False, use_broadcast=True,
                        mismatches=(10, 10)):
    """Raises AssertionError, naming the worst elements, unless almost_equal(a, b, ...)."""
    a, b = _as_numpy(a), _as_numpy(b)
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shapes differ: {names[0]} {a.shape}, {names[1]} {b.shape}")
    rtol, atol = _tolerance(_RTOLS, a, b, rtol), _tolerance(_ATOLS, a, b, atol)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan):
        return
    a64, b64 = np.broadcast_arrays(a.astype(np.float64), b.astype(np.float64))
    excess = np.abs(a64 - b64) - (atol + rtol * np.abs(b64))
    worst = np.unravel_index(np.nanargmax(np.where(np.isnan(excess), np.inf, excess)), excess.shape)
    shown = max(mismatches)
    bad = np.argwhere(~np.isclose(a64, b64, rtol=rtol, atol=atol, equal_nan=equal_nan))[:shown]
    lines = [f"  at {tuple(int(i) for i in idx)}: {names[0]}={a64[tuple(idx)]!r}, {names[1]}={b64[tuple(idx)]!r}"
             for idx in bad]
    raise AssertionError(f"{names[0]} and {names[1]} differ beyond rtol={rtol}, atol={atol} "
                         f"(worst at {tuple(int(i) for i in worst)}):\n" + "\n".join(lines))


def assert_allclose(a, b, rtol=1e-07, atol=0, equal_nan=True):
    np.testing.assert_allclose(_as_numpy(a), _as_numpy(b), rtol=rtol, atol=atol, equal_nan=equal_nan)


def same(a, b):
    """Whether a and b have equal shapes and elements."""
    return bool(np.array_equal(_as_numpy(a), _as_numpy(b)))


def assert_exception(f, exception_type, *args, **kwargs):
    """Raises AssertionError unless f(*args, **kwargs) raises exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise {exception_type.__name__}")


@contextlib.contextmanager
def environment(*args):
    """Sets environment variables for a block: environment(name, value) or environment({name: value}),
    a value None unsetting one; the previous values come back afterwards."""
    if len(args) == 2:
        changes = {args[0]: args[1]}
    elif len(args) == 1 and isinstance(args[0], dict):
        changes = args[0]
    else:
        raise ValueError("environment(): expected (name, value) or a dict of names to values")
    saved = {name: os.environ.get(name) for name in changes}
    try:
        for name, value in changes.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = str(value)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextlib.contextmanager
def discard_stderr():
    """Sends what the process writes to file descriptor 2 (C++ logging included) to /dev/null."""
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return random.randint(low, dim0), random.randint(low, dim1)


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    low = 0 if allow_zero_size else 1
    return random.randint(low, dim0), random.randint(low, dim1), random.randint(low, dim2)


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of num_dim dimensions, each in [1, dim] ([0, dim] with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return tuple(np.random.randint(low, dim + 1, size=num_dim).tolist())


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None, shuffle_csr_indices=False,
                 distribution=None, ctx=None):
    """A dense NDArray of `shape` with values uniform in [0, 1) (modifier_func applied to them)."""
    if stype != "default":
        raise ValueError(f"rand_ndarray: stype '{stype}': Kiln has no sparse storage")
    values = np.random.uniform(0, 1, shape)
    if modifier_func is not None:
        values = modifier_func(values)
    return _nd.array(values, dtype=dtype or default_dtype())


def random_arrays(*shapes):
    """Standard normal float32 numpy arrays of the given shapes (one array when given one shape)."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(s) == 0
              else np.random.randn(*s).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_sample(population, k):
    """k distinct elements of population, in random order."""
    return random.sample(list(population), k)


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """numpy_reduce_func (np.sum, np.max, ...) over each axis of `axis` in turn (None: all)."""
    if axis is None:
        axes = list(range(dat.ndim))
    elif isinstance(axis, int):
        axes = [axis]
    else:
        axes = list(axis)
    axes = sorted(a % dat.ndim for a in axes) if dat.ndim else []
    out = dat
    for a in reversed(axes):
        out = numpy_reduce_func(out, axis=a)
    if keepdims:
        for a in axes:
            out = np.expand_dims(out, a)
    return out


def use_np(func):
    """MXNet's numpy-interface decorator: Kiln has no mxnet.numpy interface, so the function raises."""
    def refuse(*args, **kwargs):
        raise NotImplementedError(f"{func.__name__} uses MXNet's numpy interface (mx.np / npx), which Kiln "
                                  "does not have")
    refuse.__name__ = func.__name__
    return refuse
