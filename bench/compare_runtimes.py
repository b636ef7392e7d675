"""Latency and memory of the same ONNX models in Kiln, ONNX Runtime, OpenVINO and PyTorch eager,
measured side by side in one run.

  .venv-models/bin/python bench/compare_runtimes.py --kiln build/release/apps/kiln/kiln --threads 2 \\
      build/models/{resnet50,mobilenet_v2,yolov5s,bert_base}.onnx --mlp build/bench_models --batch 1 8 \\
      --markdown table.md --svg docs/bench/compare_runtimes.svg --json results.json

Runtimes (each in a process of its own, with the same thread count and the same input files):
  Kiln           `kiln bench --json` (opt level all), one process per round: load, warm-up calls, timed
                 calls; latency measured in C++ around Predictor::predict.
  ONNX Runtime   graph optimization level all, intra-op threads = --threads, inter-op 1, sequential.
  OpenVINO f32   PERFORMANCE_HINT LATENCY, INFERENCE_NUM_THREADS, INFERENCE_PRECISION_HINT f32. Without
                 the hint OpenVINO computes in bfloat16 on CPUs with AVX512_BF16, so this is the fp32 peer.
  OpenVINO bf16  the same with the hint bf16 (its default on such CPUs), the peer of Kiln in bf16.
  PyTorch eager  the model rebuilt from bench/models' builders (runtimes/torch_models.py) with the ONNX
                 file's weights, torch.set_num_threads, torch.inference_mode().
The peers run in runtimes/runner.py processes, timed with perf_counter around each Python call (so
their binding's overhead, microseconds, is included; it matters only for the MLP).

Timing: every runtime warms up (at least one call, and calls until --warmup-seconds have passed; Kiln
in every round, as each round is a new process), then rounds run round-robin, the order rotated each
round, so that drift in the machine's load hits all runtimes alike. In a round every runtime makes the
same number of calls, chosen so that the rounds fit --seconds per model and batch. Per round each
runtime's p50 and p99 are taken as `kiln bench` takes them (nearest rank); the reported p50 is the
median of the rounds' p50s and the p99 the largest of their p99s.

Memory: peak RSS (ru_maxrss from wait4, as /usr/bin/time reports it) of each runtime's process: the
largest `kiln bench` process, and each runner process over its whole life. For the Python runners the
part taken by the interpreter and the imported library is also reported.

Outputs are compared against ONNX Runtime's (Kiln's through `kiln run`) before timing, which also
shows that PyTorch runs the same weights.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys
import tempfile
import time

import numpy as np
from runtimes import models, report
from runtimes.kiln import Kiln, supports_precision
from runtimes.peers import Runner

PEERS = ("ort", "openvino-f32", "openvino-bf16", "torch")
TORCH_MODELS = ("resnet50", "mobilenet_v2", "yolov5s", "bert_base", "mlp")
MIN_ROUNDS = 3


def percentile(ms: list[float], p: float) -> float:
    """Nearest rank, exactly as `kiln bench` computes it, so that all runtimes share one estimator."""
    ordered = sorted(ms)
    return ordered[min(int(p / 100 * (len(ordered) - 1) + 0.5), len(ordered) - 1)]


def relative_difference(outputs: list[np.ndarray], reference: list[np.ndarray]) -> float:
    return max(
        float(np.abs(o.astype(np.float64) - r).max() / max(np.abs(r).max(), 1e-30))
        for o, r in zip(outputs, reference, strict=True)
    )


def check_outputs(runners: dict, kiln: Kiln, output_names: list[str], folder: str) -> dict:
    """max |x - ORT| / max |ORT| per runtime over all outputs, in the graph's output order."""

    def saved(runtime):
        path = os.path.join(folder, f"{runtime}.npz")
        runners[runtime].save_outputs(path)
        with np.load(path) as arrays:
            return [arrays[key] for key in arrays.files]

    reference = saved("ort")
    check = {
        runtime: relative_difference(saved(runtime), reference) for runtime in runners if runtime != "ort"
    }
    kiln_folder = os.path.join(folder, "kiln")
    os.makedirs(kiln_folder)
    kiln.write_outputs(kiln_folder)
    check["kiln"] = relative_difference(
        [np.load(os.path.join(kiln_folder, f"{name}.npy")) for name in output_names], reference
    )
    return check


