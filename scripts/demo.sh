#!/usr/bin/env bash
# Kiln's main job, from a fresh machine: install what is missing, build, and run the demo:
# the NDArray API, then a model's way to production with the kiln command line: import an ONNX
# model, convert it to MXNet's format and back, optimize it (Conv+BN folding, post-op fusion),
# benchmark the reference kernels against oneDNN's, and profile it per op.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release --target ndarray_basics kiln_cli
kiln=build/release/apps/kiln/kiln
demo=build/demo
mkdir -p "$demo"

echo "== ndarray_basics =="
build/release/examples/cpp/ndarray_basics

echo "== a residual CNN, exported as PyTorch would (ONNX opset 17, free batch) =="
.venv/bin/python examples/models/write_demo_cnn.py "$demo/cnn.onnx"
"$kiln" info "$demo/cnn.onnx" --shape data=1,3,64,64

echo "== to MXNet's format and back, optimized on the way =="
"$kiln" convert "$demo/cnn.onnx" "$demo/cnn-symbol.json"
"$kiln" convert "$demo/cnn-symbol.json" "$demo/cnn_simplified.onnx" --simplify

echo "== benchmark: reference kernels, then oneDNN's (batch 8) =="
"$kiln" bench "$demo/cnn.onnx" --batch 8 --iters 20 --kernels reference
"$kiln" bench "$demo/cnn.onnx" --batch 8 --iters 50 --kernels fast

echo "== profile (per-op table; Chrome trace in $demo/trace.json) =="
"$kiln" profile "$demo/cnn.onnx" --out "$demo/trace.json" >"$demo/profile.txt"
head -n 30 "$demo/profile.txt"
