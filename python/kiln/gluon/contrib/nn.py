"""mx.gluon.contrib.nn: blocks that run their children side by side (Concurrent, HybridConcurrent) and
Identity, as in MXNet 1.x."""
from ..block import Block, HybridBlock


def _add_children(block, blocks):
    for b in blocks:
        block.register_child(b)


class Concurrent(Block):
    """Runs each child on the same input and concatenates their outputs along `axis`."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def add(self, *blocks):
        _add_children(self, blocks)

    def forward(self, x):
        from ... import ndarray as nd
        return nd.concat(*[child(x) for _, child in self._children()], dim=self.axis)


class HybridConcurrent(HybridBlock):
    """Concurrent as a HybridBlock: hybridize() compiles the children and the concatenation as one graph."""

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def add(self, *blocks):
        _add_children(self, blocks)

    def hybrid_forward(self, F, x):
        return F.concat(*[child(x) for _, child in self._children()], dim=self.axis)


class Identity(HybridBlock):
    """Passes its input on unchanged (a branch of a Concurrent that keeps the input)."""

    def hybrid_forward(self, F, x):
        return x


__all__ = ["Concurrent", "HybridConcurrent", "Identity"]