def warmup_calls(args, call_ms: float) -> int:
    return args.warmup if args.warmup else max(1, math.ceil(args.warmup_seconds * 1e3 / call_ms))


def start_runners(args, path: str, name: str, inputs, folder: str, runners: dict) -> None:
    """Starts the peers one after another (so that loading and warm-up do not overlap) into `runners`,
    which the caller closes even if one fails to start."""
    for runtime in args.runtimes:
        if runtime == "kiln":
            continue
        extra = {}
        if runtime == "torch":
            if name not in TORCH_MODELS:
                print(f"  PyTorch: no builder for {name}, skipped", file=sys.stderr)
                continue
            weights = os.path.join(folder, "torch_weights.npz")
            models.write_torch_weights(path, weights)
            extra = {"weights": weights, "torch_model": name}
        runners[runtime] = Runner(
            runtime, path, args.threads, inputs, args.warmup_seconds, args.warmup, **extra
        )


def calls_per_round(args, call_ms: dict, kiln_fixed_s: float) -> int:
    """The same number of calls for every runtime in a round, so that --rounds rounds fit --seconds:
    a round costs each runtime's calls plus Kiln's process start and warm-up."""
    if args.iters:
        return args.iters
    round_s = args.seconds / args.rounds
    return int(np.clip((round_s - kiln_fixed_s) / (sum(call_ms.values()) / 1e3), 1, args.max_calls))


def timed_rounds(args, kiln: Kiln, runners: dict, calls: int, kiln_warmup: int) -> dict:
    """Round-robin rounds, the order rotated each round; (p50, p99) per runtime and round."""
    order = ["kiln", *runners]
    per_round = {runtime: [] for runtime in order}
    start, rounds = time.perf_counter(), 0
    while rounds < MIN_ROUNDS or (time.perf_counter() - start < args.seconds and rounds < 3 * args.rounds):
        for runtime in order[rounds % len(order) :] + order[: rounds % len(order)]:
            if runtime == "kiln":
                result = kiln.bench(kiln_warmup, calls)
                per_round["kiln"].append((result["p50_ms"], result["p99_ms"]))
            else:
                ms = runners[runtime].time(calls)
                per_round[runtime].append((percentile(ms, 50), percentile(ms, 99)))
        rounds += 1
    return per_round


