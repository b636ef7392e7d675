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
  libonnx-dev libprotobuf-dev
  python3 python3-venv python3-pip
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
if ! .venv/bin/python -c "import numpy, onnx, ml_dtypes" 2>/dev/null; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r scripts/requirements-test.txt
fi
# oneDNN, the CPU kernel library, from PyPI's CPU-only GNU OpenMP build (oneDNN 3.2; see
# docs/BENCHMARKS.md for why this build): unpacked into .deps/onednn with its CMake package.
onednn_prefix=.deps/onednn
if [ ! -f "$onednn_prefix/lib/cmake/dnnl/dnnl-config.cmake" ]; then
  echo "setup: installing oneDNN into $onednn_prefix"
  .venv/bin/python -m pip install -q --no-deps --ignore-installed --prefix "$onednn_prefix" \
    onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
fi
echo "setup: done"
