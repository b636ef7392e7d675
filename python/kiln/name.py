"""Block naming (mx.name): inside `with mx.name.NameManager():` blocks made on this thread count
their names from zero again ("dense0_"), and the previous counts come back afterwards."""
from . import _kiln


class NameManager:
    def __init__(self):
        self._guard = None

    def __enter__(self):
        self._guard = _kiln.gluon._NameManager()
        return self

    def __exit__(self, *exc):
        self._guard.close()
        return False


__all__ = ["NameManager"]
