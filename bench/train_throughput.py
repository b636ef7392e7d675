"""Training throughput of Kiln's Gluon examples against PyTorch on the same CPU threads.

  .venv-models/bin/python bench/train_throughput.py --examples build/release/examples/cpp \\
      --pythonpath build/release/python --threads 2 --rounds 3 [--markdown table.md]

Each round runs, in turn and in a rotated order (so drift in the machine's load hits all alike):
  Kiln hybridized   examples/cpp/train_{mlp,cnn} as they are (hybridize(): one cached graph per
                    shape, forward and backward), which print their training throughput;
  Kiln imperative   the same with --imperative (op by op on the autograd tape);
  Kiln Python       examples/python/train_mlp.py, the MLP from Python's `import kiln as mx`
                    (hybridized; the MLP only, and only with --pythonpath, the built package);
  PyTorch eager     the same networks, loss, Adam (lr 0.002), batch 64, 15 epochs on the same
                    data, torch.set_num_threads(threads), timed the same way.
Throughput counts the training loop only: forward, backward, the optimizer step and reading each
batch's loss (a sync point in both), not the per-epoch evaluation. The table reports each runtime's
median over the rounds and the ratios Kiln/PyTorch and hybridized/imperative (higher is better).
Kiln's examples use all cores unless OMP_NUM_THREADS and KILN_NUM_THREADS say otherwise: both are
set to --threads here.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import statistics
import subprocess
import sys
import time

import numpy as np

EPOCHS = 15
BATCH = 64


def kiln_throughput(command: list[str], threads: int, pythonpath: str | None = None) -> float:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), KILN_NUM_THREADS=str(threads))
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    match = re.search(r"training throughput: ([0-9.]+) samples/s", out)
    if not match:
        sys.exit(f"train_throughput: no throughput line in the output of {' '.join(command)}:\n{out}")
    return float(match.group(1))


def torch_network(model: str):
    import torch.nn as nn

    if model == "mlp":
        return nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Dropout(0.3), nn.Linear(256, 128), nn.ReLU(),
                             nn.Linear(128, 10))
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(32 * 2 * 2, 64), nn.ReLU(), nn.Linear(64, 10))


def torch_throughput(model: str, data: str, threads: int) -> float:
    """Runs in a process of its own (see main) so that its thread setting and allocator stay apart."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(42)
    x = torch.from_numpy(np.load(f"{data}/train_x.npy"))
    y = torch.from_numpy(np.load(f"{data}/train_y.npy"))
    if model == "cnn":
        x = x.reshape(-1, 1, 8, 8)
    net = torch_network(model)
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.Adam(net.parameters(), lr=0.002)
    generator = torch.Generator().manual_seed(7)
    seconds, samples = 0.0, 0
    for _ in range(EPOCHS):
        net.train()
        order = torch.randperm(len(y), generator=generator)
        start = time.perf_counter()
        loss_sum = 0.0
        for i in range(0, len(y), BATCH):
            idx = order[i:i + BATCH]
            optimizer.zero_grad()
            loss = loss_fn(net(x[idx]), y[idx])
            loss.backward()
            optimizer.step()
            loss_sum += loss.item() * len(idx)
            samples += len(idx)
        seconds += time.perf_counter() - start
    return samples / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", default="build/release/examples/cpp", type=pathlib.Path)
    parser.add_argument("--data", default="data/digits")
    parser.add_argument("--pythonpath", help="the built kiln Python package (adds the Kiln Python row)")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--models", nargs="+", default=["mlp", "cnn"], choices=["mlp", "cnn"])
    parser.add_argument("--markdown", type=pathlib.Path, help="also write the table here")
    parser.add_argument("--torch-child", nargs=2, metavar=("MODEL", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torch_child:
        print(torch_throughput(args.torch_child[0], args.data, int(args.torch_child[1])))
        return

    example = lambda m: [str(args.examples / f"train_{m}"), args.data]  # noqa: E731
    runs = {
        "Kiln hybridized": lambda m: kiln_throughput(example(m), args.threads),
        "Kiln imperative": lambda m: kiln_throughput(example(m) + ["--imperative"], args.threads),
        "PyTorch eager": lambda m: float(subprocess.run(
            [sys.executable, __file__, "--data", args.data, "--torch-child", m, str(args.threads)],
            capture_output=True, text=True, check=True).stdout),
    }
    if args.pythonpath:
        script = str(pathlib.Path(__file__).resolve().parent.parent / "examples/python/train_mlp.py")
        runs["Kiln Python"] = lambda m: kiln_throughput([sys.executable, script, args.data], args.threads,
                                                        args.pythonpath)
    names = list(runs)
    results = {(m, n): [] for m in args.models for n in names}
    for r in range(args.rounds):
        for m in args.models:
            for n in names[r % len(names):] + names[:r % len(names)]:
                if n == "Kiln Python" and m != "mlp":
                    continue
                results[(m, n)].append(runs[n](m))
                print(f"round {r + 1} {m:3s} {n:16s} {results[(m, n)][-1]:9.0f} samples/s", file=sys.stderr)

    lines = [f"Training throughput, samples/s (median of {args.rounds} rounds, {args.threads} threads, "
             f"{EPOCHS} epochs of batch {BATCH}); ratios: higher is better for Kiln",
             "",
             "| model | " + " | ".join(names) + " | hybridized / PyTorch | hybridized / imperative |"
             + (" Python / C++ |" if args.pythonpath else ""),
             "|---|" + "---:|" * (len(names) + 2 + (1 if args.pythonpath else 0))]
    for m in args.models:
        med = {n: statistics.median(results[(m, n)]) if results[(m, n)] else None for n in names}
        cells = [f"{med[n]:.0f}" if med[n] else "-" for n in names]
        cells += [f"{med['Kiln hybridized'] / med['PyTorch eager']:.2f}x",
                  f"{med['Kiln hybridized'] / med['Kiln imperative']:.2f}x"]
        if args.pythonpath:
            cells.append(f"{med['Kiln Python'] / med['Kiln hybridized']:.2f}x" if med["Kiln Python"] else "-")
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")


if __name__ == "__main__":
    main()
