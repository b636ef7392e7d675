"""Instructions and heap allocations per small NDArray call from Python, counted by valgrind's
callgrind, which counts the same under any load (timings on a shared machine do not).

  PYTHONPATH=build/rel/python .venv/bin/python bench/python_call_cost.py [--calls 10000]

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
    "c = a + b; sync": "(a + b).wait_to_read()",
}

PROGRAM = """
import sys
import kiln as mx
a, b, x = mx.nd.ones((4,)), mx.nd.ones((4,)), mx.nd.ones((4,))
def run(n):
    global x
    for _ in range(n):
        {statement}
    mx.nd.waitall()
run(2000)
run(int(sys.argv[1]))
"""

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


def measure(statement, calls, folder):
    out_file = os.path.join(folder, f"callgrind.{calls}.out")
    program = PROGRAM.format(statement=statement)
    subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out_file}", "--dump-instr=no",
                    sys.executable, "-c", program, str(calls)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=dict(os.environ, KILN_ENGINE_THREADS=os.environ.get("KILN_ENGINE_THREADS", "2")))
    return totals(out_file)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=10000)
    args = parser.parse_args()
    print(f"per call from Python, callgrind difference of {args.calls} and {2 * args.calls} calls")
    print(f"| {'operation':18} | {'instructions':>12} | {'allocations':>11} |")
    print(f"|{'-' * 20}|{'-' * 14}|{'-' * 13}|")
    for name, statement in CASES.items():
        with tempfile.TemporaryDirectory() as folder:
            i1, a1 = measure(statement, args.calls, folder)
            i2, a2 = measure(statement, 2 * args.calls, folder)
        print(f"| {name:18} | {(i2 - i1) / args.calls:12.0f} | {(a2 - a1) / args.calls:11.1f} |")


if __name__ == "__main__":
    main()
