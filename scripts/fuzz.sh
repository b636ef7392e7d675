#!/usr/bin/env bash
# Builds the parser fuzz targets in the asan preset (clang, libFuzzer + ASan + UBSan) and runs each
# for a fixed time from its seed corpus in tests/fuzz/corpus/<name>. Exits non-zero on any crash.
#   scripts/fuzz.sh [seconds per target, default 20] [target ...]
# The test command runs every target briefly; before a parser change is called done, each target
# it touches runs for an hour (scripts/fuzz.sh 3600 onnx_model).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(npy mxnet_params mxnet_json mxnet_import onnx_model onnx_external tensor_pb labels
                                    calibration_folder)
scripts/build.sh asan --target "${targets[@]/#/fuzz_}"
for target in "${targets[@]}"; do
  work=build/asan/corpus-$target
  mkdir -p "$work"
  echo "fuzzing $target for ${seconds}s"
  build/asan/tests/fuzz/fuzz_$target -max_total_time="$seconds" -max_len=4096 -rss_limit_mb=2048 \
    -print_final_stats=1 "$work" "tests/fuzz/corpus/$target" 2>&1 | tail -n 12
done
