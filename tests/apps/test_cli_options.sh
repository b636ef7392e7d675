#!/usr/bin/env bash
# Every kiln option is honest: a value it cannot take, or a combination that would do nothing, is
# refused with exit status 2 and a message naming the option (or environment variable), before any
# work starts; options that do what they say keep working.
# Usage: test_cli_options.sh KILN MAKE_MLP_MODEL WORKDIR
set -euo pipefail
kiln=$1 make_model=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
"$make_model" "$dir" >/dev/null
fail() { echo "FAIL: $*" >&2; exit 1; }
model="$dir/mlp-symbol.json"
mkdir -p "$dir/calib" && cp "$dir/x.npy" "$dir/calib/0.npy"

# Expects exit status 2 and every following pattern (after --) in what the command printed.
refused() {
  local cmd=() patterns=()
  while [ "$1" != "--" ]; do cmd+=("$1"); shift; done
  shift
  patterns=("$@")
  set +e; "${cmd[@]}" >"$dir/out.txt" 2>"$dir/err.txt"; local got=$?; set -e
  [ "$got" -eq 2 ] || { cat "$dir/err.txt" >&2; fail "'${cmd[*]}' exited $got, expected 2"; }
  for p in "${patterns[@]}"; do
    grep -qF -- "$p" "$dir/err.txt" || { cat "$dir/err.txt" >&2; fail "'${cmd[*]}': no '$p' in its message"; }
  done
}

# Numeric options say what they take, whatever the mistake.
refused "$kiln" bench "$model" --batch 0 -- "--batch: expected a whole number >= 1, got '0'"
refused "$kiln" bench "$model" --threads abc -- "--threads: expected a whole number from 0 to 4096, got 'abc'"
refused "$kiln" bench "$model" --iters 2.5 -- "--iters" "got '2.5'"
refused "$kiln" bench "$model" --warmup -1 -- "--warmup: expected a whole number >= 0"
refused "$kiln" bench "$model" --peak-gflops 0 -- "--peak-gflops: expected a number > 0"
refused "$kiln" profile "$model" --iters 0 -- "--iters"
refused "$kiln" convert "$model" "$dir/m.onnx" --opset 3 -- "--opset: expected a whole number from 13 to"
refused "$kiln" quantize "$dir/mlp" --calib "$dir" --percentile 0 -o "$dir/q.onnx" -- "--percentile"
refused "$kiln" quantize "$dir/mlp" --calib "$dir" --batches -5 -o "$dir/q.onnx" -- "--batches: expected -1 (all)"
refused "$kiln" quantize "$dir/mlp" --calib "$dir" --batches 0 -o "$dir/q.onnx" -- "--batches"
refused "$kiln" optimize "$model" --steps fuse --rounds 0 -o "$dir/o.onnx" -- "--rounds"
# Too many threads warn, and the command still runs.
"$kiln" bench "$model" --threads 4096 --iters 2 --warmup 0 >/dev/null 2>"$dir/err.txt"
grep -q "warning: --threads 4096 is more than the" "$dir/err.txt" || fail "--threads above the core count: no warning"

# Options that would be ignored in this combination.
refused "$kiln" bench "$model" --precision bf16 --kernels reference -- "--precision bf16" "--kernels reference"
refused "$kiln" run "$model" --input data="$dir/x.npy" --precision fp16 --kernels reference -- "--precision fp16"
"$kiln" convert "$model" "$dir/mlp.onnx" >/dev/null
refused "$kiln" info "$dir/mlp.onnx" --epoch 1 -- "--epoch" "ONNX model"
refused "$kiln" info "$model" --shape data=1,20 --shape data=2,20 -- "--shape for input 'data' is given twice"
refused "$kiln" run "$model" --input data="$dir/x.npy" --input data="$dir/x.npy" -- "--input for input 'data' is given twice"
for option in "--mode naive" "--percentile 99" "--batches 2" "--activations int8"; do
  # shellcheck disable=SC2086
  refused "$kiln" quantize "$dir/mlp" --dynamic $option -o "$dir/q.onnx" -- "--dynamic excludes ${option%% *}"
done
for option in "--norm l2" "--channel-multiple 4" "--exclude fc1"; do
  # shellcheck disable=SC2086
  refused "$kiln" prune "$dir/mlp" --ratio 0.5 $option -o "$dir/p.onnx" -- "${option%% *} requires --structured"
done
# --batch is refused where no input takes it (a model with a fixed batch), and reported as given
# where one does, whichever input it is.
"$kiln" convert "$model" "$dir/fixed.onnx" --shape data=2,20 >/dev/null
refused "$kiln" bench "$dir/fixed.onnx" --batch 8 -- "--batch 8: no input takes it" "data (2, 20)"
refused "$kiln" profile "$dir/fixed.onnx" --batch 8 --out "$dir/t.json" -- "--batch 8: no input takes it"
"$kiln" bench "$model" --batch 8 --iters 3 --warmup 0 | grep -q "batch 8," || fail "bench --batch 8: not reported"
"$kiln" bench "$dir/fixed.onnx" --iters 3 --warmup 0 | grep -q "batch 2," || fail "bench: a fixed batch of 2 not reported"
# Sub-millisecond latencies print in microseconds, not as 0.000 ms.
"$kiln" bench "$dir/fixed.onnx" --iters 20 --warmup 2 | grep -qE "^latency us: mean [0-9]+\.[0-9]{3} " ||
  fail "bench: a latency under a millisecond is not in microseconds"

