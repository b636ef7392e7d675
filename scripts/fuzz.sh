#!/usr/bin/env bash
# Builds the parser fuzz targets with clang (libFuzzer + ASan + UBSan) and runs each for a fixed
# time from its seed corpus in tests/fuzz/corpus/<name>. Exits non-zero on any crash.
#   scripts/fuzz.sh [seconds per target, default 20]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
scripts/build.sh fuzz --target fuzz_npy fuzz_mxnet_params fuzz_mxnet_json fuzz_onnx_model
for target in npy mxnet_params mxnet_json onnx_model; do
  work=build/fuzz/corpus-$target
  mkdir -p "$work"
  echo "fuzzing $target for ${seconds}s"
  build/fuzz/tests/fuzz/fuzz_$target -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" "tests/fuzz/corpus/$target" 2>&1 | tail -n 12
done
