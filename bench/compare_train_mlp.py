"""Training time of the same MLP from C++ (examples/cpp/train_mlp.cpp) and from Python
(examples/python/train_mlp.py): runs alternate, and the median of each program's printed training
time (the 15 epochs, data already loaded) is reported with the final test accuracies.

  .venv/bin/python bench/compare_train_mlp.py --cpp build/release/examples/cpp/train_mlp \\
      --pythonpath build/release/python [--rounds 5]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run(cmd, env):
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout
    seconds = float(re.search(r"training time: ([0-9.]+) s", out).group(1))
    accuracy = float(re.search(r"final test accuracy: ([0-9.]+)", out).group(1))
    return seconds, accuracy


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpp", required=True, help="the train_mlp executable")
    parser.add_argument("--pythonpath", required=True, help="the folder holding the built kiln package")
    parser.add_argument("--data", default=os.path.join(ROOT, "data", "digits"))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=args.pythonpath)
    programs = {"C++": [args.cpp, args.data],
                "Python": [sys.executable, os.path.join(ROOT, "examples", "python", "train_mlp.py"), args.data]}
    results = {name: [] for name in programs}
    for r in range(args.rounds):
        for name in (list(programs) if r % 2 == 0 else list(programs)[::-1]):
            results[name].append(run(programs[name], env))
    for name, runs in results.items():
        times = [t for t, _ in runs]
        print(f"{name:7} training time median {statistics.median(times):.3f} s (min {min(times):.3f}, "
              f"max {max(times):.3f}); test accuracy {', '.join(f'{a:.4f}' for _, a in runs)}")
    ratio = statistics.median(t for t, _ in results["Python"]) / statistics.median(t for t, _ in results["C++"])
    print(f"Python / C++: {ratio:.3f}")


if __name__ == "__main__":
    main()
