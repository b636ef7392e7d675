#!/usr/bin/env bash
# Creates .venv-models, the Python environment that writes the real-model ONNX files and compares
# Kiln with ONNX Runtime on them (bench/models/). It is kept apart from .venv because PyTorch is
# big and the fast test command never needs it. Safe to run more than once: it only installs what
# is missing.
#
# PyPI's torch wheel is a CUDA build whose dependencies pull in ~3 GB of CUDA libraries. On a
# machine with the CUDA 13 toolkit (cuBLAS, cuDNN, ... registered with the dynamic linker) we
# install torch without its dependencies and add only the CUDA libraries the toolkit lacks, or
# has too old (NCCL); torch then imports and runs on the CPU. Elsewhere the full dependency set
# is installed.
set -euo pipefail
cd "$(dirname "$0")/.."

# These pins go together: the nvidia-* versions are the ones torch 2.15.0's metadata asks for.
torch_pin="torch==2.15.0"
torchvision_pin="torchvision==0.29.2"
torch_pure_python_deps=(filelock "typing-extensions>=4.13.0" "setuptools>=77.0.3" "sympy>=1.13.3"
  "networkx>=2.5.1" jinja2 "fsspec>=0.8.5")
cuda_libs_missing_from_toolkit=("nvidia-nccl-cu13==2.30.7" "nvidia-cusparselt-cu13==0.8.1"
  "nvidia-nvshmem-cu13==3.7.2" "nvidia-cufile==1.17.1.22.*")
other_packages=(numpy pillow onnx onnxruntime openvino)

python_bin=$(command -v python3.11 || command -v python3)
if [ ! -x .venv-models/bin/python ]; then
  "$python_bin" -m venv .venv-models
fi
# Keeps the multi-GB environment out of `git status` without touching the shared .gitignore.
[ -f .venv-models/.gitignore ] || echo '*' >.venv-models/.gitignore

venv_python=.venv-models/bin/python
if ! "$venv_python" -c "import torch, torchvision, onnx, onnxruntime, openvino, numpy" 2>/dev/null; then
  "$venv_python" -m pip install -q --upgrade pip
  if ldconfig -p | grep -q 'libcublas\.so\.13' && ldconfig -p | grep -q 'libcudnn\.so\.9'; then
    echo "setup-models: CUDA 13 toolkit found; installing torch without its bundled CUDA libraries"
    # --no-deps: pip would otherwise resolve torch's full CUDA dependency list. --no-warn-conflicts:
    # pip would list the CUDA packages left out on purpose as broken dependencies.
    "$venv_python" -m pip install -q --no-deps --no-warn-conflicts "$torch_pin" "$torchvision_pin" \
      "${cuda_libs_missing_from_toolkit[@]}"
    "$venv_python" -m pip install -q --no-warn-conflicts "${torch_pure_python_deps[@]}" "${other_packages[@]}"
  else
    echo "setup-models: no CUDA 13 toolkit; installing torch with its CUDA dependencies (~5 GB)"
    "$venv_python" -m pip install -q "$torch_pin" "$torchvision_pin" "${other_packages[@]}"
  fi
  "$venv_python" -c "import torch, torchvision, onnx, onnxruntime, openvino, numpy" ||
    { echo "setup-models: .venv-models cannot import its packages" >&2; exit 1; }
fi
echo "setup-models: done ($("$venv_python" -c 'import torch, onnxruntime; print("torch", torch.__version__, "onnxruntime", onnxruntime.__version__)'), $(du -sh .venv-models | cut -f1))"
