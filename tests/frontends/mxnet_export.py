#!/usr/bin/env python3
"""Models written by Kiln's MXNet exporter, loaded and run by real MXNet 1.9.1.

  mxnet_export.py [--venv DIR] all OUT --tool EXE [--models a,b]
        1. MXNet makes Gluon model-zoo nets with random weights (and op_mix, a symbol covering the
           other converters), as mxnet_models.py does: OUT/NAME-symbol.json, -0000.params,
           -input.npy, -output.npy
        2. `EXE reexport` imports each into Kiln and exports it again: OUT/kiln/NAME-*
        3. `EXE graph` writes graphs built in Kiln the way an ONNX model is (conv_net, onnx_mix),
           with Kiln's outputs: OUT/kiln/NAME-*
        4. MXNet loads every Kiln-written model (mx.sym.load, mx.nd.load), binds it, runs it and
           compares with MXNet's output (step 1) or Kiln's (step 3): max |error| / max |value| must
           stay below 1e-4, and no node may be a Kiln-only (`_kiln_`) op

MXNet 1.x needs numpy < 1.24, so it lives in its own venv (.venv-mxnet, made by
scripts/setup-mxnet.sh); the script re-runs itself with that venv's Python.
"""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mxnet_models  # noqa: E402  (the zoo nets and op_mix, generated the same way)

ZOO = ["resnet18_v1", "mobilenetv2_1.0", "squeezenet1.0", "densenet121", "inceptionv3", "op_mix"]
KILN_GRAPHS = ["conv_net", "onnx_mix"]
TOLERANCE = 1e-4


def use_venv(venv):
    """Re-runs this script with the venv's Python unless it already runs there."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        sys.exit(f"mxnet_export: {venv} is missing: run scripts/setup-mxnet.sh to install MXNet 1.9.1 there")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])


def run_in_mxnet(prefix, inputs):
    """Loads PREFIX-symbol.json and PREFIX-0000.params as MXNet does and runs them on `inputs`
    (the values of the variables the params lack, in list_arguments order)."""
    import mxnet as mx
    net = mx.sym.load(f"{prefix}-symbol.json")
    saved = mx.nd.load(f"{prefix}-0000.params")
    args = {k[4:]: v for k, v in saved.items() if k.startswith("arg:")}
    aux = {k[4:]: v for k, v in saved.items() if k.startswith("aux:")}
    free = [n for n in net.list_arguments() if n not in args]
    if len(free) != len(inputs):
        raise RuntimeError(f"expected {len(inputs)} input variable(s), the symbol has {free}")
    for name, value in zip(free, inputs):
        args[name] = mx.nd.array(value, dtype=value.dtype)
    exe = net.bind(mx.cpu(), args, aux_states=aux, grad_req="null")
    return [o.asnumpy() for o in exe.forward(is_train=False)]


def kiln_only_ops(prefix):
    with open(f"{prefix}-symbol.json") as f:
        return sorted({n["op"] for n in json.load(f)["nodes"] if n["op"].startswith("_kiln_")})


def relative_error(got, want):
    import numpy as np
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got.astype("float64") - want))) / scale


def check(name, prefix, inputs, wants):
    """Runs Kiln's files in MXNet; prints one line and returns 1 on failure."""
    kiln_ops = kiln_only_ops(prefix)
    if kiln_ops:
        print(f"FAIL {name}: Kiln-only ops in the export: {kiln_ops}")
        return 1
    try:
        gots = run_in_mxnet(prefix, inputs)
    except Exception as e:  # MXNet raises MXNetError, but any failure to load or run is a failure here
        print(f"FAIL {name}: MXNet cannot run Kiln's files: {str(e).splitlines()[0]}")
        return 1
    if len(gots) != len(wants):
        print(f"FAIL {name}: {len(gots)} outputs, expected {len(wants)}")
        return 1
    worst = 0.0
    for i, (got, want) in enumerate(zip(gots, wants)):
        if got.shape != want.shape:
            print(f"FAIL {name}: output {i} has shape {got.shape}, expected {want.shape}")
            return 1
        worst = max(worst, relative_error(got, want))
    verdict = "ok  " if worst < TOLERANCE else "FAIL"
    print(f"{verdict} {name}: max abs error / max abs value = {worst:.3g}", flush=True)
    return int(worst >= TOLERANCE)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=os.path.join(os.path.dirname(__file__), "..", "..", ".venv-mxnet"))
    parser.add_argument("mode", choices=["all"])
    parser.add_argument("out")
    parser.add_argument("--tool", required=True, help="the mxnet_export program")
    parser.add_argument("--models", help="comma-separated subset of: " + ",".join(ZOO + KILN_GRAPHS))
    args = parser.parse_args()
    use_venv(os.path.abspath(args.venv))
    import numpy as np
    wanted = args.models.split(",") if args.models else ZOO + KILN_GRAPHS
    unknown = set(wanted) - set(ZOO + KILN_GRAPHS)
    if unknown:
        sys.exit(f"mxnet_export: unknown models {sorted(unknown)}")
    kiln_dir = os.path.join(args.out, "kiln")
    os.makedirs(kiln_dir, exist_ok=True)
    failures = 0

    zoo = [m for m in mxnet_models.MODELS if m[0] in wanted]
    mxnet_models.generate(args.out, zoo)
    for name, _ in zoo:
        source, prefix = os.path.join(args.out, name), os.path.join(kiln_dir, name)
        run = subprocess.run([args.tool, "reexport", f"{source}-symbol.json", f"{source}-0000.params",
                              f"{source}-input.npy", prefix])
        if run.returncode != 0:
            print(f"FAIL {name}: {args.tool} reexport exited with {run.returncode}")
            failures += 1
            continue
        failures += check(name, prefix, [np.load(f"{source}-input.npy")], [np.load(f"{source}-output.npy")])

    for name in [g for g in KILN_GRAPHS if g in wanted]:
        prefix = os.path.join(kiln_dir, f"kiln_{name}")
        run = subprocess.run([args.tool, "graph", name, prefix])
        if run.returncode != 0:
            print(f"FAIL kiln {name}: {args.tool} graph exited with {run.returncode}")
            failures += 1
            continue
        wants, i = [], 0
        while os.path.exists(f"{prefix}-output{i}.npy"):
            wants.append(np.load(f"{prefix}-output{i}.npy"))
            i += 1
        failures += check(f"kiln {name}", prefix, [np.load(f"{prefix}-input.npy")], wants)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
