#!/usr/bin/env bash
# The kiln command line end to end on a small MXNet MLP: info (text and JSON), run (outputs equal
# the Predictor's), bench --json fields, OpenMP's spin setting, profile's Chrome trace, convert
# (MXNet <-> ONNX, --simplify on ONNX models written here), quantize (QDQ ONNX that ONNX Runtime
# runs), and exit statuses for errors.
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
"$kiln" info "$dir/mlp-symbol.json" --shape data=4,20 --nodes >"$dir/info_nodes.txt"
grep -q "data  float32 (4, 20)  (given; declared float32 (?, 20))" "$dir/info_nodes.txt" || fail "info: the given shape"
grep -qE "^  relu1 +Relu +\(4, 32\) -> \(4, 32\)$" "$dir/info_nodes.txt" || fail "info --nodes: no relu1 row"
grep -q "fc2_output" "$dir/info.txt" || fail "info: no output"
grep -q "parameters: 1002 " "$dir/info.txt" || fail "info: wrong parameter count"
"$kiln" info "$dir/mlp" --epoch 1 --json --nodes --shape data=4,20 >"$dir/info.json"
"$python" - "$dir/info.json" <<'PY'
import json, sys
info = json.load(open(sys.argv[1]))
assert info["inputs"] == [{"name": "data", "dtype": "float32", "shape": [4, 20], "sequence": False, "optional": False,
                           "declared_shape": [-1, 20]}], \
    info["inputs"]
assert [(n["name"], n["op"], n["inputs"][0], n["outputs"][0]) for n in info["nodes"]] == [
    ("fc1", "Gemm", "(4, 20)", "(4, 32)"), ("relu1", "Relu", "(4, 32)", "(4, 32)"),
    ("fc2", "Gemm", "(4, 32)", "(4, 10)")], info["nodes"]
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
for key in ["mean_ms", "p50_ms", "p90_ms", "p99_ms", "cpu_ms", "throughput", "gflops", "flops", "batch", "iters"]:
    assert key in b, key
assert b["batch"] == 4 and b["iters"] == 20 and b["threads"] == 1
assert 0 < b["p50_ms"] <= b["p90_ms"] <= b["p99_ms"] and b["throughput"] > 0 and b["gflops"] > 0, b
assert b["cpu_ms"] > 0, b
PY

# OpenMP's threads spin briefly (libgomp reports GOMP_SPINCOUNT 1000 in the re-run process) unless
# the caller chose a spin; builds without OpenMP report nothing.
OMP_DISPLAY_ENV=verbose "$kiln" info "$dir/mlp-symbol.json" >/dev/null 2>"$dir/omp.txt"
if grep -q "GOMP_SPINCOUNT" "$dir/omp.txt"; then
  grep -q "GOMP_SPINCOUNT = '1000'" "$dir/omp.txt" || fail "OpenMP spin: no GOMP_SPINCOUNT 1000"
  GOMP_SPINCOUNT=77 OMP_DISPLAY_ENV=verbose "$kiln" info "$dir/mlp-symbol.json" >/dev/null 2>"$dir/omp.txt"
  grep -q "GOMP_SPINCOUNT = '77'" "$dir/omp.txt" || fail "OpenMP spin: the caller's GOMP_SPINCOUNT was replaced"
  ! grep -q "GOMP_SPINCOUNT = '1000'" "$dir/omp.txt" || fail "OpenMP spin: re-run despite the caller's setting"
fi

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
# A model with ops Kiln cannot run, one of them inside an If branch: kiln info names every one of
# them (op, node, domain, opset) in one error, before anything runs.
"$python" - "$dir/unsupported.onnx" <<'PY'
import onnx, sys
from onnx import TensorProto, helper
vi = lambda name: helper.make_tensor_value_info(name, TensorProto.FLOAT, [2])
branch = lambda name, op: helper.make_graph([helper.make_node(op, ["x"], [name + "_y"], name=name + "_op")], name, [],
                                            [vi(name + "_y")])
