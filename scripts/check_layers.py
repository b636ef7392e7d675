"""Checks that Kiln's layers depend on each other one way only (docs/ARCHITECTURE.md, "Layers").

Every `#include "LAYER/..."` of an internal header in src/ must name the file's own layer or one
below it. The public headers (include/kiln/) are the API every layer may use and are not checked.
Exit status 1, with every offending include listed, when a file reaches up or sideways.

    python3 scripts/check_layers.py [SRC_DIR]
"""
import pathlib
import re
import sys

# The internal layers each layer may include, besides its own. A layer's folder is its first path
# component under src/, or its first two for the frontends, tools and backends families.
ALLOWED = {
    "core": set(),
    "profiler": {"core"},
    "engine": {"core", "profiler"},
    "ops": {"core"},
    "ndarray": {"core", "engine", "ops", "profiler"},
    "graph": {"core", "ops"},
    "runtime": {"core", "ops", "graph", "profiler"},
    "autograd": {"core", "ops", "graph", "ndarray", "runtime"},
    "frontends/npy": {"core"},
    "frontends/onnx": {"core", "ops", "graph"},
    "frontends/mxnet": {"core", "ops", "graph", "ndarray", "frontends/onnx"},
    "frontends": {"core", "frontends/mxnet"},  # model_files: which files a model path names
    "deploy": {"core", "ops", "graph", "runtime", "autograd", "ndarray", "frontends", "frontends/onnx",
               "frontends/mxnet"},
    "nn": {"core", "ops", "graph", "ndarray", "autograd", "frontends/mxnet", "frontends/onnx"},
    "backends/onednn": {"core", "ops", "graph", "runtime"},
    "tools/quantize": {"core", "ops", "graph", "runtime", "frontends", "frontends/onnx", "frontends/mxnet", "deploy"},
    "tools/prune": {"core", "ops", "graph", "runtime", "frontends", "frontends/onnx", "frontends/mxnet", "deploy"},
    "tools/mixed_precision": {"core", "ops", "graph", "runtime"},
    "tools/accuracy": {"core", "ops", "graph", "runtime"},
    "tools/files": {"core"},  # labels files and calibration folders: a file layer, for its fuzzers
    "bindings/python": None,  # the bindings sit on top and may use any layer
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/([a-z_]+)?', re.M)
FAMILIES = ("frontends", "tools", "backends", "bindings")


def layer_of(parts):
    """The layer a path under src/ (split into components) belongs to."""
    if parts[0] in FAMILIES and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0]


def main():
    src = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent / "src")
    problems = []
    for path in sorted(src.rglob("*")):
        if path.suffix not in (".h", ".cc") or not path.is_file():
            continue
        layer = layer_of(path.relative_to(src).parts)
        if layer not in ALLOWED:
            problems.append(f"{path.relative_to(src)}: layer '{layer}' is not in scripts/check_layers.py")
            continue
        allowed = ALLOWED[layer]
        if allowed is None:
            continue
        for first, second in INCLUDE.findall(path.read_text()):
            target = first + "/" + second if first in FAMILIES and (src / first / second).is_dir() else first
            if target == layer or target not in ALLOWED or target in allowed:
                continue
            problems.append(f"{path.relative_to(src)}: layer '{layer}' includes '{target}/'")
    for p in problems:
        print(p)
    checked = sum(1 for p in src.rglob("*") if p.suffix in (".h", ".cc"))
    print(f"layers: {checked} files checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
