#!/usr/bin/env bash
# Installs what Kiln needs on a Debian 12 machine: compilers and libraries from apt,
# and a Python virtual environment (.venv) with the packages the tests compare against.
# Safe to run more than once: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

apt_packages=(
  build-essential cmake ninja-build ccache pkg-config git
  clang-format clang libclang-rt-14-dev
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev
  libonnx-dev libprotobuf-dev libonnx-testdata
  python3 python3-venv python3-pip python3-dev
)

missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing apt packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The test references (numpy, the ONNX backend node test data) live in a venv of our own,
# so the system Python is left alone.
python_bin=$(command -v python3)
if [ ! -x .venv/bin/python ]; then
  "$python_bin" -m venv .venv
fi
# Every module of requirements-test.txt is checked: one missing would turn the tests that need it
# into failures (they never skip).
test_modules="numpy, onnx, ml_dtypes, onnxruntime, sklearn, pybind11, pytest, scikit_build_core"
if ! .venv/bin/python -c "import $test_modules" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r scripts/requirements-test.txt
  .venv/bin/python -c "import $test_modules" || { echo "setup: .venv lacks a test module" >&2; exit 1; }
fi
# oneDNN, the CPU kernel library, from PyPI's CPU-only GNU OpenMP build (oneDNN 3.2; see
# docs/BENCHMARKS.md for why this build): unpacked into .deps/onednn with its CMake package.
onednn_prefix=.deps/onednn
if [ ! -f "$onednn_prefix/lib/cmake/dnnl/dnnl-config.cmake" ]; then
  echo "setup: installing oneDNN into $onednn_prefix"
  .venv/bin/python -m pip install -q --no-deps --ignore-installed --prefix "$onednn_prefix" \
    onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
fi
# The digits data the training examples use (examples/cpp/train_*.cpp): scikit-learn's bundled
# 8x8 digits, split 80/20 with a fixed seed, images scaled to [0, 1] (float32), labels int64.
if [ ! -f data/digits/test_y.npy ]; then
  echo "setup: writing data/digits"
  .venv/bin/python - <<'PY'
import os

import numpy as np
from sklearn.datasets import load_digits

digits = load_digits()
x = (digits.images / 16.0).astype(np.float32).reshape(-1, 64)
y = digits.target.astype(np.int64)
order = np.random.RandomState(0).permutation(len(y))
split = int(0.8 * len(y))
os.makedirs("data/digits", exist_ok=True)
for part, idx in (("train", order[:split]), ("test", order[split:])):
    np.save(f"data/digits/{part}_x.npy", x[idx])
    np.save(f"data/digits/{part}_y.npy", y[idx])
PY
fi
echo "setup: done"