# Output paths are checked (and their folders made) before any work.
refused "$kiln" convert "$dir/mlp.onnx" "$dir/mlp.onnx" -- "OUT '$dir/mlp.onnx' is the input model"
refused "$kiln" quantize "$dir/mlp" --calib "$dir" -o "$dir" -- "-o '$dir' is a folder"
chmod a-w "$dir/calib" 2>/dev/null && [ ! -w "$dir/calib" ] && {
  refused "$kiln" prune "$dir/mlp" --ratio 0.5 -o "$dir/calib/p.onnx" -- "is not writable"
  chmod u+w "$dir/calib"
}
"$kiln" prune "$dir/mlp" --ratio 0.5 -o "$dir/new/deeper/p.onnx" >/dev/null
[ -f "$dir/new/deeper/p.onnx" ] || fail "prune -o into a missing folder: the folder was not made"

# Pruning that removes nothing says so.
"$kiln" prune "$dir/mlp" --structured --ratio 0.5 -o "$dir/p2.onnx" | grep -q "^nothing was pruned: --structured removes Conv output channels" ||
  fail "prune --structured on a model without Convs does not say that nothing was pruned"
"$kiln" prune "$dir/mlp" --ratio 0.5 -o "$dir/p3.onnx" | grep -q "nothing was pruned" &&
  fail "prune: 'nothing was pruned' for a model that was pruned"

# A run that cannot fit in memory says how much it would need, before allocating any of it.
refused "$kiln" bench "$model" --batch 1000000000 -- "--batch 1000000000: this run needs about" "GiB are available"

# --version says what the build has.
"$kiln" --version | grep -qE "^kiln [0-9]+\.[0-9]+\.[0-9]+ \(cuda: (yes|no), java: (yes|no), onednn: (yes|no), server: (yes|no)\)$" ||
  fail "kiln --version: $("$kiln" --version)"

# An excluded node the model does not have would exclude nothing: refused before calibrating,
# listing the nodes, with static and with dynamic quantization.
refused "$kiln" quantize "$dir/mlp" --calib "$dir/calib" --exclude nosuch -o "$dir/q.onnx" -- \
  "--exclude: quantize: excluded node 'nosuch' is not a node of the model (its nodes: 'fc1'"
refused "$kiln" quantize "$dir/mlp" --dynamic --exclude nosuch -o "$dir/q.onnx" -- "--exclude:" "'nosuch'"
[ ! -e "$dir/q.onnx" ] || fail "quantize --exclude of an unknown node wrote a model"
"$kiln" quantize "$dir/mlp" --calib "$dir/calib" --exclude fc1 -o "$dir/q.onnx" >/dev/null 2>&1

# Calibration shows its progress, and a folder that mixes the two layouts names the stray entry.
"$kiln" quantize "$dir/mlp" --calib "$dir/calib" -o "$dir/q.onnx" >/dev/null 2>"$dir/err.txt"
grep -q "calibration \[#*\] 1/1" "$dir/err.txt" || fail "quantize: no calibration progress: $(cat "$dir/err.txt")"
mkdir -p "$dir/mixed/b0" && cp "$dir/x.npy" "$dir/mixed/b0/data.npy" && cp "$dir/x.npy" "$dir/mixed/stray.npy"
set +e; "$kiln" quantize "$dir/mlp" --calib "$dir/mixed" -o "$dir/q2.onnx" 2>"$dir/err.txt"; got=$?; set -e
[ "$got" -eq 1 ] && grep -q "'$dir/mixed/stray.npy' is a file among folders" "$dir/err.txt" ||
  fail "quantize: the stray file of a folder of batch folders is not named: $(cat "$dir/err.txt")"
grep -q "calibration \[" "$dir/err.txt" && fail "quantize: a refused folder drew a progress bar"
mkdir -p "$dir/mixed/b1"
rm "$dir/mixed/stray.npy"
set +e; "$kiln" quantize "$dir/mlp" --calib "$dir/mixed" -o "$dir/q2.onnx" 2>"$dir/err.txt"; got=$?; set -e
[ "$got" -eq 1 ] && grep -q "the batch folder '$dir/mixed/b1' holds no .npy file" "$dir/err.txt" ||
  fail "quantize: an empty batch folder is not named: $(cat "$dir/err.txt")"

# Environment variables are checked at start-up, by name.
for setting in KILN_NUM_THREADS=abc KILN_NUM_THREADS=0 KILN_ENGINE=bogus KILN_ENGINE_THREADS=-2 KILN_POOL_LIMIT_MB=xyz; do
  refused env "$setting" "$kiln" info "$model" -- "environment variable ${setting%%=*}='${setting#*=}'"
done
KILN_NUM_THREADS=1 KILN_ENGINE=naive KILN_POOL_LIMIT_MB=0 "$kiln" info "$model" >/dev/null ||
  fail "valid environment settings were refused"

echo "kiln options: all checks passed"
