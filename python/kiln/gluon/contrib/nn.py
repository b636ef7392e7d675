"""mx.gluon.contrib.nn: blocks that run their children side by side (Concurrent, HybridConcurrent) and
Identity, as in MXNet 1.x."""
from ..block import Block, HybridBlock


class _Concurrent:
    """What both Concurrent blocks share: the concatenation axis and add()."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def add(self, *blocks):
        for block in blocks:
            self.register_child(block)


class Concurrent(_Concurrent, Block):
    """Runs each child on the same input and concatenates their outputs along `axis`."""

    def forward(self, x):
        from ... import ndarray as nd
        return nd.concat(*[child(x) for _, child in self._children()], dim=self.axis)


class HybridConcurrent(_Concurrent, HybridBlock):
    """Concurrent as a HybridBlock: hybridize() compiles the children and the concatenation as one graph."""

    def hybrid_forward(self, F, x):
        return F.concat(*[child(x) for _, child in self._children()], dim=self.axis)


class Identity(HybridBlock):
    """Passes its input on unchanged (a branch of a Concurrent that keeps the input)."""

    def hybrid_forward(self, F, x):
        return x


__all__ = ["Concurrent", "HybridConcurrent", "Identity"]