nodes = [helper.make_node("Relu", ["x"], ["r"], name="fine"),
         helper.make_node("Mystery", ["r"], ["m"], name="first_unknown", domain="com.example"),
         helper.make_node("ImageDecoder", ["r"], ["d"], name="second_unknown"),
         helper.make_node("If", ["c"], ["y"], name="branching", then_branch=branch("then", "Relu"),
                          else_branch=branch("else", "Enigma"))]
graph = helper.make_graph(nodes, "unsupported", [vi("x"), helper.make_tensor_value_info("c", TensorProto.BOOL, [])],
                          [vi("m"), vi("d"), vi("y")])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.example", 1)]),
          sys.argv[1])
PY
expect_status 1 "$kiln" info "$dir/unsupported.onnx"
for part in "3 things cannot be imported" "Mystery 'first_unknown' (domain com.example" "ImageDecoder 'second_unknown'" \
  "If 'branching'" "subgraph 'else_branch'" "Enigma 'else_op'"; do
  grep -qF "$part" "$dir/err.txt" || { cat "$dir/err.txt" >&2; fail "info: '$part' not listed"; }
done
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

# convert: MXNet -> ONNX -> MXNet, each written model gives the Predictor's output
"$kiln" convert "$dir/mlp" "$dir/mlp.onnx" --epoch 1 >"$dir/convert.txt"
grep -q "wrote $dir/mlp.onnx (ONNX opset 17)" "$dir/convert.txt" || fail "convert: no 'wrote' line"
"$kiln" convert "$dir/mlp.onnx" "$dir/back-symbol.json" >/dev/null
[ -f "$dir/back-0000.params" ] || fail "convert: no back-0000.params"
"$kiln" run "$dir/mlp.onnx" --input data="$dir/x.npy" --output-dir "$dir/out_onnx" >/dev/null
"$kiln" run "$dir/back" --input data="$dir/x.npy" --output-dir "$dir/out_back" >/dev/null
mkdir -p "$dir/ext"
"$python" - "$dir" <<'PY'
import glob, numpy as np, onnx, sys
d = sys.argv[1]
onnx.checker.check_model(onnx.load(d + "/mlp.onnx"), full_check=True)
want = np.load(d + "/reference.npy")
for out in ("out_onnx", "out_back"):
    files = glob.glob(f"{d}/{out}/*.npy")
    assert len(files) == 1, files
    got = np.load(files[0])
    assert got.shape == want.shape and np.array_equal(got, want), (out, got, want)
