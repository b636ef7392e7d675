#!/usr/bin/env bash
# Kiln's main job, from a fresh machine: install what is missing, build, and run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release --target ndarray_basics
echo "== ndarray_basics =="
build/release/examples/cpp/ndarray_basics
