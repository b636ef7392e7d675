"""INT8 against fp32, and Kiln's INT8 against ONNX Runtime's, on one ONNX model at batch 1.

  .venv-models/bin/python bench/quantize_int8.py --kiln build/rel/apps/kiln/kiln \\
      build/models/resnet50.onnx --threads 2 --calib-batches 8 --rounds 5 --iters 10

Both quantized models come from the same calibration data: --calib-batches random-normal batches
of the model's input shape at batch 1 (seed --seed), written once as .npy files.
  Kiln INT8   `kiln quantize MODEL --calib DIR --mode MODE` (QDQ ONNX), run by `kiln bench`
              (opt level all: the QDQ pairs become int8 oneDNN kernels).
  ORT INT8    onnxruntime.quantization.quantize_static on MODEL after ORT's quant_pre_process (its
              recommended first step, which folds BatchNormalization), QDQ, per-channel int8
              weights, uint8 activations, MinMax calibration (ORT's defaults but per_channel), run
              by an ORT session (graph optimization all, intra-op threads = --threads, sequential).
  Kiln on ORT INT8   the same ORT-quantized model run by `kiln bench` (its QDQ pairs fused into
              Kiln's int8 kernels).
  Kiln fp32   `kiln bench MODEL`; ORT fp32 the ORT session on MODEL, for reference.
Rounds alternate the four (order rotated per round) so that the machine's load drifts onto all
alike; each round's p50 over --iters calls (after warm-up), and the median of the rounds' p50s is
reported, with the fastest single call (the least disturbed by other load on a shared machine) and
the load average over the rounds. The outputs of each INT8 model on one more random input are
compared with the fp32 model's (relative max error, top-1 agreement).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process


class Batches(CalibrationDataReader):
    def __init__(self, name, batches):
        self.name, self.batches = name, iter(batches)

    def get_next(self):
        batch = next(self.batches, None)
        return None if batch is None else {self.name: batch}


def input_spec(model_path):
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    assert len(inputs) == 1, "one input expected"
    dims = [d.dim_value if d.dim_value > 0 else 1 for d in inputs[0].type.tensor_type.shape.dim]
    return inputs[0].name, dims


def kiln_bench(kiln, model, threads, iters):
    # --peak-gflops: a given peak, so that kiln bench does not measure the machine's each round.
    args = [kiln, "bench", model, "--threads", str(threads), "--warmup", "3", "--iters", str(iters), "--json",
            "--peak-gflops", "1"]
    out = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)
    return out["p50_ms"], out["min_ms"]


def ort_session(model, threads):
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def ort_bench(session, feed, iters):
    for _ in range(3):
        session.run(None, feed)
    times = []
    for _ in range(iters):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[(len(times) - 1) // 2], min(times)


def kiln_outputs(kiln, model, name, x_path, folder):
    subprocess.run([kiln, "run", model, "--opt-level", "all", "--input", f"{name}={x_path}", "--output-dir", folder],
                   capture_output=True, check=True)
    files = sorted(f for f in os.listdir(folder) if f.endswith(".npy"))
    return np.load(os.path.join(folder, files[0]))


def agreement(y, reference):
    rel = float(np.abs(y - reference).max() / np.abs(reference).max())
    top1 = float(np.mean(y.argmax(axis=-1) == reference.argmax(axis=-1)))
    return rel, top1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--kiln", required=True)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--calib-batches", type=int, default=8)
    parser.add_argument("--mode", default="entropy", choices=["entropy", "naive", "percentile"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--workdir", help="keep the quantized models and data here (default: a temporary folder)")
    args = parser.parse_args()

    work = args.workdir or tempfile.mkdtemp(prefix="kiln_int8_")
    calib = os.path.join(work, "calib")
    os.makedirs(calib, exist_ok=True)
    name, shape = input_spec(args.model)
    rng = np.random.default_rng(args.seed)
    batches = [rng.standard_normal(shape).astype(np.float32) for _ in range(args.calib_batches)]
    for i, b in enumerate(batches):
        np.save(os.path.join(calib, f"{i:03d}.npy"), b)
    x = rng.standard_normal(shape).astype(np.float32)
    x_path = os.path.join(work, "input.npy")
    np.save(x_path, x)

    kiln_int8 = os.path.join(work, "kiln_int8.onnx")
    ort_int8 = os.path.join(work, "ort_int8.onnx")
    start = time.perf_counter()
    subprocess.run([args.kiln, "quantize", args.model, "--calib", calib, "--mode", args.mode, "-o", kiln_int8],
                   check=True, capture_output=True)
    kiln_quantize_s = time.perf_counter() - start
    start = time.perf_counter()
    preprocessed = os.path.join(work, "preprocessed.onnx")
    quant_pre_process(args.model, preprocessed)
    quantize_static(preprocessed, ort_int8, Batches(name, batches), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    ort_quantize_s = time.perf_counter() - start

    sessions = {"ORT fp32": ort_session(args.model, args.threads), "ORT INT8": ort_session(ort_int8, args.threads)}
    runners = {
        "Kiln fp32": lambda: kiln_bench(args.kiln, args.model, args.threads, args.iters),
        "Kiln INT8": lambda: kiln_bench(args.kiln, kiln_int8, args.threads, args.iters),
        "ORT fp32": lambda: ort_bench(sessions["ORT fp32"], {name: x}, args.iters),
        "ORT INT8": lambda: ort_bench(sessions["ORT INT8"], {name: x}, args.iters),
        "Kiln on ORT INT8": lambda: kiln_bench(args.kiln, ort_int8, args.threads, args.iters),
    }
    p50s = {k: [] for k in runners}
    mins = {k: [] for k in runners}
    order = list(runners)
    loads = []  # the 1-minute load average after each round: other work on a shared machine
    for r in range(args.rounds):
        for k in order[r % len(order):] + order[: r % len(order)]:
            p50, fastest = runners[k]()
            p50s[k].append(p50)
            mins[k].append(fastest)
        loads.append(os.getloadavg()[0])
        print(f"round {r + 1} (load {loads[-1]:.1f}): " + ", ".join(f"{k} {p50s[k][-1]:.1f} ms" for k in order),
              file=sys.stderr)
    median = {k: statistics.median(v) for k, v in p50s.items()}
    best = {k: min(v) for k, v in mins.items()}

    fp32 = sessions["ORT fp32"].run(None, {name: x})[0]
    with tempfile.TemporaryDirectory() as folder:
        kiln_y = kiln_outputs(args.kiln, kiln_int8, name, x_path, folder)
    with tempfile.TemporaryDirectory() as folder:
        kiln_on_ort_y = kiln_outputs(args.kiln, ort_int8, name, x_path, folder)
    ort_y = sessions["ORT INT8"].run(None, {name: x})[0]

    print(f"model {os.path.basename(args.model)}, batch 1, {args.threads} threads, {args.rounds} rounds x "
          f"{args.iters} calls; calibration: {args.calib_batches} random-normal batches (seed {args.seed}); "
          f"Kiln mode {args.mode} ({kiln_quantize_s:.0f} s), ORT MinMax ({ort_quantize_s:.0f} s); "
          f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores\n")
    print("| runtime | p50 ms (median of rounds) | rounds' p50 range | fastest call ms | speedup over Kiln fp32 "
          "(p50; fastest) |")
    print("|---|---|---|---|---|")
    for k in order:
        print(f"| {k} | {median[k]:.1f} | {min(p50s[k]):.1f} - {max(p50s[k]):.1f} | {best[k]:.1f} | "
              f"{median['Kiln fp32'] / median[k]:.2f}x; {best['Kiln fp32'] / best[k]:.2f}x |")
    print(f"\nKiln INT8 / ORT INT8 latency: {median['Kiln INT8'] / median['ORT INT8']:.2f} (p50), "
          f"{best['Kiln INT8'] / best['ORT INT8']:.2f} (fastest call)")
    for label, y in (("Kiln INT8", kiln_y), ("ORT INT8", ort_y), ("Kiln on ORT INT8", kiln_on_ort_y)):
        rel, top1 = agreement(y, fp32)
        print(f"{label} vs fp32 on one random input: max |diff| / max |fp32| = {rel:.4f}, top-1 agrees: {top1:.0%}")


if __name__ == "__main__":
    main()
