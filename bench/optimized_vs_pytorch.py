"""A model optimized by `kiln optimize` against PyTorch eager fp32 running the original, interleaved.

  .venv-models/bin/python bench/optimized_vs_pytorch.py --kiln build/rel/apps/kiln/kiln \\
      --original build/models/yolov5s.onnx --optimized yolov5s_int8.onnx --optimized yolov5s_bf16.onnx \\
      --torch-model yolov5s --threads 2 --batch 1 --rounds 3 --iters 3

Each round times, in turn (the order rotated each round): PyTorch eager (bench/runtimes/runner.py,
the builder of runtimes/torch_models.py with the original file's weights, loaded and warmed up
once), `kiln bench` on each optimized file and `kiln bench` on the original (a process per round,
opt level all, fp32). Per round the p50 of its calls; reported: the median of the rounds' p50s and
the ratios PyTorch / Kiln optimized and Kiln original / Kiln optimized (above 1: the optimized
model is faster). The inputs are the same random .npy files for all three.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np
from runtimes import models
from runtimes.kiln import Kiln
from runtimes.peers import Runner


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kiln", required=True, help="the kiln CLI binary")
    parser.add_argument("--original", required=True, help="the original .onnx (PyTorch's weights)")
    parser.add_argument("--optimized", required=True, action="append", help="a .onnx kiln optimize wrote (repeatable)")
    parser.add_argument("--torch-model", required=True, help="runtimes/torch_models.py builder name")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--iters", type=int, default=3, help="timed calls per runtime and round")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        inputs = models.write_inputs(args.original, args.batch, folder)
        weights = os.path.join(folder, "torch_weights.npz")
        models.write_torch_weights(args.original, weights)
        torch = Runner("torch", args.original, args.threads, inputs, 1.0, 2, weights=weights,
                       torch_model=args.torch_model)
        kilns = {f"Kiln {os.path.basename(path)}": Kiln(args.kiln, path, args.threads, inputs) for path in args.optimized}
        kilns["Kiln original"] = Kiln(args.kiln, args.original, args.threads, inputs)
        p50s = {"PyTorch eager fp32": [], **{name: [] for name in kilns}}
        try:
            for r in range(args.rounds):
                order = list(p50s)
                order = order[r % len(order):] + order[:r % len(order)]
                for name in order:
                    if name in kilns:
                        p50s[name].append(kilns[name].bench(warmup=2, iters=args.iters)["p50_ms"])
                    else:
                        p50s[name].append(float(np.median(torch.time(args.iters))))
                print(f"round {r + 1}: " + ", ".join(f"{n} {v[-1]:.1f} ms" for n, v in p50s.items()),
                      file=sys.stderr)
        finally:
            torch.close()
    median = {name: statistics.median(v) for name, v in p50s.items()}
    print(f"batch {args.batch}, {args.threads} threads, median of {args.rounds} rounds' p50 ({args.iters} calls each):")
    for name, ms in median.items():
        print(f"  {name:30s} {ms:9.1f} ms   rounds: " + ", ".join(f"{v:.1f}" for v in p50s[name]))
    for path in args.optimized:
        ms = median[f"Kiln {os.path.basename(path)}"]
        print(f"{os.path.basename(path)}: PyTorch eager fp32 / it {median['PyTorch eager fp32'] / ms:.2f}x, "
              f"Kiln original / it {median['Kiln original'] / ms:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
