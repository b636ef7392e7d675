#!/usr/bin/env bash
# The kiln command line end to end on a small MXNet MLP: info (text and JSON), run (outputs equal
# the Predictor's), bench --json fields, profile's Chrome trace, and exit statuses for errors.
# Usage: test_cli.sh KILN MAKE_MLP_MODEL PYTHON WORKDIR
set -euo pipefail
kiln=$1 make_model=$2 python=$3 dir=$4
rm -rf "$dir" && mkdir -p "$dir"
"$make_model" "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

# Expects exit status $1 from the rest of the line, and "kiln: error:" for status 1.
expect_status() {
  local want=$1; shift
  set +e; "$@" >"$dir/out.txt" 2>"$dir/err.txt"; local got=$?; set -e
  [ "$got" -eq "$want" ] || { cat "$dir/err.txt" >&2; fail "'$*' exited $got, expected $want"; }
  if [ "$want" -eq 1 ]; then grep -q "^kiln: error: " "$dir/err.txt" || fail "'$*' printed no 'kiln: error:'"; fi
}

# info
"$kiln" info "$dir/mlp-symbol.json" >"$dir/info.txt"
grep -q "data  float32 (?, 20)" "$dir/info.txt" || fail "info: no input line"
grep -q "fc2_output" "$dir/info.txt" || fail "info: no output"
grep -q "parameters: 1002 " "$dir/info.txt" || fail "info: wrong parameter count"
"$kiln" info "$dir/mlp" --epoch 1 --json --shape data=4,20 >"$dir/info.json"
"$python" - "$dir/info.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
assert info["inputs"] == [{"name": "data", "dtype": "float32", "shape": [-1, 20]}], info["inputs"]
assert info["outputs"][0]["shape"] == [4, 10], info["outputs"]
assert info["parameters"] == {"count": 20 * 32 + 32 + 32 * 10 + 10, "bytes": 4 * 1002}, info["parameters"]
# Two Gemms (2 * 4 * (20*32 + 32*10) FLOPs), and Relu with 4 * 32 elements at least.
assert info["flops_by_op"]["Gemm"] == 2 * 4 * (20 * 32 + 32 * 10), info["flops_by_op"]
assert info["flops"] >= info["flops_by_op"]["Gemm"] + 4 * 32, info["flops"]
assert sum(info["ops"].values()) == info["num_nodes"]
PY

# run: the output equals the Predictor's
"$kiln" run "$dir/mlp-symbol.json" --input data="$dir/x.npy" --output-dir "$dir/out" >/dev/null
"$python" - "$dir" <<'PY'
import numpy as np, sys
d = sys.argv[1]
got, want = np.load(d + "/out/fc2_output.npy"), np.load(d + "/reference.npy")
assert got.shape == (3, 10) and np.array_equal(got, want), (got, want)
PY

# bench --json
"$kiln" bench "$dir/mlp-symbol.json" --batch 4 --warmup 2 --iters 20 --threads 1 --json >"$dir/bench.json"
"$python" - "$dir/bench.json" <<'PY'
import json, sys
b = json.load(open(sys.argv[1]))
for key in ["mean_ms", "p50_ms", "p90_ms", "p99_ms", "throughput", "gflops", "flops", "batch", "iters"]:
    assert key in b, key
assert b["batch"] == 4 and b["iters"] == 20 and b["threads"] == 1
assert 0 < b["p50_ms"] <= b["p90_ms"] <= b["p99_ms"] and b["throughput"] > 0 and b["gflops"] > 0, b
PY

# profile: a valid Chrome trace with one event per node, and the aggregate table
"$kiln" profile "$dir/mlp-symbol.json" --out "$dir/trace.json" --iters 3 >"$dir/profile.txt"
grep -q "Gemm" "$dir/profile.txt" || fail "profile: no Gemm row"
"$python" - "$dir/trace.json" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
ops = [e for e in events if e.get("ph") == "X" and e.get("cat") == "operator"]
assert ops, "no operator events"
assert any("fc1" in e["name"] for e in ops), sorted({e["name"] for e in ops})
PY

# errors: failures exit 1, usage errors 2
expect_status 1 "$kiln" info "$dir/missing-symbol.json"
expect_status 1 "$kiln" info "$dir/model.onnx"
grep -q "cannot open ONNX model" "$dir/err.txt" || fail "onnx: wrong message"
expect_status 1 "$kiln" info "$dir/mlp" --epoch 7
expect_status 1 "$kiln" run "$dir/mlp-symbol.json" --input wrong="$dir/x.npy" --output-dir "$dir/out"
expect_status 1 "$kiln" run "$dir/mlp-symbol.json" --input data="$dir/reference.npy" --output-dir "$dir/out"
grep -q "input 'data'" "$dir/err.txt" || fail "run: the shape error does not name the input"
expect_status 2 "$kiln"
expect_status 2 "$kiln" frobnicate
expect_status 2 "$kiln" info
expect_status 2 "$kiln" bench "$dir/mlp-symbol.json" --iters 0
expect_status 2 "$kiln" info "$dir/mlp-symbol.json" --shape data=4,x
expect_status 2 "$kiln" bench "$dir/mlp-symbol.json" --shape nosuch=1,2
expect_status 0 "$kiln" --help
echo "kiln command line: all checks passed"
