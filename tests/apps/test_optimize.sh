#!/usr/bin/env bash
# `kiln optimize` end to end on the digits CNN that examples/cpp/train_cnn trains and exports:
# fuse,bf16,int8 with the accuracy gate passes and prints the stage table (and writes it as
# Markdown); ONNX's checker passes the written model and ONNX Runtime gets the digits' test
# accuracy from it; 90% of channels pruned without fine-tuning fails the gate (exit 1, no model
# written) and without --max-degradation warns; a step short of --min-step-speedup over the previous
# stage is warned about and dropped with --skip-slower; --fp32-op keeps ops in fp32; bad steps are
# usage errors.
# Usage: test_optimize.sh KILN TRAIN_CNN PYTHON DIGITS_DIR WORKDIR
set -euo pipefail
kiln=$1 train_cnn=$2 python=$3 digits=$4 dir=$5
rm -rf "$dir" && mkdir -p "$dir"
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_status() {
  local want=$1; shift
  set +e; "$@" >"$dir/out.txt" 2>"$dir/err.txt"; local got=$?; set -e
  [ "$got" -eq "$want" ] || { cat "$dir/out.txt" "$dir/err.txt" >&2; fail "'$*' exited $got, expected $want"; }
  if [ "$want" -eq 1 ]; then grep -q "^kiln: error: " "$dir/err.txt" || fail "'$*' printed no 'kiln: error:'"; fi
}

"$train_cnn" "$digits" --export "$dir/digits_cnn" >/dev/null
# Calibration: 32 batches of 8 training images; validation: the test set in one file.
"$python" - "$digits" "$dir" <<'PY'
import os, sys
import numpy as np
digits, out = sys.argv[1:]
train = np.load(f"{digits}/train_x.npy").reshape(-1, 1, 8, 8).astype(np.float32)
os.makedirs(f"{out}/calib"); os.makedirs(f"{out}/val")
for i in range(32):
    np.save(f"{out}/calib/{i:03d}.npy", train[8 * i:8 * i + 8])
np.save(f"{out}/val/test.npy", np.load(f"{digits}/test_x.npy").reshape(-1, 1, 8, 8).astype(np.float32))
PY

expect_status 0 "$kiln" optimize "$dir/digits_cnn" --steps fuse,bf16,int8 --calib "$dir/calib" --val "$dir/val" \
  --labels "$digits/test_y.npy" --max-degradation 1 --iters 5 --report "$dir/report.md" -o "$dir/optimized.onnx"
for row in "original (fp32)" "+ fuse" "+ bf16" "+ int8"; do
  grep -q "^$row " "$dir/out.txt" || fail "no stage row '$row'"
  grep -q "^| $row |" "$dir/report.md" || fail "no Markdown row '$row'"
done
grep -q "^ONNX Runtime (original) \|ONNX Runtime row skipped" "$dir/out.txt" || fail "no ONNX Runtime row or note"
grep -q "^| stage | .* | vs previous | weights | accuracy |" "$dir/report.md" || fail "no 'vs previous' column"
grep -q "calibration \[#*\] 32/32" "$dir/err.txt" || fail "no calibration progress bar on stderr"
grep -q "validation (int8) \[#*\] 1/1" "$dir/err.txt" || fail "no validation progress bar on stderr"
grep -q "accuracy: 360 samples" "$dir/out.txt" || fail "no accuracy summary"
"$python" - "$dir/optimized.onnx" "$digits" <<'PY'
import sys
import numpy as np
import onnx
import onnxruntime as ort
path, digits = sys.argv[1:]
onnx.checker.check_model(onnx.load(path), full_check=True)
session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
x = np.load(f"{digits}/test_x.npy").reshape(-1, 1, 8, 8).astype(np.float32)
y = np.load(f"{digits}/test_y.npy")
name = session.get_inputs()[0].name
predicted = [int(np.argmax(session.run(None, {name: x[i:i + 1]})[0])) for i in range(len(x))]
accuracy = float(np.mean(np.array(predicted) == y))
assert accuracy >= 0.97, accuracy
print(f"ONNX Runtime on the optimized model: accuracy {accuracy:.4f}")
PY

# The gate: 90% of the channels pruned (exactly: the default multiple of 16 would leave the 16-channel
# Conv whole), no fine-tuning.
expect_status 1 "$kiln" optimize "$dir/digits_cnn" --steps prune=0.9 --channel-multiple 1 --val "$dir/val" \
  --labels "$digits/test_y.npy" --max-degradation 1 --iters 2 --no-onnxruntime -o "$dir/pruned.onnx"
