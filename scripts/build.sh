#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release) with ccache.
#   scripts/build.sh [preset] [extra cmake --build args, e.g. --target kiln_engine_tests]
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:-release}
shift || true
jobs=${KILN_JOBS:-$(nproc)}
# Paths under the checkout are hashed relative to it, so clones in other folders share the cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake --preset "$preset" > /dev/null
cmake --build --preset "$preset" -j "$jobs" "$@"
