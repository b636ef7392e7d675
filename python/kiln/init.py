"""Parameter initializers (mx.init), bound from kiln/nn/initializer.hpp."""
from . import _kiln

_init = _kiln.gluon.init
Initializer = _init.Initializer
Constant = _init.Constant
Zero = _init.Zero
One = _init.One
Uniform = _init.Uniform
Normal = _init.Normal
Xavier = _init.Xavier
MSRAPrelu = _init.MSRAPrelu

__all__ = ["Initializer", "Constant", "Zero", "One", "Uniform", "Normal", "Xavier", "MSRAPrelu"]