# The same model with its weights in an external data file beside it.
model = onnx.load(d + "/mlp.onnx")
onnx.save_model(model, d + "/ext/mlp.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                location="weights.bin", size_threshold=0)
PY
# ... opened by a bare file name from its own folder.
(cd "$dir/ext" && "$kiln" run mlp.onnx --input data="$dir/x.npy" --output-dir out >/dev/null) ||
  fail "run: a model with external data opened from its folder"
cmp -s "$dir/ext/out/$(basename "$(ls "$dir/out_onnx"/*.npy)")" "$(ls "$dir/out_onnx"/*.npy)" ||
  fail "run: external data model: outputs differ"

# convert --simplify folds shape arithmetic (Shape -> Gather -> Unsqueeze -> Concat -> Reshape):
# into the constant shape once the input shape is fixed, and with the batch free into [0, 20]
# (Reshape's 0 copies the batch)
"$python" - "$dir" <<'PY'
import numpy as np, onnx, sys
from onnx import TensorProto, helper, numpy_helper
n = helper.make_node
nodes = [n("Shape", ["x"], ["shape"]), n("Gather", ["shape", "zero"], ["batch"]),
         n("Unsqueeze", ["batch", "zero_axis"], ["batch1"]),
         n("Concat", ["batch1", "rest"], ["target"], axis=0),
         n("Reshape", ["x", "target"], ["flat"]), n("Relu", ["flat"], ["y"])]
inits = [numpy_helper.from_array(np.array(v, np.int64), k)
         for k, v in [("zero", 0), ("zero_axis", [0]), ("rest", [20])]]
graph = helper.make_graph(nodes, "shape_arith",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 20])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save(model, sys.argv[1] + "/shape_arith.onnx")
np.save(sys.argv[1] + "/x3.npy", np.random.default_rng(0).standard_normal((3, 4, 5)).astype(np.float32))
PY
"$kiln" convert "$dir/shape_arith.onnx" "$dir/free.onnx" --simplify >"$dir/convert.txt"
grep -q "simplify: 6 -> 2 nodes" "$dir/convert.txt" || fail "convert: the copied batch was not simplified"
"$kiln" convert "$dir/shape_arith.onnx" "$dir/fixed.onnx" --simplify --shape x=3,4,5 >"$dir/convert.txt"
grep -q "simplify: 6 -> 2 nodes" "$dir/convert.txt" || fail "convert: the shape arithmetic was not folded"
grep -q "wrote $dir/fixed.onnx (ONNX opset 17): 2 nodes" "$dir/convert.txt" || fail "convert: node count"
"$kiln" run "$dir/fixed.onnx" --input x="$dir/x3.npy" --output-dir "$dir/out_fixed" >/dev/null
"$python" - "$dir" <<'PY'
import numpy as np, onnx, onnxruntime as ort, sys
d = sys.argv[1]
m = onnx.load(d + "/fixed.onnx")
assert [node.op_type for node in m.graph.node] == ["Reshape", "Relu"], m.graph.node
assert [dim.dim_value for dim in m.graph.input[0].type.tensor_type.shape.dim] == [3, 4, 5]
free = onnx.load(d + "/free.onnx")
assert [node.op_type for node in free.graph.node] == ["Reshape", "Relu"], free.graph.node
shape = next(i for i in free.graph.initializer if i.name == free.graph.node[0].input[1])
assert onnx.numpy_helper.to_array(shape).tolist() == [0, 20], shape
x = np.load(d + "/x3.npy")
want = np.maximum(x.reshape(3, 20), 0)
assert np.array_equal(np.load(d + "/out_fixed/y.npy"), want)
for model in ("shape_arith", "free", "fixed"):
    got = ort.InferenceSession(f"{d}/{model}.onnx", providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.array_equal(got, want), model
PY

# convert errors: failures exit 1, usage errors 2
"$python" - "$dir" <<'PY'
import onnx, sys
from onnx import TensorProto, helper
graph = helper.make_graph([helper.make_node("Gelu", ["x"], ["y"], name="gelu")], "gelu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)]), sys.argv[1] + "/gelu.onnx")
PY
expect_status 1 "$kiln" convert "$dir/gelu.onnx" "$dir/gelu17.onnx" --opset 17
grep -q "Gelu 'gelu': Gelu needs opset 20" "$dir/err.txt" || fail "convert: the refusal names no node"
expect_status 1 "$kiln" convert "$dir/missing.onnx" "$dir/out.onnx"
expect_status 1 "$kiln" convert "$dir/shape_arith.onnx" "$dir/out.onnx" --shape nosuch=1,2
grep -q "'nosuch'" "$dir/err.txt" || fail "convert: the --shape error does not name the input"
expect_status 1 "$kiln" convert "$dir/shape_arith.onnx" "$dir/out.onnx" --shape x=3,4,6
grep -q "input 'x': expected (?, 4, 5), got (3, 4, 6)" "$dir/err.txt" || fail "convert: --shape mismatch"
expect_status 0 "$kiln" convert "$dir/mlp.onnx" "$dir/no/such/folder/out.onnx"  # folders are made
[ -f "$dir/no/such/folder/out.onnx" ] || fail "convert into a missing folder wrote nothing"
expect_status 2 "$kiln" convert "$dir/mlp.onnx" "$dir/out.onnx" --opset 12
expect_status 2 "$kiln" convert "$dir/mlp.onnx" "$dir/back2" --opset 17
expect_status 2 "$kiln" convert "$dir/mlp.onnx"
# quantize: two calibration batches -> QDQ ONNX that the checker passes and ONNX Runtime runs close
# to the float model; convert --simplify fuses it into int8 ops and writes the QDQ form back
mkdir -p "$dir/calib"
"$python" - "$dir" <<'PY'
import numpy as np, sys
rng = np.random.default_rng(0)
for i in range(2):
    np.save(f"{sys.argv[1]}/calib/{i}.npy", rng.standard_normal((4, 20)).astype(np.float32))
PY
# Without VNNI (AVX2) ONNX Runtime's int8 kernels saturate sums of full-range weights: 7-bit ones there.
reduce_range=()
grep -qwE 'avx512_vnni|avx_vnni' /proc/cpuinfo || reduce_range=(--reduce-range)
"$kiln" quantize "$dir/mlp" --calib "$dir/calib" --mode naive "${reduce_range[@]}" -o "$dir/mlp_int8.onnx" >"$dir/quantize.txt"
grep -q "calibrated on 2 batches (naive): 2 activations quantized" "$dir/quantize.txt" || fail "quantize: summary"
grep -q "wrote $dir/mlp_int8.onnx (ONNX, QDQ)" "$dir/quantize.txt" || fail "quantize: no 'wrote' line"
"$kiln" convert "$dir/mlp_int8.onnx" "$dir/mlp_int8_simplified.onnx" --simplify >/dev/null
"$kiln" run "$dir/mlp_int8.onnx" --input data="$dir/x.npy" --output-dir "$dir/out_int8" >/dev/null
"$python" - "$dir" <<'PY'
import glob, numpy as np, onnx, onnxruntime as ort, sys
d = sys.argv[1]
want = np.load(d + "/reference.npy")
x = np.load(d + "/x.npy")
got = np.load(glob.glob(f"{d}/out_int8/*.npy")[0])
for model in ("mlp_int8.onnx", "mlp_int8_simplified.onnx"):
    m = onnx.load(f"{d}/{model}")
    onnx.checker.check_model(m, full_check=True)
    ops = {n.op_type for n in m.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops, (model, ops)
    y = ort.InferenceSession(f"{d}/{model}", providers=["CPUExecutionProvider"]).run(None, {"data": x})[0]
    assert np.abs(y - got).max() <= 0.02 * np.abs(got).max() + 1e-6, (model, y, got)
assert np.abs(got - want).max() <= 0.05 * np.abs(want).max(), (got, want)
PY
# --reduce-range: every weight channel's largest value becomes 63 (7 bits), never more.
"$kiln" quantize "$dir/mlp" --calib "$dir/calib" --reduce-range -o "$dir/mlp_int7.onnx" >/dev/null
"$python" - "$dir/mlp_int7.onnx" <<'PY'
import numpy as np, onnx, sys
from onnx import numpy_helper
weights = [numpy_helper.to_array(t) for t in onnx.load(sys.argv[1]).graph.initializer
           if t.data_type == onnx.TensorProto.INT8 and len(t.dims) == 2]
assert weights, "no int8 weight"
for w in weights:
    assert np.abs(w.astype(np.int32)).max() == 63, np.abs(w.astype(np.int32)).max()
PY
expect_status 1 "$kiln" quantize "$dir/mlp" --calib "$dir/no_such_folder" -o "$dir/q.onnx"
grep -q "no_such_folder' is not a folder" "$dir/err.txt" || fail "quantize: the missing folder is not named"
expect_status 2 "$kiln" quantize "$dir/mlp" -o "$dir/q.onnx"
expect_status 2 "$kiln" quantize "$dir/mlp" --calib "$dir/calib" --dynamic -o "$dir/q.onnx"
"$kiln" quantize "$dir/mlp" --dynamic -o "$dir/mlp_dynamic.onnx" | grep -q "dynamic quantization" ||
  fail "quantize --dynamic: no 'wrote' line"
"$python" - "$dir" <<'PY'
import numpy as np, onnxruntime as ort, sys
d = sys.argv[1]
want = np.load(d + "/reference.npy")
y = ort.InferenceSession(f"{d}/mlp_dynamic.onnx", providers=["CPUExecutionProvider"]).run(
    None, {"data": np.load(d + "/x.npy")})[0]
assert np.abs(y - want).max() <= 0.05 * np.abs(want).max(), (y, want)
PY
expect_status 2 "$kiln" quantize "$dir/mlp" --calib "$dir/calib" -o "$dir/q.onnx" --mode kl

echo "kiln command line: all checks passed"
