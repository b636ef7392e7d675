"""How far Kiln's `--precision bf16` (or fp16) moves a model's outputs from its fp32 ones.

  .venv/bin/python bench/bf16_agreement.py --kiln build/rel/apps/kiln/kiln \\
      build/models/resnet50.onnx --count 1000 --batch 50 --threads 2

Draws --count random-normal inputs (seed --seed) of the model's single float input, batched
--batch at a time (the first dimension must be free), and runs each batch through `kiln run`
twice: the fast fp32 kernels (themselves within 1e-4 of the reference kernels, see
tests/backends) and the low-precision plan, both at opt level all. Reports, over all inputs:
  top-1 agreement   the share of rows whose argmax over the last axis is the same in both
                    (classifier logits; for other outputs it is printed but means little)
  max rel error     max |low - fp32| / max |fp32| over everything, per output
  p50 / p99 rel     the same ratio per input (row), its median and 99th percentile
With --json, one JSON object on stdout instead of the table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np


def model_io(kiln: str, model: str) -> tuple[str, list[int], list[str]]:
    """The model's float input (name, dims with -1 for free ones) and its output names."""
    text = subprocess.run([kiln, "info", model], check=True, capture_output=True, text=True).stdout
    inputs = re.search(r"inputs:\n((?:  .*\n)+)", text).group(1).splitlines()
    outputs = re.search(r"outputs:\n((?:  .*\n)+)", text).group(1).splitlines()
    if len(inputs) != 1:
        sys.exit(f"bf16_agreement: {model} has {len(inputs)} inputs; this script feeds one float input")
    name, dtype, shape = inputs[0].split(maxsplit=2)
    if dtype != "float32":
        sys.exit(f"bf16_agreement: input '{name}' is {dtype}, not float32")
    dims = [-1 if d.strip() == "?" else int(d) for d in shape.strip("()").split(",")]
    if dims[0] != -1:
        sys.exit(f"bf16_agreement: input '{name}' {shape} has no free first dimension to batch along")
    return name, dims, [line.split()[0] for line in outputs]


def run(kiln: str, model: str, input_name: str, batch_file: str, out_dir: str, precision: str,
        threads: int) -> None:
    os.makedirs(out_dir, exist_ok=True)
    subprocess.run([kiln, "run", model, "--opt-level", "all", "--precision", precision, "--threads",
                    str(threads), "--input", f"{input_name}={batch_file}", "--output-dir", out_dir],
                   check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model")
    parser.add_argument("--kiln", required=True, help="the kiln command-line binary")
    parser.add_argument("--precision", default="bf16", choices=["bf16", "fp16"])
    parser.add_argument("--count", type=int, default=1000, help="random inputs in all")
    parser.add_argument("--batch", type=int, default=50, help="inputs per kiln run call")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    input_name, dims, outputs = model_io(args.kiln, args.model)
    rng = np.random.default_rng(args.seed)
    agree = {o: 0 for o in outputs}
    max_diff = {o: 0.0 for o in outputs}
    max_ref = {o: 0.0 for o in outputs}
    row_errors = {o: [] for o in outputs}
    rows = 0
    with tempfile.TemporaryDirectory(prefix="kiln_bf16_") as tmp:
        done = 0
        while done < args.count:
            n = min(args.batch, args.count - done)
            batch_file = os.path.join(tmp, "batch.npy")
            np.save(batch_file, rng.standard_normal([n] + dims[1:]).astype(np.float32))
            run(args.kiln, args.model, input_name, batch_file, os.path.join(tmp, "fp32"), "fp32", args.threads)
            run(args.kiln, args.model, input_name, batch_file, os.path.join(tmp, "low"), args.precision,
                args.threads)
            for o in outputs:
                ref = np.load(os.path.join(tmp, "fp32", f"{o}.npy")).astype(np.float64)
                low = np.load(os.path.join(tmp, "low", f"{o}.npy")).astype(np.float64)
                ref2, low2 = ref.reshape(n, -1), low.reshape(n, -1)
                agree[o] += int(np.sum(np.argmax(ref2, axis=1) == np.argmax(low2, axis=1)))
                max_diff[o] = max(max_diff[o], float(np.abs(low - ref).max()))
                max_ref[o] = max(max_ref[o], float(np.abs(ref).max()))
                row_errors[o].extend((np.abs(low2 - ref2).max(axis=1) / np.abs(ref2).max(axis=1)).tolist())
            done += n
        rows = done
    result = {
        "model": os.path.basename(args.model), "precision": args.precision, "inputs": rows,
        "outputs": {
            o: {"top1_agreement": agree[o] / rows, "max_rel_error": max_diff[o] / max(max_ref[o], 1e-30),
                "p50_row_rel_error": float(np.percentile(row_errors[o], 50)),
                "p99_row_rel_error": float(np.percentile(row_errors[o], 99))}
            for o in outputs
        },
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"{result['model']}: {args.precision} against fp32 over {rows} random inputs (seed {args.seed})")
    print("| output | top-1 agreement | max rel error | p50 / p99 per input |")
    print("|---|---:|---:|---:|")
    for o, r in result["outputs"].items():
        print(f"| {o} | {100 * r['top1_agreement']:.1f}% | {r['max_rel_error']:.2e} | "
              f"{r['p50_row_rel_error']:.2e} / {r['p99_row_rel_error']:.2e} |")


if __name__ == "__main__":
    main()
