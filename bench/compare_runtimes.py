"""Latency of the same ONNX models in Kiln, ONNX Runtime and OpenVINO, measured in one run.

For each model and batch: Kiln through `kiln bench --json` (C++ Predictor.predict timed in C++),
ONNX Runtime and OpenVINO through their Python APIs on the same random inputs with the same
thread count. ONNX Runtime is also timed from the inside (its profiler's model_run events), so
the Python call overhead can be told apart. Prints a table with Kiln's latency as a ratio of each
peer's (below 1: Kiln is faster) and writes the numbers as JSON with --json.

  .venv-models/bin/python bench/compare_runtimes.py --kiln build/release/apps/kiln/kiln \
      --mlp build/bench_models            # writes and adds the MLP 784-256-128-10 (batch 1)
  .venv-models/bin/python bench/compare_runtimes.py --kiln ... build/models/resnet50.onnx --batch 1 8

OpenVINO is used when importable (`pip install openvino` in .venv-models).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def write_mlp(folder: str) -> str:
    """MLP 784-256-128-10 as torch.nn.Linear exports it: Gemm(transB=1) + Relu, free batch."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    dims = [784, 256, 128, 10]
    nodes, inits, prev = [], [], "x"
    for i, (n_in, n_out) in enumerate(zip(dims[:-1], dims[1:])):
        inits += [numpy_helper.from_array((rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32), f"W{i}"),
                  numpy_helper.from_array((0.1 * rng.standard_normal(n_out)).astype(np.float32), f"b{i}")]
        nodes.append(helper.make_node("Gemm", [prev, f"W{i}", f"b{i}"], [f"fc{i}"], transB=1))
        prev = f"fc{i}"
        if i < len(dims) - 2:
            nodes.append(helper.make_node("Relu", [prev], [f"relu{i}"]))
            prev = f"relu{i}"
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 784])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", 10])], inits)
    path = os.path.join(folder, "mlp.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def random_inputs(model: onnx.ModelProto, batch: int, rng) -> dict:
    feeds = {}
    initializers = {i.name for i in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        t = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in t.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
        if np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, 2 if "mask" in value.name else 100, size=shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def time_calls(fn, warmup: int, iters: int) -> list[float]:
    for _ in range(warmup):
        fn()
    ms = []
    for _ in range(iters):
        start = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - start) * 1e3)
    return ms


def ort_latency(path, feeds, threads, warmup, iters):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    wall = time_calls(lambda: session.run(None, feeds), warmup, iters)
    # The same again with ORT's profiler on: model_run is the time spent inside ORT per call.
    options.enable_profiling = True
    options.profile_file_prefix = os.path.join(tempfile.mkdtemp(), "ort")
    profiled = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    time_calls(lambda: profiled.run(None, feeds), warmup, iters)
    with open(profiled.end_profiling()) as f:
        runs = [e["dur"] / 1e3 for e in json.load(f) if e.get("name") == "model_run"]
    return float(np.median(wall)), float(np.median(runs[warmup:] or runs))


def openvino_latency(path, feeds, threads, warmup, iters):
    try:
        import openvino as ov
    except ImportError:
        return None
    core = ov.Core()
    model = core.read_model(path)
    model.reshape({name: list(value.shape) for name, value in feeds.items()})
    compiled = core.compile_model(model, "CPU", {"INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
    request = compiled.create_infer_request()
    return float(np.median(time_calls(lambda: request.infer(feeds), warmup, iters)))


def kiln_latency(kiln, path, feeds, threads, warmup, iters, folder):
    args = [kiln, "bench", path, "--threads", str(threads), "--warmup", str(warmup), "--iters", str(iters), "--json"]
    for name, value in feeds.items():
        file = os.path.join(folder, f"{name}.npy")
        np.save(file, value)
        args += ["--input", f"{name}={file}"]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"kiln bench {path} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--mlp", metavar="DIR", help="write the MLP 784-256-128-10 into DIR and add it")
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--iters", type=int, default=200)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    models = list(args.models) + ([write_mlp(args.mlp)] if args.mlp else [])
    rng = np.random.default_rng(0)
    results = []
    print(f"{'model':<16}{'batch':>6}{'kiln ms':>10}{'GFLOPS':>8}{'ort ms':>10}{'ort in ms':>10}{'ov ms':>9}"
          f"{'kiln/ort':>10}{'kiln/ov':>9}")
    for path in models:
        model = onnx.load(path, load_external_data=False)
        name = os.path.splitext(os.path.basename(path))[0]
        for batch in args.batch:
            feeds = random_inputs(model, batch, rng)
            iters = args.iters if batch == 1 else max(20, args.iters // 4)
            with tempfile.TemporaryDirectory() as folder:
                kiln = kiln_latency(args.kiln, path, feeds, args.threads, args.warmup, iters, folder)
            ort_wall, ort_inside = ort_latency(path, feeds, args.threads, args.warmup, iters)
            ov = openvino_latency(path, feeds, args.threads, args.warmup, iters)
            k = kiln["p50_ms"]
            row = {"model": name, "batch": batch, "threads": args.threads, "kiln_p50_ms": k,
                   "kiln_gflops": kiln["gflops"], "ort_p50_ms": ort_wall, "ort_model_run_ms": ort_inside,
                   "openvino_p50_ms": ov}
            results.append(row)
            ov_text = f"{ov:9.3f}" if ov else f"{'-':>9}"
            ratio_ov = f"{k / ov:9.2f}" if ov else f"{'-':>9}"
            print(f"{name:<16}{batch:>6}{k:10.3f}{kiln['gflops']:8.1f}{ort_wall:10.3f}{ort_inside:10.3f}{ov_text}"
                  f"{k / ort_wall:10.2f}{ratio_ov}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
