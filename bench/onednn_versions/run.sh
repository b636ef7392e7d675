#!/usr/bin/env bash
# Builds bench/onednn_versions/onednn_versions.cc against each installed oneDNN and prints one
# markdown table of the cases' times, GFLOPS and chosen implementations, version by version.
#   bench/onednn_versions/run.sh [PREFIX ...]
# A PREFIX holds include/ and lib/ (or lib/x86_64-linux-gnu/) of one oneDNN; the default is the
# three candidates of docs/BENCHMARKS.md ("oneDNN build"). Environment: THREADS (2), ROUNDS (5),
# CASE_SECONDS per case and round (0.2), ONLY (a substring of the case names). The versions run in turn,
# round after round, and each case keeps its best round, so that load from other processes on a
# shared machine falls on every version alike and disturbs the figures least.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${THREADS:-2}
rounds=${ROUNDS:-5}
seconds=${CASE_SECONDS:-0.2}
only=${ONLY:-}
if [ $# -eq 0 ]; then
  set -- /tmp/dnnl26/usr .deps/onednn /tmp/dnnl_new
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

versions=()
for prefix in "$@"; do
  lib=$prefix/lib
  [ -e "$lib/x86_64-linux-gnu/libdnnl.so" ] && lib=$lib/x86_64-linux-gnu
  if [ ! -e "$lib/libdnnl.so" ] || [ ! -f "$prefix/include/oneapi/dnnl/dnnl.hpp" ]; then
    echo "run.sh: no oneDNN under $prefix, skipped" >&2
    continue
  fi
  i=${#versions[@]}
  # RPATH, not RUNPATH: the library's own dependencies (OpenCL, TBB, SYCL) sit beside it.
  g++ -O2 -std=c++17 -I"$prefix/include" bench/onednn_versions/onednn_versions.cc -L"$lib" -ldnnl \
    -Wl,--disable-new-dtags,-rpath,"$(realpath "$lib")" -o "$out/bench$i"
  versions+=("$prefix")
done

for round in $(seq "$rounds"); do
  for i in "${!versions[@]}"; do
    args=(--seconds "$seconds")
    [ -n "$only" ] && args+=(--only "$only")
    if ! OMP_NUM_THREADS=$threads "$out/bench$i" "${args[@]}" > "$out/v$i.r$round" 2> "$out/v$i.err"; then
      echo "# failed: $(tail -1 "$out/v$i.err")" >> "$out/v$i.r$round"
    fi
  done
done

# Which kernels bf16 ran on, as oneDNN's own log says (ONEDNN_VERBOSE=1; 2.x logs the same way).
for i in "${!versions[@]}"; do
  OMP_NUM_THREADS=$threads ONEDNN_VERBOSE=1 "$out/bench$i" --only bf16 --seconds 0.001 2>/dev/null |
    awk -F, '$0 ~ /,exec,cpu,(convolution|matmul),/ { for (f = 1; f <= NF; ++f) if ($f == "exec") print $(f + 3) }' |
    sort | uniq -c | awk '{ printf "%s%s x%d", (NR > 1 ? ", " : ""), $2, $1 } END { print "" }' > "$out/v$i.bf16" || true
done

python3 - "$out" "${#versions[@]}" "$rounds" "$threads" "${versions[@]}" <<'PY'
import sys, os
out, n, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
prefixes = sys.argv[5:]
# best[(case, dtype)][version] = [best ms, lowest median ms, GFLOPS at the best, impl] over rounds
names, failures, best = [], {}, {}
for v in range(n):
    for r in range(1, rounds + 1):
        for line in open(os.path.join(out, f"v{v}.r{r}")):
            line = line.rstrip("\n")
            if line.startswith("# oneDNN"):
                if len(names) <= v:
                    names.append(line[2:] + f" ({prefixes[v]})")
                continue
            if line.startswith("# failed"):
                failures[v] = line[len("# failed: "):]
                continue
            if "\t" not in line:
                continue  # oneDNN's own messages (3.x prints its errors on stdout)
            case, dtype, mflop, best_ms, median_ms, gflops, impl = line.split("\t")
            cell = best.setdefault((case, dtype), {"mflop": mflop})
            if best_ms == "-":
                cell.setdefault(v, None)
                continue
            old = cell.get(v)
            if old is None:
                cell[v] = [float(best_ms), float(median_ms), gflops, impl]
                continue
            if float(best_ms) < old[0]:
                old[0], old[2] = float(best_ms), gflops
            old[1] = min(old[1], float(median_ms))
    if len(names) <= v:
        names.append(prefixes[v])
print(f"threads {threads}, {rounds} rounds x 20 batches; ms per call: best / median of the least disturbed "
      "round (GFLOPS at the best), implementation")
for v, name in enumerate(names):
    print(f"- v{v}: {name}" + (f": did not run ({failures[v]})" if v in failures else ""))
ran = [v for v in range(n) if v not in failures]
for v in ran:
    print(f"- v{v} bf16 convolution and matmul calls by kernel (ONEDNN_VERBOSE=1): "
          + open(os.path.join(out, f"v{v}.bf16")).read().strip())
print()
print("| case | dtype | MFLOP | " + " | ".join(f"v{v} ms (GFLOPS) | v{v} impl" for v in ran) + " |")
print("|---|---|---|" + "---|---|" * len(ran))
for (case, dtype), cell in best.items():
    cols = []
    for v in ran:
        if cell.get(v) is None:
            cols += ["-", "unsupported"]
            continue
        best_ms, median_ms, gflops, impl = cell[v]
        cols += [f"{best_ms:.3f} / {median_ms:.3f} ({gflops})", impl]
    print(f"| {case} | {dtype} | {cell['mflop']} | " + " | ".join(cols) + " |")
PY
