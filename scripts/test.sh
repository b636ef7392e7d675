#!/usr/bin/env bash
# Every test, from a fresh machine: install what is missing, build, and run
#   1. the release build's whole ctest suite (unit tests, op cases, install check, examples);
#   2. the unit, command-line, conformance, MXNet-file and Python tests under AddressSanitizer +
#      UndefinedBehaviorSanitizer;
#   3. the threaded tests (engine, NDArray, profiler, runtime, deploy) under ThreadSanitizer;
#   4. the file-parser fuzz targets for a short, fixed time.
# Stages can be picked with KILN_TEST_STAGES="release asan tsan fuzz" (the default is all).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
stages=${KILN_TEST_STAGES:-release asan tsan fuzz}
jobs=${KILN_JOBS:-$(nproc)}

for stage in $stages; do
  echo "== stage: $stage =="
  case "$stage" in
    release)
      scripts/setup-mxnet.sh  # the mxnet_files test compares against real MXNet
      scripts/build.sh release
      ctest --preset release -j "$jobs"
      ;;
    asan)
      # clang: the library, unit tests, the kiln command line, the conformance runner, the MXNet
      # file tools, the Python package and the fuzz targets (the fuzz stage runs them from this
      # build). mxnet_models is left to the release stage: it runs whole zoo networks, which take
      # minutes each under ASan and add nothing the mxnet_files and mxnet_export parsers miss.
      scripts/build.sh asan
      ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --preset asan -j "$jobs" -L "unit|cli|conformance|mxnet|python" -E "^mxnet_models$"
      ;;
    tsan)
      scripts/build.sh tsan --target kiln_engine_tests kiln_ndarray_tests kiln_profiler_tests kiln_runtime_tests kiln_deploy_tests
      TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 ctest --preset tsan -R "kiln_(engine|ndarray|profiler|runtime|deploy)_tests"
      ;;
    fuzz)
      scripts/fuzz.sh "${KILN_FUZZ_SECONDS:-20}"
      ;;
    *)
      echo "unknown stage: $stage" >&2
      exit 2
      ;;
  esac
done
echo "== all test stages passed: $stages =="
