#!/usr/bin/env bash
# Kiln's main job, from a fresh machine: install what is missing, build, then train a CNN with the
# Gluon API (C++), export it, and take it to production with `kiln optimize`: operator fusion,
# bf16 and int8 calibrated on training images, each stage checked against the original on the
# test set (the gate fails the run if accuracy drops more than 2 points) and timed against ONNX
# Runtime. Ends with the optimized model's per-op profile.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release --target train_cnn kiln_cli
kiln=build/release/apps/kiln/kiln
demo=build/demo
rm -rf "$demo" && mkdir -p "$demo"

echo "== train the digits CNN with Gluon (C++), hybridize and export it =="
build/release/examples/cpp/train_cnn data/digits --export "$demo/digits_cnn" | tail -n 4

echo "== calibration (32 batches of 8 training images) and validation (the test set) data =="
.venv/bin/python - "$demo" <<'PY'
import os, sys
import numpy as np
demo = sys.argv[1]
train = np.load("data/digits/train_x.npy").reshape(-1, 1, 8, 8).astype(np.float32)
os.makedirs(f"{demo}/calib"); os.makedirs(f"{demo}/val")
for i in range(32):
    np.save(f"{demo}/calib/{i:03d}.npy", train[8 * i:8 * i + 8])
np.save(f"{demo}/val/test.npy", np.load("data/digits/test_x.npy").reshape(-1, 1, 8, 8).astype(np.float32))
PY

echo "== kiln optimize: fuse, bf16, int8, with the accuracy gate and ONNX Runtime as reference =="
"$kiln" optimize "$demo/digits_cnn" --steps fuse,bf16,int8 --calib "$demo/calib" --val "$demo/val" \
  --labels data/digits/test_y.npy --max-degradation 2 --report "$demo/report.md" -o "$demo/digits_cnn_optimized.onnx"

echo "== the optimized model, per op (Chrome trace in $demo/trace.json) =="
"$kiln" profile "$demo/digits_cnn_optimized.onnx" --out "$demo/trace.json" >"$demo/profile.txt"
head -n 20 "$demo/profile.txt"