grep -q "accuracy dropped by .* points" "$dir/err.txt" || fail "the gate's error names no drop"
[ ! -e "$dir/pruned.onnx" ] || fail "a model that failed the gate was written"
# Without --max-degradation the same drop is a warning.
expect_status 0 "$kiln" optimize "$dir/digits_cnn" --steps prune=0.9 --channel-multiple 1 --val "$dir/val" \
  --labels "$digits/test_y.npy" --iters 2 --no-onnxruntime -o "$dir/pruned.onnx"
grep -q "^kiln: warning: accuracy dropped" "$dir/err.txt" || fail "no warning for the drop"

# Each stage is timed against the previous one. No step makes this model 1000x faster: with that asked
# of every step each gets a warning and is kept; with --skip-slower each is dropped, the next one
# starts from the stage before it, and the written model is the original's float32 graph.
bf16_initializers() {
  "$python" -c 'import sys, onnx; print(sum(t.data_type == onnx.TensorProto.BFLOAT16 for t in onnx.load(sys.argv[1]).graph.initializer))' "$1"
}
expect_status 0 "$kiln" optimize "$dir/digits_cnn" --steps fuse,bf16 --min-step-speedup 1000 --iters 2 --rounds 2 \
  --no-onnxruntime -o "$dir/kept.onnx"
grep -q "^kiln: warning: step bf16 sped the model up less than 1000x over + fuse at batch 1 (.*x), batch 8 (.*x) in 2 interleaved rounds; --skip-slower drops such a step" \
  "$dir/err.txt" || fail "no warning for a step short of --min-step-speedup"
grep -q "^+ bf16 .*x (under 1000x) " "$dir/out.txt" || fail "the table does not mark the short step"
# oneDNN computes bfloat16 from AVX-512 on: elsewhere the bf16 step leaves every node in float32,
# where the kernels are fast.
if grep -qw avx512bw /proc/cpuinfo; then
  [ "$(bf16_initializers "$dir/kept.onnx")" -gt 0 ] || fail "without --skip-slower the bf16 step was not kept"
else
  [ "$(bf16_initializers "$dir/kept.onnx")" -eq 0 ] || fail "bf16 weights on a CPU without bfloat16 kernels"
fi
expect_status 0 "$kiln" optimize "$dir/digits_cnn" --steps fuse,bf16 --skip-slower --min-step-speedup 1000 --iters 2 \
  --rounds 2 --no-onnxruntime --report "$dir/skipped.md" -o "$dir/skipped.onnx"
grep -q "^kiln: warning: step fuse sped the model up less than 1000x over the original at .* skipped (--skip-slower)" \
  "$dir/err.txt" || fail "no warning for the skipped fuse step"
grep -q "^kiln: warning: step bf16 .* over the original at .* skipped" "$dir/err.txt" ||
  fail "bf16 was not timed against the original after fuse was skipped"
grep -q "^| + bf16 | .* (skipped) |" "$dir/skipped.md" || fail "the report does not mark the skipped step"
grep -q "^- warning: step bf16 " "$dir/skipped.md" || fail "the report has no warning under the table"
[ "$(bf16_initializers "$dir/skipped.onnx")" -eq 0 ] || fail "--skip-slower kept the bf16 step"
expect_status 2 "$kiln" optimize "$dir/digits_cnn" --steps fuse --rounds 0 -o "$dir/x.onnx"

# fp32 islands chosen by op type; a node name the model lacks is an error.
expect_status 0 "$kiln" optimize "$dir/digits_cnn" --steps bf16 --fp32-op Gemm --iters 2 --no-onnxruntime \
  -o "$dir/bf16.onnx"
[ "$(grep "^  in fp32:" "$dir/err.txt" | grep -o "Gemm '" | wc -l)" -eq 2 ] || fail "--fp32-op Gemm did not keep the 2 Gemms"
expect_status 1 "$kiln" optimize "$dir/digits_cnn" --steps bf16 --fp32-node no_such_node --iters 2 \
  --no-onnxruntime -o "$dir/bf16.onnx"

expect_status 2 "$kiln" optimize "$dir/digits_cnn" --steps fuse,quantize -o "$dir/x.onnx"
expect_status 2 "$kiln" optimize "$dir/digits_cnn" --steps int8 -o "$dir/x.onnx"
expect_status 2 "$kiln" optimize "$dir/digits_cnn" --steps prune=1.5 -o "$dir/x.onnx"
expect_status 2 "$kiln" optimize "$dir/digits_cnn" --steps prune=0.3 --channel-multiple 0 -o "$dir/x.onnx"
expect_status 2 "$kiln" optimize "$dir/digits_cnn" --steps fuse --labels "$digits/test_y.npy" -o "$dir/x.onnx"
echo "kiln optimize: all checks passed"
