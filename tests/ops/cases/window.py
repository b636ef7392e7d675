"""numpy cases for HannWindow, HammingWindow and BlackmanWindow: periodic and symmetric windows of
0, 1, 2, odd and even lengths, int32 and int64 sizes (scalars and one-element tensors), and every
output_datatype Kiln has (integers truncate, as ONNX's Cast does).

Expected values are the cosine-sum formulas in float64; a symmetric window of one point is [1].
"""

import ml_dtypes
import numpy as np
from casefile import write_case

# ONNX TensorProto codes of the output types Kiln has.
OUTPUT_TYPES = {1: np.float32, 11: np.float64, 10: np.float16, 16: ml_dtypes.bfloat16, 3: np.int8, 2: np.uint8,
                6: np.int32, 7: np.int64}
WINDOWS = {
    "HannWindow": (0.5, 0.5, 0.0),
    "HammingWindow": (25 / 46, 21 / 46, 0.0),
    "BlackmanWindow": (0.42, 0.5, 0.08),
}


def window(coefficients, size, periodic):
    a0, a1, a2 = coefficients
    period = size if periodic else size - 1
    if period == 0:
        return np.ones(size)
    angle = 2 * np.pi * np.arange(size) / period
    return a0 - a1 * np.cos(angle) + a2 * np.cos(2 * angle)


def write(root):
    for op, coefficients in WINDOWS.items():
        for size in [0, 1, 2, 7, 16]:
            for periodic in (0, 1):
                y = window(coefficients, size, periodic).astype(np.float32)
                write_case(root, f"{op.lower()}_{size}_{periodic}", op, [np.array(size, dtype=np.int64)], [y],
                           attrs={"periodic": periodic})
        for code, dtype in OUTPUT_TYPES.items():
            y = window(coefficients, 9, 1)
            tol = {10: 1e-3, 16: 1e-2}.get(code, 1e-6)
            write_case(root, f"{op.lower()}_type_{code}", op, [np.array(9, dtype=np.int32)], [y.astype(dtype)],
                       attrs={"output_datatype": code}, rtol=tol, atol=tol)
        y = window(coefficients, 5, 0).astype(np.float32)
        write_case(root, f"{op.lower()}_size_1d", op, [np.array([5], dtype=np.int32)], [y], attrs={"periodic": 0})
