#!/usr/bin/env bash
# Runs the core benchmarks and prints the numbers docs/BENCHMARKS.md records: Add bandwidth as a
# share of memcpy bandwidth (same run, same threads), the engine's cost per pushed op, and the
# caching allocator's speed-up on an allocation-heavy loop.
#   bench/core_report.sh [build dir, default build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/release}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
reps="--benchmark_repetitions=5 --benchmark_report_aggregates_only=true --benchmark_format=json"
"$build/bench/bench_elementwise" $reps > "$out/elementwise.json"
"$build/bench/bench_engine" $reps > "$out/engine.json"
"$build/bench/bench_allocator" $reps > "$out/allocator.json"
python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
def medians(name):
    with open(os.path.join(out, name)) as f:
        data = json.load(f)
    return {b["run_name"]: b for b in data["benchmarks"] if b.get("aggregate_name") == "median"}
e = medians("elementwise.json")
memcpy = e["BM_MemcpyParallel/real_time"]["bytes_per_second"] / 1e9
print(f"memcpy (parallel, 64 MiB): {memcpy:.1f} GB/s moved")
for name, label in [("BM_AddKernel/real_time", "Add kernel, 16M float32"),
                    ("BM_AddNDArray/real_time", "Add via NDArray (new output)"),
                    ("BM_AddInPlaceNDArray/real_time", "Add via NDArray, in place")]:
    bw = e[name]["bytes_per_second"] / 1e9
    print(f"{label}: {bw:.1f} GB/s = {100 * bw / memcpy:.0f}% of memcpy")
g = medians("engine.json")
for name, label in [("BM_PushIndependent/real_time", "engine, independent ops"),
                    ("BM_PushChain/real_time", "engine, one dependency chain"),
                    ("BM_PushSmallChain/real_time", "engine, one chain of small ops (run by the pusher)"),
                    ("BM_NDArraySmallAdd/real_time", "NDArray Add of 1-element arrays (inference+alloc+push+kernel)")]:
    print(f"{label}: {g[name]['ns_per_op'] * 1e9:.0f} ns per op")
a = medians("allocator.json")
for size in ["1024", "65536", "1048576"]:
    pooled = a[f"BM_AllocLoopPooled/{size}"]["real_time"]
    unpooled = a[f"BM_AllocLoopUnpooled/{size}"]["real_time"]
    print(f"allocation loop, {int(size) * 4} B tensors: pooled {pooled / 1e3:.1f} us, unpooled {unpooled / 1e3:.1f} us "
          f"({unpooled / pooled:.1f}x)")
PY
