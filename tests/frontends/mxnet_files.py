#!/usr/bin/env python3
"""MXNet's half of the MXNet file check: real MXNet 1.9.1 writes model files and loads Kiln's.

  mxnet_files.py [--venv DIR] generate OUT   MXNet writes .params / -symbol.json files into OUT,
                                             the .npy dumps of what MXNet loads from them, and
                                             OUT/manifest.json listing both
  mxnet_files.py [--venv DIR] check OUT      MXNet loads the files Kiln wrote into OUT/kiln and
                                             checks names, dtypes, shapes, values and graphs
                                             against its own files (bytes too, where Kiln writes
                                             the same layout), and runs both models
  mxnet_files.py [--venv DIR] all OUT --roundtrip EXE
                                             generate, EXE OUT (mxnet_roundtrip), check

MXNet 1.x needs numpy < 1.24, so it lives in its own venv (.venv-mxnet, made by
scripts/setup-mxnet.sh); the script re-runs itself with that venv's Python. No network: models
are initialised randomly.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

DTYPES = ["float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool", "bfloat16"]


def use_venv(venv):
    """Re-runs this script with the venv's Python unless it already runs there."""
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        sys.exit(f"mxnet_files: {venv} is missing: run scripts/setup-mxnet.sh to install MXNet 1.9.1 there")
    if os.path.realpath(sys.prefix) != os.path.realpath(venv):
        os.execv(python, [python, os.path.abspath(__file__)] + sys.argv[1:])
    try:
        import mxnet  # noqa: F401
    except ImportError as e:
        sys.exit(f"mxnet_files: cannot import mxnet in {venv} ({e}): run scripts/setup-mxnet.sh")


# --- generate ---------------------------------------------------------------------------------


def mx_load(path, numpy_shape):
    """What MXNet loads from a .params file: a dict (named) or a list, in file order."""
    import mxnet as mx
    if numpy_shape:
        with mx.util.np_shape(True):
            return mx.nd.load(path)
    return mx.nd.load(path)


def to_numpy(array):
    """The array's values; bfloat16 (a numpy record type in MXNet) as its uint16 bits."""
    import numpy as np
    values = array.asnumpy()
    if values.dtype.names:
        values = values.view(np.uint16).reshape(array.shape)
    return values


def dtype_name(array):
    import numpy as np
    dt = np.dtype(array.dtype)
    return "bfloat16" if dt.names else dt.name


def dump(out, file, numpy_shape=False, identical=True):
    """Writes .npy dumps of what MXNet loads from `file` and returns its manifest entry."""
    import numpy as np
    loaded = mx_load(os.path.join(out, file), numpy_shape)
    named = isinstance(loaded, dict)
    items = list(loaded.items()) if named else [(str(i), a) for i, a in enumerate(loaded)]
    folder = file + ".npy"
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    arrays = []
    for i, (name, array) in enumerate(items):
        npy = os.path.join(folder, f"{i}.npy")
        np.save(os.path.join(out, npy), to_numpy(array))
        arrays.append({"name": name, "npy": npy, "dtype": dtype_name(array)})
    return {"file": file, "named": named, "arrays": arrays, "numpy_shape": numpy_shape,
            "identical": identical}


