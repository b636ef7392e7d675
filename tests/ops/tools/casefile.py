"""Writes op test cases in the format Kiln's C++ case runner reads.

A case is a folder holding case.json and .npy files:
  {"name": ..., "op": "Add", "source": "onnx" | "numpy",
   "attrs": {"axis": {"type": "int", "value": 1},
             "value": {"type": "tensor", "file": "attr_value.npy", "dtype": "float32"}},
   "inputs": [{"file": "input_0.npy", "dtype": "float32"} or null for a missing optional input,
              or {"sequence": [entries], "dtype": "float32"} for a sequence of tensors],
   "outputs": [{"file": "output_0.npy", "dtype": "float32"}],
   "rtol": 1e-3, "atol": 1e-7,
   "unsupported": "why Kiln cannot express this case" (optional)}
bfloat16 arrays (ml_dtypes) are stored as their uint16 bits with dtype "bfloat16"; ml_dtypes' 8- and
4-bit floats as their bits in uint8 (dtype "float8_e4m3fn", ...), and its 4- and 2-bit integers as
int8 or uint8 values (dtype "int4", ...), one byte per element as Kiln holds them.
"""

from __future__ import annotations

import json
import os

import numpy as np

try:
    import ml_dtypes

    _BF16 = np.dtype(ml_dtypes.bfloat16)
    # Kiln's storage types, by the names both use.
    _STORAGE_FLOATS = {np.dtype(getattr(ml_dtypes, n)): n for n in (
        "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
        "float4_e2m1fn")}
    _STORAGE_INTS = {np.dtype(getattr(ml_dtypes, n)): (n, np.int8 if n.startswith("int") else np.uint8)
                     for n in ("int4", "uint4", "int2", "uint2")}
except ImportError:  # pragma: no cover - the setup script installs it
    _BF16 = None
    _STORAGE_FLOATS, _STORAGE_INTS = {}, {}

_NAMES = {
    np.dtype(np.float32): "float32",
    np.dtype(np.float64): "float64",
    np.dtype(np.float16): "float16",
    np.dtype(np.int8): "int8",
    np.dtype(np.uint8): "uint8",
    np.dtype(np.int32): "int32",
    np.dtype(np.int64): "int64",
    np.dtype(np.bool_): "bool",
    np.dtype(np.int16): "int16",
    np.dtype(np.uint16): "uint16",
    np.dtype(np.uint32): "uint32",
    np.dtype(np.uint64): "uint64",
}


# ONNX TensorProto data types Kiln has: FLOAT, UINT8, INT8, UINT16, INT16, INT32, INT64, STRING, BOOL, FLOAT16,
# DOUBLE, UINT32, UINT64, BFLOAT16, and the storage types FLOAT8E4M3FN to INT2 (17-26).
KILN_ONNX_TYPES = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 16, *range(17, 27)}


class Sequence:
    """A sequence input or expected output: tensors of one element type, in order (the type is
    needed when there are none)."""

    def __init__(self, elements, dtype=None):
        self.elements = [np.asarray(e) for e in elements]
        self.dtype = np.dtype(dtype) if dtype is not None else self.elements[0].dtype


class Unsupported(Exception):
    """The case uses something Kiln has no way to express (a dtype, a sequence input, ...)."""


def dtype_name(array: np.ndarray) -> str:
    if array.dtype.kind in "OUS":
        return "string"
    if _BF16 is not None and array.dtype == _BF16:
        return "bfloat16"
    if array.dtype in _STORAGE_FLOATS:
        return _STORAGE_FLOATS[array.dtype]
    if array.dtype in _STORAGE_INTS:
        return _STORAGE_INTS[array.dtype][0]
    name = _NAMES.get(array.dtype)
    if name is None:
        raise Unsupported(f"dtype {array.dtype}")
    return name


def save_array(folder: str, stem: str, array) -> dict:
    array = np.asarray(array)
    name = dtype_name(array)
    if name == "string":  # numpy's text ('<U'), which Kiln reads as UTF-8 strings
        data = np.vectorize(lambda s: s.decode() if isinstance(s, bytes) else str(s), otypes=[str])(array) \
            if array.size else array.astype(str)
    elif name == "bfloat16":
        data = array.view(np.uint16)
    elif array.dtype in _STORAGE_FLOATS:
        data = array.view(np.uint8)
    elif array.dtype in _STORAGE_INTS:
        data = array.astype(_STORAGE_INTS[array.dtype][1])
    else:
        data = array
    path = os.path.join(folder, stem + ".npy")
    np.save(path, np.require(data, requirements="C"))  # keeps 0-d arrays 0-d
    return {"file": stem + ".npy", "dtype": name}


def save_value(folder: str, stem: str, value) -> dict:
    """An array, or a Sequence as its elements' entries."""
    if isinstance(value, Sequence):
        return {"sequence": [save_array(folder, f"{stem}_{k}", e) for k, e in enumerate(value.elements)],
                "dtype": dtype_name(np.empty(0, value.dtype))}
    return save_array(folder, stem, value)


def attr_entry(folder: str, key: str, value) -> dict:
    """Maps a Python value to a typed attribute entry."""
    if isinstance(value, (bool, int, np.integer)):
        return {"type": "int", "value": int(value)}
    if isinstance(value, (float, np.floating)):
        return {"type": "float", "value": float(value)}
    if isinstance(value, bytes):
        return {"type": "string", "value": value.decode()}
    if isinstance(value, str):
        return {"type": "string", "value": value}
    if isinstance(value, np.ndarray):
        return {"type": "tensor", **save_array(folder, "attr_" + key, value)}
    if isinstance(value, (list, tuple)):
        items = list(value)
        if all(isinstance(v, (bool, int, np.integer)) for v in items):
            return {"type": "ints", "value": [int(v) for v in items]}
        if all(isinstance(v, (int, float, np.integer, np.floating)) for v in items):
            return {"type": "floats", "value": [float(v) for v in items]}
        if all(isinstance(v, (str, bytes)) for v in items):
            return {"type": "strings", "value": [v.decode() if isinstance(v, bytes) else v for v in items]}
    raise Unsupported(f"attribute {key} of type {type(value).__name__}")


def write_case(root: str, name: str, op: str, inputs, outputs, attrs=None, rtol=1e-5, atol=1e-6,
               source="numpy", num_outputs=None, unsupported=None) -> None:
    """inputs: arrays or None (missing optional input); outputs: expected arrays.
    unsupported: why Kiln cannot express the case; it is then written without data."""
    folder = os.path.join(root, name)
    os.makedirs(folder, exist_ok=True)
    case = {"name": name, "op": op, "source": source, "rtol": rtol, "atol": atol, "attrs": {},
            "inputs": [], "outputs": []}
    try:
        if unsupported:
            raise Unsupported(unsupported)
        for key, value in (attrs or {}).items():
            case["attrs"][key] = attr_entry(folder, key, value)
        for i, x in enumerate(inputs):
            case["inputs"].append(None if x is None else save_value(folder, f"input_{i}", x))
        for i, y in enumerate(outputs):
            case["outputs"].append(None if y is None else save_value(folder, f"output_{i}", y))
    except Unsupported as e:
        case["unsupported"] = str(e)
    if num_outputs is not None:
        case["num_outputs"] = num_outputs
    with open(os.path.join(folder, "case.json"), "w") as f:
        json.dump(case, f, indent=1)
