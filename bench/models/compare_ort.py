"""Runs the real-model ONNX files through ONNX Runtime and through Kiln (`kiln run`) and compares.

Usage: .venv-models/bin/python bench/models/compare_ort.py MODELS_DIR --kiln PATH_TO_KILN
           [--models resnet50 ...] [--batches 1 8] [--opt-level basic] [--fix-batch] [--timeout 1800]

For each model and batch size it makes random inputs (fixed seed; images in [0, 1), token ids in
the vocabulary, attention masks with random padding), then prints per output the largest absolute
difference divided by the largest absolute ONNX Runtime value, PASS when that ratio is under 1e-4,
and how long `kiln run` took (process wall time, model loading included). The exit status is 1 if
any comparison failed or Kiln could not run a model.

--fix-batch gives Kiln a copy of the model whose free batch dimension is set to the batch being
run, which separates Kiln's numerics from its handling of dynamic shapes.
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bert  # noqa: E402

MODELS = ("resnet50", "mobilenet_v2", "yolov5s", "bert_base")
TOLERANCE = 1e-4
SEED = 7
NUMPY_DTYPES = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.INT64: np.int64}


def input_specs(model_path):
    """(name, numpy dtype, shape with None for free dimensions) of each graph input."""
    model = onnx.load(str(model_path), load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    specs = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else None for d in tensor_type.shape.dim]
        specs.append((value.name, NUMPY_DTYPES[tensor_type.elem_type], shape))
    return specs


def make_inputs(specs, batch, rng):
    inputs = {}
    for name, dtype, shape in specs:
        shape = [batch if d is None else d for d in shape]
        if name == "input_ids":
            inputs[name] = rng.integers(0, bert.BertConfig().vocab_size, shape, dtype=np.int64)
        elif name == "attention_mask":
            # Each sequence keeps a random-length prefix and pads the rest, so masking is exercised.
            lengths = rng.integers(shape[1] // 2, shape[1] + 1, shape[0])
            inputs[name] = (np.arange(shape[1])[None, :] < lengths[:, None]).astype(np.int64)
        elif name == "token_type_ids":
            # Sentence A then sentence B, split at a random position.
            splits = rng.integers(1, shape[1], shape[0])
            inputs[name] = (np.arange(shape[1])[None, :] >= splits[:, None]).astype(np.int64)
        elif dtype == np.float32:
            inputs[name] = rng.random(shape, dtype=np.float32)
        else:
            raise SystemExit(f"compare_ort: no rule to make input '{name}' of type {dtype.__name__}")
    return inputs


def with_fixed_batch(model_path, batch, work_dir):
    """A copy of the model whose inputs and outputs declare `batch` instead of a free first dim."""
    model = onnx.load(str(model_path))
    for value in list(model.graph.input) + list(model.graph.output):
        dim = value.type.tensor_type.shape.dim[0]
        if not dim.HasField("dim_value"):
            dim.Clear()
            dim.dim_value = batch
    path = work_dir / f"{model_path.stem}_batch{batch}.onnx"
    onnx.save(model, str(path))
    return path


def as_mxnet(kiln, model_path, work_dir):
    """The model converted to MXNet's format by `kiln convert`, and its output names in order
    (MXNet names outputs after their nodes)."""
    symbol = work_dir / f"{model_path.stem}-symbol.json"
    result = subprocess.run([str(kiln), "convert", str(model_path), str(symbol)], capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"kiln convert: {(result.stderr or result.stdout).strip()}")
    info = subprocess.run([str(kiln), "info", str(symbol), "--json"], capture_output=True, text=True, check=True)
    return symbol, [o["name"] for o in json.loads(info.stdout)["outputs"]]


def run_kiln(kiln, model_path, inputs, output_names, work_dir, extra_args=(), timeout=None,
             kiln_output_names=None):
    """Returns ({output name: array}, seconds) from `kiln run` with `extra_args`, or raises
    RuntimeError with Kiln's message. Each call writes its outputs to a folder of its own in
    `work_dir`. `kiln_output_names`: the names Kiln gives the outputs, when they differ (an MXNet
    conversion)."""
    out_dir = pathlib.Path(tempfile.mkdtemp(prefix=f"out_{model_path.stem}_", dir=work_dir))
    command = [str(kiln), "run", str(model_path), *extra_args, "--output-dir", str(out_dir)]
    for name, array in inputs.items():
        path = work_dir / f"input_{name}_{array.dtype}.npy"
        np.save(path, array)
        command += ["--input", f"{name}={path}"]
    start = time.perf_counter()
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"timed out after {timeout} s") from None
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise RuntimeError((result.stderr or result.stdout).strip() or f"exit status {result.returncode}")
    # `kiln run` names each file after its output, with '/' replaced by '_'.
    kiln_names = kiln_output_names or output_names
    outputs = {name: np.load(out_dir / (kiln_name.replace("/", "_") + ".npy"))
               for name, kiln_name in zip(output_names, kiln_names, strict=True)}
    return outputs, seconds


def kiln_runs(label, runs):
    """What `runs()` returns, or None after printing the FAIL line for `label` when Kiln could not
    run the model (`runs` raised RuntimeError)."""
    try:
        return runs()
    except RuntimeError as error:
        print(f"{label}: FAIL (kiln run: {error})", flush=True)
        return None


def compare(expected, actual):
    """Largest absolute difference over largest absolute expected value, or None on a shape mismatch."""
    if expected.shape != actual.shape:
        return None
    scale = max(float(np.abs(expected).max()), 1e-30)
    return float(np.abs(expected.astype(np.float64) - actual.astype(np.float64)).max()) / scale


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models_dir", type=pathlib.Path)
    parser.add_argument("--kiln", type=pathlib.Path, required=True, help="the kiln CLI executable")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8])
    parser.add_argument("--opt-level", default="basic", choices=("none", "basic", "all"))
    parser.add_argument("--fix-batch", action="store_true", help="give Kiln the model with the batch fixed")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds allowed for one `kiln run`")
    parser.add_argument("--via-mxnet", action="store_true",
                        help="convert each model to MXNet's format with `kiln convert` and run that")
    args = parser.parse_args()

    all_passed = True
    for model_name in args.models:
        model_path = args.models_dir / f"{model_name}.onnx"
        specs = input_specs(model_path)
        session = onnxruntime.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
        output_names = [o.name for o in session.get_outputs()]
        for batch in args.batches:
            rng = np.random.default_rng(SEED)
            inputs = make_inputs(specs, batch, rng)
            expected = dict(zip(output_names, session.run(None, inputs), strict=True))
            label = f"{model_name} batch {batch}"
            with tempfile.TemporaryDirectory(prefix="kiln_compare_") as work_dir:
                work_dir = pathlib.Path(work_dir)
                kiln_model = with_fixed_batch(model_path, batch, work_dir) if args.fix_batch else model_path
                if args.via_mxnet:
                    label = f"{model_name} (MXNet format) batch {batch}"

                def convert_and_run():
                    model, kiln_names = (as_mxnet(args.kiln, kiln_model, work_dir) if args.via_mxnet
                                         else (kiln_model, None))
                    return run_kiln(args.kiln, model, inputs, output_names, work_dir,
                                    ("--opt-level", args.opt_level), args.timeout, kiln_names)

                result = kiln_runs(label, convert_and_run)
            if result is None:
                all_passed = False
                continue
            actual, seconds = result
            for name in output_names:
                ratio = compare(expected[name], actual[name])
                if ratio is None:
                    verdict = f"FAIL shape {actual[name].shape}, expected {expected[name].shape}"
                else:
                    verdict = f"{ratio:.2e} {'PASS' if ratio < TOLERANCE else 'FAIL'}"
                all_passed &= verdict.endswith("PASS")
                print(
                    f"{label}: {name} max|diff|/max|ort| = {verdict} "
                    f"(max|ort| {np.abs(expected[name]).max():.3g}; kiln run {seconds:.1f} s)",
                    flush=True,
                )
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
