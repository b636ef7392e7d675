"""Gluon's Block and HybridBlock for Python subclasses (mx.gluon.Block / HybridBlock).

The C++ blocks do the work (kiln/nn/block.hpp): naming, parameters, deferred initialization,
hybridize() (the Python hybrid_forward is traced into a graph and run compiled), export and
save/load. This module adds what Python code expects of them: children and parameters registered
by attribute assignment, `with self.name_scope():`, `self.params.get(...)` and parameters as
attributes (`dense.weight`).
"""
from .. import _kiln

_g = _kiln.gluon


class _NameScope:
    def __init__(self, block):
        self._block = block
        self._guard = None

    def __enter__(self):
        self._guard = _g._NameScope(self._block)
        return self

    def __exit__(self, *exc):
        self._guard.close()
        return False


class _BlockParams:
    """`self.params` of a Python block: get() makes a parameter named prefix + name."""

    def __init__(self, block):
        self._block = block

    def get(self, name, shape=None, dtype="float32", init=None, grad_req="write", lr_mult=1.0, wd_mult=1.0,
            allow_deferred_init=True, **kwargs):
        existing = self._block._own_parameter(name)
        if existing is not None:
            return existing
        return self._block._register_parameter(name, shape, dtype, init, grad_req, lr_mult, wd_mult,
                                               allow_deferred_init)

    def __getattr__(self, name):
        return getattr(self._block.collect_params(), name)


def _name_scope(self):
    return _NameScope(self)


def _register_child(self, block, name=None):
    registered = {child_name for child_name, _ in self._children()}
    name = str(len(registered)) if name is None else name
    if name not in registered:
        self._register_child(block, name)


def _params(self):
    return _BlockParams(self)


def _getattr(self, name):
    if not name.startswith("__"):
        param = self._own_parameter(name)
        if param is not None:
            return param
    raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")


def _summary_repr(self):
    lines = [f"{type(self).__name__}("]
    for name, child in self._children():
        inner = repr(child).replace("\n", "\n  ")
        lines.append(f"  ({name}): {inner}")
    return "\n".join(lines) + ")" if len(lines) > 1 else f"{type(self).__name__}({self.name})"


def _apply(self, fn):
    """Calls fn(block) on every descendant, children before their parent, and returns self."""
    for _, child in self._children():
        child.apply(fn)
    fn(self)
    return self


# Every block, C++ layers included, gets these.
_g.Block.name_scope = _name_scope
_g.Block.register_child = _register_child
_g.Block.params = property(_params)
_g.Block.apply = _apply
_g.Block.__getattr__ = _getattr
_g.Block.__repr__ = _summary_repr


class _PythonBlock:
    """Registers blocks assigned as attributes as children under the attribute's name."""

    def __setattr__(self, name, value):
        if isinstance(value, _g.Block) and not name.startswith("_"):
            self.register_child(value, name)
        object.__setattr__(self, name, value)


def _refuse_shared_params(block, params):
    """MXNet's `params=` (another block's ParameterDict, whose parameters this block would reuse) is
    refused rather than ignored: the block would silently get parameters of its own."""
    if params is not None:
        raise NotImplementedError(f"{type(block).__name__}(params=...): sharing another block's parameters "
                                  "is not supported; give each block its own parameters")


class Block(_PythonBlock, _g.Block):
    """Base class of Python blocks: implement forward(self, *inputs)."""

    def __init__(self, prefix=None, params=None):
        _refuse_shared_params(self, params)
        _g.Block.__init__(self, type(self).__name__.lower(), prefix or "")


class HybridBlock(_PythonBlock, _g.HybridBlock):
    """Base class of Python hybrid blocks: implement hybrid_forward(self, F, *inputs, **params), with
    F the kiln.nd module; hybridize() then runs it as one compiled graph. A block whose parameters
    have unknown (0) dimensions implements infer_shape(self, *inputs) to set them."""

    def __init__(self, prefix=None, params=None):
        _refuse_shared_params(self, params)
        _g.HybridBlock.__init__(self, type(self).__name__.lower(), prefix or "")


__all__ = ["Block", "HybridBlock"]
