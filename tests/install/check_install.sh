#!/usr/bin/env bash
# Installs the built Kiln into a scratch prefix, then configures, builds and runs a separate
# project that finds it with find_package(Kiln) and links kiln::kiln; and runs the installed kiln
# command, which must find the library without LD_LIBRARY_PATH.
#   check_install.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
src=$2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" > /dev/null
cmake -S "$src/tests/install/consumer" -B "$scratch/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$scratch/prefix" > /dev/null
cmake --build "$scratch/consumer" > /dev/null
LD_LIBRARY_PATH="$scratch/prefix/lib:${LD_LIBRARY_PATH:-}" "$scratch/consumer/consumer"
# The installed kiln command finds the installed library by itself (no LD_LIBRARY_PATH).
if [ -x "$scratch/prefix/bin/kiln" ]; then
  env -u LD_LIBRARY_PATH "$scratch/prefix/bin/kiln" --version | grep -q "^kiln " ||
    { echo "check_install: the installed kiln does not run" >&2; exit 1; }
fi
