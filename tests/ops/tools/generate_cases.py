"""Writes every op test case the C++ runner checks:
  OUT/onnx/   the ONNX backend node tests (export_onnx_node_cases.py)
  OUT/numpy/  Kiln's own numpy-computed cases (tests/ops/cases/*.py, each with a write(root))

usage: generate_cases.py OUT_DIR
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(os.path.dirname(HERE), "cases")


def main() -> int:
    out = sys.argv[1]
    subprocess.run([sys.executable, os.path.join(HERE, "export_onnx_node_cases.py"), os.path.join(out, "onnx")],
                   check=True)
    numpy_root = os.path.join(out, "numpy")
    if os.path.exists(numpy_root):
        shutil.rmtree(numpy_root)
    os.makedirs(numpy_root)
    sys.path.insert(0, HERE)
    for name in sorted(os.listdir(CASES)):
        if not name.endswith(".py") or name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(name[:-3], os.path.join(CASES, name))
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
            module.write(numpy_root)
        except Exception:
            print(f"generate_cases: tests/ops/cases/{name} failed", file=sys.stderr)
            raise
    print(f"wrote {len(os.listdir(numpy_root))} numpy cases to {numpy_root}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
