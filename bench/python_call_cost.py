"""Instructions and heap allocations per small NDArray call from Python, counted by valgrind's
callgrind, which counts the same under any load (timings on a shared machine do not).

  PYTHONPATH=build/rel/python .venv/bin/python bench/python_call_cost.py [--calls 10000]
  .venv-models/bin/python bench/python_call_cost.py --library torch    # the same for PyTorch

Each case (c = a + b, a += 1, c = a + b; sync, on 4 float32 elements as in python_overhead.py) runs
in its own Python process under callgrind twice, with N and 2N calls after a warm-up; the
difference divided by N is the cost of one call, free of start-up and import costs. Allocations
count calls of malloc, calloc, realloc and the aligned allocations (operator new goes through them). Needs valgrind.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

CASES = {
    "c = a + b": "a + b",
    "a += 1": "x += 1",
    "c = a + b; sync": "(a + b){sync}",
}

PROGRAM = """
import sys
{setup}
def run(n):
    global x
    for _ in range(n):
        {statement}
    {sync_all}
run(2000)
run(int(sys.argv[1]))
"""

LIBRARIES = {
    "kiln": {"setup": "import kiln as mx\na, b, x = mx.nd.ones((4,)), mx.nd.ones((4,)), mx.nd.ones((4,))",
             "sync_all": "mx.nd.waitall()", "sync": ".wait_to_read()"},
    # PyTorch computes at the call, so its "sync" case is the plain add.
    "torch": {"setup": "import torch\ntorch.set_num_threads(1)\na, b, x = torch.ones(4), torch.ones(4), torch.ones(4)",
              "sync_all": "pass", "sync": ""},
}

# The C library's entry points only: operator new calls malloc, so counting both would count twice.
ALLOCATORS = re.compile(r"^(malloc|calloc|realloc|aligned_alloc|posix_memalign|memalign)$")


def totals(out_file):
    """Instructions (the run's total) and allocation calls from one callgrind output file."""
    names, instructions, allocations = {}, 0, 0
    target = None
    with open(out_file) as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                instructions = int(line.split()[1])
            m = re.match(r"^(c?)fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
            if m:  # fn= and cfn= share one table of compressed names
                if m.group(3):
                    names[m.group(2)] = m.group(3)
                if m.group(1):
                    target = names.get(m.group(2), "")
                continue
            if line.startswith("calls=") and target is not None:
                if ALLOCATORS.match(target):
                    allocations += int(line.split("=")[1].split()[0])
                target = None
    return instructions, allocations


def measure(library, statement, calls, folder):
    out_file = os.path.join(folder, f"callgrind.{calls}.out")
    lib = LIBRARIES[library]
    program = PROGRAM.format(setup=lib["setup"], sync_all=lib["sync_all"],
                             statement=statement.format(sync=lib["sync"]))
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--dump-instr=no",
                    sys.executable, "-c", program, str(calls)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   # numpy's OpenBLAS threads spin while waiting, which callgrind counts as instructions
                   env=dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1"))
    return totals(out_file)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10000)
    parser.add_argument("--library", choices=sorted(LIBRARIES), default="kiln",
                        help="torch: the same statements on PyTorch tensors (run with a Python that has torch)")
    args = parser.parse_args()
    print(f"{args.library}, per call from Python, callgrind difference of {args.calls} and {2 * args.calls} calls")
    print(f"| {'operation':18} | {'instructions':>12} | {'allocations':>11} |")
    print(f"|{'-' * 20}|{'-' * 14}|{'-' * 13}|")
    for name, statement in CASES.items():
        with tempfile.TemporaryDirectory() as folder:
            i1, a1 = measure(args.library, statement, args.calls, folder)
            i2, a2 = measure(args.library, statement, 2 * args.calls, folder)
        print(f"| {name:18} | {(i2 - i1) / args.calls:12.0f} | {(a2 - a1) / args.calls:11.1f} |")


if __name__ == "__main__":
    main()