def measure(args, path: str, batch: int, kiln_precision: str | None) -> dict:
    name = pathlib.Path(path).stem
    load_start = os.getloadavg()[0]
    runners = {}
    with tempfile.TemporaryDirectory() as folder:
        try:
            inputs = models.write_inputs(path, batch, folder)
            start_runners(args, path, name, inputs, folder, runners)
            kiln = Kiln(args.kiln, path, args.threads, inputs, kiln_precision)
            calibration = kiln.bench(warmup=1, iters=1)
            call_ms = {runtime: runner.ready["call_ms"] for runtime, runner in runners.items()}
            call_ms["kiln"] = calibration["p50_ms"]
            checkable = "ort" in runners and not args.no_check
            check = check_outputs(runners, kiln, models.output_names(path), folder) if checkable else {}
            kiln_warmup = warmup_calls(args, call_ms["kiln"])
            # The calibration process's time apart from its 2 calls: process start and model load.
            start_s = max(calibration["wall_s"] - 2 * call_ms["kiln"] / 1e3, 0)
            calls = calls_per_round(args, call_ms, start_s + kiln_warmup * call_ms["kiln"] / 1e3)
            per_round = timed_rounds(args, kiln, runners, calls, kiln_warmup)
        finally:
            rss_kib = {runtime: runner.close() for runtime, runner in runners.items()}
        rss_kib["kiln"] = kiln.peak_rss_kib
    order = ["kiln", *runners]
    rounds = len(per_round["kiln"])

    times = {}
    for runtime in order:
        times[runtime] = {
            "p50_ms": float(np.median([p50 for p50, _ in per_round[runtime]])),
            "p99_ms": max(p99 for _, p99 in per_round[runtime]),
            "rounds_p50_ms": [p50 for p50, _ in per_round[runtime]],
            "peak_rss_mib": rss_kib[runtime] / 1024,
            "warmup_calls": kiln_warmup if runtime == "kiln" else runners[runtime].ready["warmup_calls"],
        }
        if runtime != "kiln":
            times[runtime]["import_rss_mib"] = runners[runtime].ready["import_rss_kib"] / 1024
            times[runtime]["precision"] = runners[runtime].ready["precision"]
    kiln_p50 = times["kiln"]["p50_ms"]
    return {
        "model": name,
        "batch": batch,
        "threads": args.threads,
        "kiln_precision": args.precision,
        "rounds": rounds,
        "calls_per_round": calls,
        "load_average": [load_start, os.getloadavg()[0]],
        "kiln_gflops": calibration["flops"] / (kiln_p50 * 1e-3) / 1e9,
        "runtimes": times,
        "ratios": {runtime: kiln_p50 / times[runtime]["p50_ms"] for runtime in runners},
        "check": check,
    }


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=".onnx files")
    parser.add_argument("--kiln", required=True, help="the kiln CLI binary")
    parser.add_argument("--mlp", metavar="DIR", help="write the MLP 784-256-128-10 into DIR and add it")
    parser.add_argument("--batch", type=int, nargs="+", default=[1])
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument(
        "--precision", choices=["fp32", "bf16"], default="fp32", help="Kiln's (kiln bench --precision)"
    )
    parser.add_argument("--runtimes", nargs="+", choices=["kiln", *PEERS], default=["kiln", *PEERS])
    parser.add_argument(
        "--seconds", type=float, default=60, help="time for the timed rounds per model and batch"
    )
    parser.add_argument(
        "--rounds", type=int, default=5, help="rounds to aim for within --seconds (at least 3 run)"
    )
    parser.add_argument("--max-calls", type=int, default=200, help="most calls per runtime and round")
    parser.add_argument("--iters", type=int, help="calls per runtime and round (default: from --seconds)")
    parser.add_argument("--warmup", type=int, help="warm-up calls (default: from --warmup-seconds)")
    parser.add_argument("--warmup-seconds", type=float, default=0.5)
    parser.add_argument("--no-check", action="store_true", help="skip comparing outputs against ONNX Runtime")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--markdown", help="write the tables here")
    parser.add_argument("--svg", help="write the bar chart here")
    args = parser.parse_args()
    if "kiln" not in args.runtimes:
        args.runtimes.insert(0, "kiln")
    if not args.models and not args.mlp:
        parser.error("no models: give .onnx files and/or --mlp DIR")
    return args


def main() -> int:
    args = parse_args()
    if supports_precision(args.kiln):
        kiln_precision = args.precision
    elif args.precision == "fp32":
        kiln_precision = None  # this kiln computes in fp32 only
    else:
        print(f"{args.kiln} bench has no --precision: cannot run Kiln in {args.precision}", file=sys.stderr)
        return 2
    paths = list(args.models) + ([models.write_mlp(args.mlp)] if args.mlp else [])
    print(
        f"{args.threads} thread(s), nice {os.nice(0)}, load average {os.getloadavg()[0]:.1f}, "
        f"Kiln precision {args.precision}",
        flush=True,
    )
    rows = []
    for path in paths:
        for batch in args.batch:
            start = time.perf_counter()
            row = measure(args, path, batch, kiln_precision)
            rows.append(row)
            if args.json:  # after every model and batch, so that an interrupted run keeps what it measured
                pathlib.Path(args.json).write_text(json.dumps(rows, indent=2))
            kiln_p50 = row["runtimes"]["kiln"]["p50_ms"]
            ratios = "  ".join(f"kiln/{report.SHORT[r]} {v:.2f}" for r, v in row["ratios"].items())
            seconds = time.perf_counter() - start
            print(
                f"{row['model']} batch {batch}: kiln p50 {kiln_p50:.3f} ms  {ratios}  "
                f"({row['rounds']} rounds x {row['calls_per_round']} calls, {seconds:.0f} s)",
                flush=True,
            )
    runtimes = [r for r in ["kiln", *PEERS] if any(r in row["runtimes"] for row in rows)]
    table = report.markdown(rows, runtimes, args.precision)
    print("\n" + table)
    if args.markdown:
        pathlib.Path(args.markdown).write_text(table)
    if args.svg:
        title = f"p50 latency per call, {args.threads} thread(s), log scale"
        pathlib.Path(args.svg).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.svg).write_text(report.svg_chart(rows, runtimes, args.precision, title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
