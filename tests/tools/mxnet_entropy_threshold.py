"""Prints MXNet 1.9.1's entropy (KL) thresholds for histograms, for test_calibration.cc.

    mxnet_entropy_threshold.py DIR COUNT

reads DIR/hist_I.npy, DIR/edges_I.npy and DIR/range_I.npy ([min, max]) for I < COUNT and prints
one line per histogram: the threshold and least divergence for int8 (255 levels), then for uint8
(511 levels when min >= 0, else the int8 ones again), from
mxnet.contrib.quantization._get_optimal_threshold.
"""
import os
import sys

import numpy as np
from mxnet.contrib.quantization import _get_optimal_threshold

folder, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    hist = np.load(os.path.join(folder, f"hist_{i}.npy"))
    edges = np.load(os.path.join(folder, f"edges_{i}.npy"))
    lo, hi = (float(v) for v in np.load(os.path.join(folder, f"range_{i}.npy")))
    data = (hist, edges, lo, hi, max(abs(lo), abs(hi)))
    _, _, t8, d8 = _get_optimal_threshold(data, "int8")
    _, _, tu8, du8 = _get_optimal_threshold(data, "uint8")
    print(f"{t8[0]:.9g} {d8[0]:.9g} {tu8[0]:.9g} {du8[0]:.9g}")
