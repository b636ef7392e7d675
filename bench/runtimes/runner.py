"""One peer runtime in a process of its own, driven by bench/compare_runtimes.py (see peers.Runner).

    runner.py ort|openvino-f32|openvino-bf16|torch MODEL.onnx --threads T --input NAME=FILE.npy ...
              [--weights WEIGHTS.npz --torch-model NAME] [--warmup-seconds S | --warmup-calls N]

A process per runtime keeps each runtime's thread pool and memory to itself, and makes the peak
resident set the parent reads at exit (wait4's ru_maxrss) that runtime's alone, like that of a
`kiln bench` process. It imports its runtime, notes the peak RSS so far (the interpreter and the
libraries), loads the model, warms up (at least one call, and calls until S seconds have passed),
then answers commands on stdin, one per line, with one JSON object per line on stdout:

    (on start)   {"import_rss_kib", "load_s", "warmup_calls", "call_ms", "precision"}
    time K       {"ms": [K latencies of one inference call each, perf_counter around the call]}
    save FILE    writes the outputs to FILE (.npz, in the graph's output order); {"saved": FILE}

It exits at the end of stdin. Anything the libraries print goes to stderr.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time

import numpy as np


def ort_runner(args, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    yield
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    yield lambda: session.run(None, feeds), list, "fp32"


def openvino_runner(args, feeds, precision):
    import openvino as ov

    yield
    core = ov.Core()
    model = core.read_model(args.model)
    model.reshape({name: list(value.shape) for name, value in feeds.items()})
    config = {
        "INFERENCE_NUM_THREADS": args.threads,
        "PERFORMANCE_HINT": "LATENCY",
        "INFERENCE_PRECISION_HINT": precision,
    }
    compiled = core.compile_model(model, "CPU", config)
    actual = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()
    if actual != precision:
        print(f"runner: OpenVINO asked for {precision}, compiled for {actual}", file=sys.stderr)
    request = compiled.create_infer_request()
    # share_inputs/share_outputs: no copies of inputs or outputs on the Python side per call.
    yield (
        lambda: request.infer(feeds, share_inputs=True, share_outputs=True),
        lambda results: [np.array(results[i]) for i in range(len(compiled.outputs))],
        actual,
    )


def torch_runner(args, feeds):
    import torch
    import torch_models

    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    yield
    model, missing = torch_models.build(args.torch_model, args.weights)
    if any(not key.endswith("num_batches_tracked") for key in missing):
        print(f"runner: PyTorch {args.torch_model}: kept the builder's values of {missing}", file=sys.stderr)
    inputs = [torch.from_numpy(value) for value in feeds.values()]

    def infer():
        with torch.inference_mode():
            return model(*inputs)

    yield (
        infer,
        lambda outputs: [o.numpy() for o in (outputs if isinstance(outputs, tuple) else (outputs,))],
        "fp32",
    )


RUNNERS = {
    "ort": ort_runner,
    "openvino-f32": lambda args, feeds: openvino_runner(args, feeds, "f32"),
    "openvino-bf16": lambda args, feeds: openvino_runner(args, feeds, "bf16"),
    "torch": torch_runner,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("runtime", choices=sorted(RUNNERS))
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--input", action="append", default=[], help="NAME=FILE.npy, in the graph's order")
    parser.add_argument("--weights", help="PyTorch only: the .npz of models.write_torch_weights")
    parser.add_argument("--torch-model", help="PyTorch only: the torch_models.BUILDERS name")
    parser.add_argument("--warmup-seconds", type=float, default=0.5)
    parser.add_argument("--warmup-calls", type=int, help="exactly this many warm-up calls instead")
    args = parser.parse_args()

    # Replies go to the original stdout; libraries that print to stdout are sent to stderr instead.
    replies = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def reply(obj):
        replies.write(json.dumps(obj) + "\n")

    # The runner reads `feeds` only after its first step (the import), so the inputs, filled in after
    # it, are not counted in import_rss_kib.
    feeds = {}
    steps = RUNNERS[args.runtime](args, feeds)
    next(steps)
    import_rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    feeds.update((name, np.load(path)) for name, path in (spec.split("=", 1) for spec in args.input))
    start = time.perf_counter()
    infer, output_arrays, precision = next(steps)
    load_s = time.perf_counter() - start

    calls, call_ms, start = 0, 0.0, time.perf_counter()
    while calls < (args.warmup_calls or 1) or (
        not args.warmup_calls and time.perf_counter() - start < args.warmup_seconds
    ):
        call_start = time.perf_counter()
        infer()
        call_ms = (time.perf_counter() - call_start) * 1e3
        calls += 1
    reply(
        {
            "import_rss_kib": import_rss_kib,
            "load_s": load_s,
            "warmup_calls": calls,
            "call_ms": call_ms,
            "precision": precision,
        }
    )

    for line in sys.stdin:
        command, _, argument = line.strip().partition(" ")
        if command == "time":
            ms = []
            gc.collect()
            gc.disable()  # a collection inside the timed loop would be charged to one call
            for _ in range(int(argument)):
                call_start = time.perf_counter()
                infer()
                ms.append((time.perf_counter() - call_start) * 1e3)
            gc.enable()
            reply({"ms": ms})
        elif command == "save":
            np.savez(argument, *output_arrays(infer()))
            reply({"saved": argument})
        else:
            reply({"error": f"runner: unknown command '{line.strip()}'"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
