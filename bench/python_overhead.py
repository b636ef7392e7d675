"""Python overhead of Kiln's package against numpy and PyTorch: the cost of one small NDArray op
called from Python, and of one Predictor.predict call on a small MLP.

  PYTHONPATH=build/release/python .venv-models/bin/python bench/python_overhead.py [--rounds 7] \
      [--bench-engine build/release/bench/bench_engine]

Small ops (4 float32 elements, so the arithmetic itself is negligible):
  c = a + b          a new array per op; Kiln pushes it to its engine, numpy and PyTorch compute it;
                     Kiln's time includes a waitall() after the loop, amortized over the ops
  a += 1             in place
  c = a + b; sync    each result read back before the next op (c.wait_to_read(); PyTorch and numpy
                     need no sync), Kiln's worst case
Predict: the MLP of examples/python/train_mlp.py (64-256-128-10, ReLU) at batch 1, fed a numpy array:
  Kiln     mx.Predictor on the exported model, predict([x])[0] (an NDArray over the result)
  PyTorch  torch.nn.Sequential with the same weights under inference_mode, on torch.from_numpy(x)
  numpy    the same three matrix products written in numpy
With --bench-engine, the same `c = a + b` loop written against the C++ API (bench_engine's
BM_NDArraySmallAdd) runs in each round too, which separates the C++ core's cost per op from what
the Python layer adds.
Each measurement runs `--calls` times per round; rounds alternate the libraries so that load on the
machine hits all alike, and the median over rounds of the per-call mean is reported, in microseconds.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def per_call_us(fn, calls):
    start = time.perf_counter()
    fn(calls)
    return (time.perf_counter() - start) / calls * 1e6


def kiln_cases(mx):
    a, b = mx.nd.ones((4,)), mx.nd.ones((4,))

    def add(n):
        for _ in range(n):
            a + b
        mx.nd.waitall()

    def iadd(n):
        x = mx.nd.ones((4,))
        for _ in range(n):
            x += 1
        mx.nd.waitall()

    def add_sync(n):
        for _ in range(n):
            (a + b).wait_to_read()
    return {"c = a + b": add, "a += 1": iadd, "c = a + b; sync": add_sync}


def numpy_cases():
    a, b = np.ones(4, np.float32), np.ones(4, np.float32)

    def add(n):
        for _ in range(n):
            a + b

    def iadd(n):
        x = np.ones(4, np.float32)
        for _ in range(n):
            x += 1
    return {"c = a + b": add, "a += 1": iadd, "c = a + b; sync": add}


def torch_cases(torch):
    a, b = torch.ones(4), torch.ones(4)

    def add(n):
        for _ in range(n):
            a + b

    def iadd(n):
        x = torch.ones(4)
        for _ in range(n):
            x += 1
    return {"c = a + b": add, "a += 1": iadd, "c = a + b; sync": add}


def cpp_add_us(bench_engine):
    """The C++ API's cost per `a + b` on tiny arrays, from one bench_engine run."""
    out = subprocess.run([bench_engine, "--benchmark_filter=BM_NDArraySmallAdd", "--benchmark_format=json"],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)["benchmarks"][0]["ns_per_op"] * 1e6  # the counter is in seconds per op


def mlp_weights():
    rng = np.random.RandomState(0)
    dims = [64, 256, 128, 10]
    return [(rng.uniform(-0.1, 0.1, (o, i)).astype(np.float32), rng.uniform(-0.1, 0.1, o).astype(np.float32))
            for i, o in zip(dims[:-1], dims[1:])]


def kiln_predict(mx, weights, folder):
    net = mx.gluon.nn.HybridSequential()
    for k, (w, _) in enumerate(weights):
        net.add(mx.gluon.nn.Dense(w.shape[0], activation="relu" if k < len(weights) - 1 else None))
    net.initialize()
    net.hybridize()
    x = np.ones((1, 64), np.float32)
    net(mx.nd.array(x))
    for layer, (w, b) in zip(net, weights):
        layer.weight.set_data(mx.nd.array(w))
        layer.bias.set_data(mx.nd.array(b))
    net(mx.nd.array(x))
    prefix = os.path.join(folder, "mlp")
    net.export(prefix)
    predictor = mx.Predictor(prefix, opt_level="all")

    def run(n):
        for _ in range(n):
            predictor.predict([x])[0]
    return run, predictor.predict([x])[0].asnumpy()


def torch_predict(torch, weights):
    layers = []
    for k, (w, b) in enumerate(weights):
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
        layers.append(linear)
        if k < len(weights) - 1:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).eval()
    x = np.ones((1, 64), np.float32)

    def run(n):
        with torch.inference_mode():
            for _ in range(n):
                model(torch.from_numpy(x))
    with torch.inference_mode():
        return run, model(torch.from_numpy(x)).numpy()


def numpy_predict(weights):
    x = np.ones((1, 64), np.float32)

    def forward():
        h = x
        for k, (w, b) in enumerate(weights):
            h = h @ w.T + b
            if k < len(weights) - 1:
                h = np.maximum(h, 0)
        return h

    def run(n):
        for _ in range(n):
            forward()
    return run, forward()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--bench-engine", help="bench_engine binary: also time the C++ API's a + b")
    args = parser.parse_args()

    import kiln as mx
    import torch
    torch.set_num_threads(args.threads)
    cases = {"kiln": kiln_cases(mx), "numpy": numpy_cases(), "torch": torch_cases(torch)}
    weights = mlp_weights()
    with tempfile.TemporaryDirectory() as folder:
        kiln_run, kiln_out = kiln_predict(mx, weights, folder)
        torch_run, torch_out = torch_predict(torch, weights)
        numpy_run, numpy_out = numpy_predict(weights)
        np.testing.assert_allclose(kiln_out, numpy_out, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(torch_out, numpy_out, rtol=1e-4, atol=1e-5)
        for lib in cases:
            cases[lib]["predict (MLP, batch 1)"] = {"kiln": kiln_run, "numpy": numpy_run, "torch": torch_run}[lib]

        names = list(cases["kiln"])
        samples = {(lib, name): [] for lib in cases for name in names}
        for lib in cases:  # warm-up
            for name in names:
                per_call_us(cases[lib][name], args.calls // 10)
        cpp_samples = []
        for r in range(args.rounds):
            if args.bench_engine:
                cpp_samples.append(cpp_add_us(args.bench_engine))
            order = list(cases)[r % 3:] + list(cases)[:r % 3]
            for name in names:
                calls = args.calls // 10 if name.startswith("predict") else args.calls
                for lib in order:
                    samples[(lib, name)].append(per_call_us(cases[lib][name], calls))

    print(f"microseconds per call, median of {args.rounds} rounds (Python {sys.version.split()[0]}, "
          f"numpy {np.__version__}, torch {torch.__version__}, {args.threads} threads)")
    print(f"| {'operation':24} | {'Kiln':>8} | {'numpy':>8} | {'PyTorch':>8} | Kiln / PyTorch |")
    print(f"|{'-' * 26}|{'-' * 10}|{'-' * 10}|{'-' * 10}|{'-' * 16}|")
    for name in names:
        k, n, t = (statistics.median(samples[(lib, name)]) for lib in ("kiln", "numpy", "torch"))
        print(f"| {name:24} | {k:8.2f} | {n:8.2f} | {t:8.2f} | {k / t:14.2f} |")
    if cpp_samples:
        print(f"C++ API, the same c = a + b loop (bench_engine): {statistics.median(cpp_samples):.2f} us per op")


if __name__ == "__main__":
    main()
