#!/usr/bin/env bash
# Creates .venv-mxnet, a Python environment with Apache MXNet 1.9.1, kept apart from .venv because
# MXNet 1.x needs numpy < 1.24. The `mxnet_files` test uses it to write model files with real
# MXNet and to load the files Kiln writes. Safe to run more than once: it only installs what is
# missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# The manylinux wheel of mxnet 1.9.1 runs on CPython up to 3.11.
python_bin=$(command -v python3.11 || command -v python3)
if [ ! -x .venv-mxnet/bin/python ]; then
  "$python_bin" -m venv .venv-mxnet
fi
if ! .venv-mxnet/bin/python -c "import mxnet, numpy" 2>/dev/null; then
  .venv-mxnet/bin/python -m pip install -q --upgrade pip
  .venv-mxnet/bin/python -m pip install -q "mxnet==1.9.1" "numpy<1.24"
fi
echo "setup-mxnet: done ($(.venv-mxnet/bin/python -c 'import mxnet; print("mxnet", mxnet.__version__)' 2>/dev/null))"
