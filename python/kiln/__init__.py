"""Kiln: a deep-learning framework with Apache MXNet's API over a C++20 core.

    import kiln as mx
    x = mx.nd.array([[1, 2], [3, 4]])
    x.attach_grad()
    with mx.autograd.record():
        y = (x * x).sum()
    y.backward()

The C++ core (libkiln) does the work; this package binds it (kiln._kiln) and arranges it in
MXNet's modules: nd, sym, autograd, gluon, init, metric, profiler, context, random, contrib,
test_utils.
"""
from . import _kiln
from ._kiln import Predictor, __version__, features
from . import base, context, random, profiler
from .base import KilnError, MXNetError
from .context import Context, cpu, gpu, num_gpus, current_context
from . import ndarray
from . import ndarray as nd
from . import autograd
from . import init, metric, lr_scheduler, optimizer, name, gluon
from . import symbol
from . import symbol as sym
from . import init as initializer
from . import contrib
from . import test_utils, runtime, util
from .util import np_shape, is_np_shape, set_np_shape, use_np_shape

__all__ = ["KilnError", "MXNetError", "Context", "cpu", "gpu", "num_gpus", "current_context",
           "Predictor", "nd", "ndarray", "sym", "symbol", "autograd", "gluon", "init", "initializer", "metric", "lr_scheduler", "optimizer", "name", "random", "profiler", "context", "base", "contrib",
           "test_utils", "runtime", "util", "np_shape", "is_np_shape", "set_np_shape", "use_np_shape"]