def random_values(np, rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype in ("uint8", "int8", "int32", "int64"):
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    values = (rng.standard_normal(shape) * 100).astype("float32" if dtype == "bfloat16" else dtype)
    if values.size >= 3:  # the special values travel bit-exactly too
        values.flat[:3] = [np.inf, -np.inf, np.nan]
    return values


def mx_array(mx, np, values, dtype):
    if dtype == "bfloat16":
        return mx.nd.amp_cast(mx.nd.array(values, dtype="float32"), dtype=np.dtype([("bfloat16", np.uint16)]))
    return mx.nd.array(values, dtype=dtype)


def make_symbolic_checkpoint(mx, np, rng, out):
    """A small symbolic net saved with mx.model.save_checkpoint (arg:/aux: names)."""
    data = mx.sym.var("data")
    net = mx.sym.Convolution(data, kernel=(3, 3), pad=(1, 1), num_filter=8, name="conv1")
    net = mx.sym.BatchNorm(net, fix_gamma=False, name="bn1")
    net = mx.sym.Activation(net, act_type="relu", name="relu1")
    net = mx.sym.Pooling(net, kernel=(2, 2), stride=(2, 2), pool_type="max", name="pool1")
    net = mx.sym.FullyConnected(net, num_hidden=10, name="fc1")
    net = mx.sym.SoftmaxOutput(net, name="softmax")
    arg_shapes, _, aux_shapes = net.infer_shape(data=(2, 3, 8, 8))
    args = {n: mx.nd.array(rng.standard_normal(s)) for n, s in zip(net.list_arguments(), arg_shapes)
            if n not in ("data", "softmax_label")}
    aux = {n: mx.nd.array(rng.random(s) + 0.5) for n, s in zip(net.list_auxiliary_states(), aux_shapes)}
    mx.model.save_checkpoint(os.path.join(out, "symbolic"), 0, net, args, aux)
    return "symbolic-symbol.json", "symbolic-0000.params"


def make_gluon_export(mx, np, rng, out):
    """A model-zoo ResNet-18 with random weights and BatchNorm statistics, hybridized and exported."""
    net = mx.gluon.model_zoo.vision.resnet18_v1(pretrained=False)
    net.initialize(mx.init.Xavier())
    net.hybridize()
    net(mx.nd.array(rng.random((1, 3, 32, 32))))
    for name, param in net.collect_params().items():
        if "running" in name:
            param.set_data(mx.nd.array(rng.random(param.shape) + 0.5))
    net.export(os.path.join(out, "resnet18_v1"), epoch=0)
    return "resnet18_v1-symbol.json", "resnet18_v1-0000.params"


def make_legacy_file(np, out):
    """Records in the layouts older MXNet wrote, which MXNet 1.9.1 cannot write but still loads:
    uint32 shapes without a magic, and the V1 magic with int64 shapes and no storage type."""
    data = struct.pack("<QQQ", 0x112, 0, 2)
    data += struct.pack("<III", 2, 2, 3) + struct.pack("<iii", 1, 0, 0)
    data += np.arange(6, dtype="float32").tobytes()
    data += struct.pack("<Iiq", 0xF993FAC8, 1, 3) + struct.pack("<iii", 1, 0, 6)
    data += np.array([-1, 0, 1 << 40], dtype="int64").tobytes()
    data += struct.pack("<Q", 2)
    for name in (b"arg:legacy_u32_shape", b"aux:v1_int64"):
        data += struct.pack("<Q", len(name)) + name
    with open(os.path.join(out, "legacy.params"), "wb") as f:
        f.write(data)
    return "legacy.params"


def make_old_symbol(out):
    """A symbol in the layout of MXNet 0.8 (before NNVM): `param`/`attr`, [node, index] entries,
    no mxnet_version. MXNet 1.9.1 upgrades it on load (adding BatchNorm's variables)."""
    nodes = [
        {"op": "null", "param": {}, "name": "data", "inputs": [], "backward_source_id": -1},
        {"op": "null", "param": {}, "name": "fc_weight", "inputs": [], "backward_source_id": -1,
         "attr": {"lr_mult": "2"}},
        {"op": "null", "param": {}, "name": "fc_bias", "inputs": [], "backward_source_id": -1},
        {"op": "FullyConnected", "param": {"num_hidden": "10", "no_bias": "False"}, "name": "fc",
         "inputs": [[0, 0], [1, 0], [2, 0]], "backward_source_id": -1},
        {"op": "BatchNorm", "param": {"eps": "0.001"}, "name": "bn", "inputs": [[3, 0]],
         "backward_source_id": -1},
    ]
    with open(os.path.join(out, "old-symbol.json"), "w") as f:
        json.dump({"nodes": nodes, "arg_nodes": [0, 1, 2], "heads": [[4, 0]]}, f, indent=2)
    return "old-symbol.json"


def generate(out):
    import mxnet as mx
    import numpy as np
    rng = np.random.default_rng(0)
    mx.random.seed(0)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    manifest = {"params": [], "symbols": [], "unsupported": []}

    for make in (make_symbolic_checkpoint, make_gluon_export):
        symbol, params = make(mx, np, rng, out)
        manifest["symbols"].append(symbol)
        manifest["params"].append(dump(out, params))

    shapes = [(2, 3), (4,), (1, 2, 3, 2), (5, 1)]
    named = {}
    for i, dtype in enumerate(DTYPES):
        prefix = ("arg:", "aux:", "")[i % 3]
        values = random_values(np, rng, shapes[i % 4], dtype)
        named[f"{prefix}{dtype}_array"] = mx_array(mx, np, values, dtype)
    mx.nd.save(os.path.join(out, "dtypes.params"), named)
    manifest["params"].append(dump(out, "dtypes.params"))

    listed = [mx_array(mx, np, random_values(np, rng, (3, 2), d), d)
              for d in ("float16", "int64", "bfloat16")]
    mx.nd.save(os.path.join(out, "list.params"), listed)
    manifest["params"].append(dump(out, "list.params"))

    # 0-d and empty arrays exist only under numpy shape semantics, where MXNet writes V3 records.
    with mx.util.np_shape(True):
        scalars = {f"scalar_{d}": mx.nd.array(random_values(np, rng, (), d), dtype=d)
                   for d in ("float32", "float16", "int32", "bool")}
        scalars["empty_0x3"] = mx.nd.zeros((0, 3))
        scalars["empty_2x0x4_int8"] = mx.nd.zeros((2, 0, 4), dtype="int8")
        mx.nd.save(os.path.join(out, "numpy_shape.params"), scalars)
    manifest["params"].append(dump(out, "numpy_shape.params", numpy_shape=True))

    manifest["params"].append(dump(out, make_legacy_file(np, out), identical=False))
    manifest["symbols"].append(make_old_symbol(out))

    sparse = mx.nd.array([[0, 1], [2, 0]]).tostype("csr")
    mx.nd.save(os.path.join(out, "sparse_csr.params"), {"csr": sparse})
    manifest["unsupported"].append("sparse_csr.params")

    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    count = sum(len(p["arrays"]) for p in manifest["params"])
    print(f"mxnet_files: MXNet {mx.__version__} wrote {len(manifest['params'])} .params files "
          f"({count} arrays), {len(manifest['symbols'])} symbol files and "
          f"{len(manifest['unsupported'])} sparse file into {out}")


# --- check ------------------------------------------------------------------------------------


class Checker:
    def __init__(self):
        self.passed = 0
        self.failures = []

    def expect(self, ok, what):
        if ok:
            self.passed += 1
        else:
            self.failures.append(what)
            print(f"FAIL {what}")


def same_arrays(check, label, mine, theirs):
    import numpy as np
    check.expect(type(mine) is type(theirs),
                 f"{label}: MXNet loads a {type(theirs).__name__} from Kiln's file")
    if isinstance(mine, dict):
        check.expect(list(mine) == list(theirs), f"{label}: names {list(theirs)} != {list(mine)}")
        pairs = [(k, mine[k], theirs.get(k)) for k in mine]
    else:
        check.expect(len(mine) == len(theirs), f"{label}: {len(theirs)} arrays != {len(mine)}")
        pairs = list(zip(map(str, range(len(mine))), mine, theirs))
    for name, a, b in pairs:
        where = f"{label} '{name}'"
        if b is None:
            continue
        check.expect(dtype_name(a) == dtype_name(b), f"{where}: dtype {dtype_name(b)} != {dtype_name(a)}")
        check.expect(a.shape == b.shape, f"{where}: shape {b.shape} != {a.shape}")
        va, vb = to_numpy(a), to_numpy(b)
        check.expect(va.shape == vb.shape and va.tobytes() == vb.tobytes(), f"{where}: values differ")


def same_outputs(check, label, run):
    """Runs a model on MXNet's files and on Kiln's; the outputs must be bit-identical."""
    mine, theirs = run(""), run("kiln")
    check.expect(mine.shape == theirs.shape and mine.tobytes() == theirs.tobytes(),
                 f"{label}: outputs differ when MXNet runs Kiln's files")


def check(out):
    import mxnet as mx
    import numpy as np
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)
    kiln = os.path.join(out, "kiln")
    c = Checker()
    for entry in manifest["params"]:
        file, numpy_shape = entry["file"], entry["numpy_shape"]
        mine = mx_load(os.path.join(out, file), numpy_shape)
        theirs = mx_load(os.path.join(kiln, file), numpy_shape)
        same_arrays(c, file, mine, theirs)
        if entry["identical"]:
            with open(os.path.join(out, file), "rb") as a, open(os.path.join(kiln, file), "rb") as b:
                c.expect(a.read() == b.read(), f"{file}: Kiln's file differs from MXNet's byte for byte")
    for file in manifest["symbols"]:
        mine, theirs = mx.sym.load(os.path.join(out, file)), mx.sym.load(os.path.join(kiln, file))
        c.expect(mine.tojson() == theirs.tojson(), f"{file}: MXNet reads a different graph from Kiln's file")
        c.expect(mine.list_auxiliary_states() == theirs.list_auxiliary_states(),
                 f"{file}: auxiliary states differ")

    rng = np.random.default_rng(1)
    x = mx.nd.array(rng.random((2, 3, 8, 8)))
    image = mx.nd.array(rng.random((1, 3, 32, 32)))

    def run_symbolic(folder):
        sym, args, aux = mx.model.load_checkpoint(os.path.join(out, folder, "symbolic"), 0)
        args = dict(args, data=x, softmax_label=mx.nd.zeros((2,)))
        exe = sym.bind(mx.cpu(), args=args, aux_states=aux, grad_req="null")
        return exe.forward(is_train=False)[0].asnumpy()

    def run_gluon(folder):
        prefix = os.path.join(out, folder, "resnet18_v1")
        net = mx.gluon.SymbolBlock.imports(prefix + "-symbol.json", ["data"], prefix + "-0000.params")
        return net(image).asnumpy()

    same_outputs(c, "symbolic checkpoint", run_symbolic)
    same_outputs(c, "gluon export", run_gluon)

    print(f"mxnet_files: MXNet {mx.__version__} loaded Kiln's files: "
          f"{c.passed} checks passed, {len(c.failures)} failed")
    return 0 if not c.failures else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--venv", default=os.path.join(os.path.dirname(__file__), "..", "..", ".venv-mxnet"))
    parser.add_argument("mode", choices=["generate", "check", "all"])
    parser.add_argument("out")
    parser.add_argument("--roundtrip", help="the mxnet_roundtrip program (mode all)")
    args = parser.parse_args()
    use_venv(os.path.abspath(args.venv))
    if args.mode in ("generate", "all"):
        generate(args.out)
    if args.mode == "all":
        if not args.roundtrip:
            sys.exit("mxnet_files: mode all needs --roundtrip EXE")
        if subprocess.run([args.roundtrip, args.out]).returncode != 0:
            sys.exit("mxnet_files: Kiln's reading of MXNet's files does not match (see above)")
    if args.mode in ("check", "all"):
        sys.exit(check(args.out))


if __name__ == "__main__":
    main()
