#!/usr/bin/env bash
# MXNet 1.9.1's own Python unit tests run against Kiln: the six files issue-tracked for MXNet
# compatibility (test_ndarray, test_autograd, test_gluon, test_symbol, test_infer_shape, test_loss)
# are read from a clone of github.com/apache/mxnet at the tag 1.9.1 into a temporary folder (never
# into this repository), with a shim that makes `import mxnet` import `kiln` and mxnet.X import
# kiln.X and nothing else; nose (which the 1.9 tests import) goes into the same folder.
# Usage: bench/mxnet_unittests/run.sh MXNET_CLONE [pytest arguments...]
# Needs a release build (build/release/python). Prints pytest's summary; -rf lists the failures.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
clone=$1
shift
tag=1.9.1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/unittest" "$work/common" "$work/site/mxnet"
for f in common.py test_ndarray.py test_autograd.py test_gluon.py test_symbol.py test_infer_shape.py test_loss.py; do
  git -C "$clone" show "$tag:tests/python/unittest/$f" >"$work/unittest/$f"
done
for f in $(git -C "$clone" ls-tree --name-only "$tag" tests/python/common/); do
  git -C "$clone" show "$tag:$f" >"$work/common/$(basename "$f")"
done
"$repo/.venv/bin/python" -m pip install -q --target "$work/site" nose
cp "$(dirname "$0")/mxnet_alias.py" "$work/site/mxnet/__init__.py"
cd "$work/unittest"
PYTHONPATH="$work/site:$repo/build/release/python" "$repo/.venv/bin/python" -m pytest -q -p no:cacheprovider \
  "$@" test_ndarray.py test_autograd.py test_gluon.py test_symbol.py test_infer_shape.py test_loss.py
