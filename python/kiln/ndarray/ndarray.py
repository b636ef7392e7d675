"""mx.nd.ndarray: the module MXNet defines NDArray in, for code that imports from it."""
from .._kiln import NDArray

py_slice = slice

# MXNet's storage type codes; Kiln holds dense ('default') arrays only.
_STORAGE_TYPE_STR_TO_ID = {"undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_TYPE_ID_TO_STR = {v: k for k, v in _STORAGE_TYPE_STR_TO_ID.items()}

__all__ = ["NDArray"]
