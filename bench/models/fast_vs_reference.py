"""Checks that Kiln's fast kernels agree with its reference kernels on the real models.

Usage: .venv-models/bin/python bench/models/fast_vs_reference.py MODELS_DIR --kiln PATH_TO_KILN
           [--models resnet50 ...] [--batches 1] [--opt-level all] [--normal-images] [--fp64]

For each model and batch size it makes the inputs compare_ort.py makes (fixed seed; images in
[0, 1), token ids in the vocabulary, attention masks with random padding), runs `kiln run
--kernels fast` and `kiln run --kernels reference` at the same opt level, and prints per output
max|fast - reference| / max|reference|, PASS under 1e-4. The exit status is 1 if any comparison
failed or Kiln could not run a model.

--fp64 also runs a float64 copy of the model (every float32 initializer, Constant, Cast target
and graph input made float64) on the reference kernels and prints how far each float32 path is
from it, which tells which path moved when the two disagree. --normal-images draws float inputs
from a standard normal instead of [0, 1): such inputs lie outside what an image model was trained
on and can push a detector's outputs where they are ill-conditioned (see docs/BENCHMARKS.md).
The reference kernels are slow (plain loops): ResNet-50 and YOLOv5s take tens of seconds each.
"""

import argparse
import pathlib
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from compare_ort import (  # noqa: E402
    MODELS, SEED, TOLERANCE, compare, input_specs, kiln_runs, make_inputs, run_kiln)

# Inputs that ONNX requires to stay float32 whatever the data's type: Resize's roi and scales.
FLOAT32_ONLY_INPUTS = {"Resize": (1, 2)}


def as_float64(model_path, work_dir):
    """A copy of the model computing in float64: the same function, without float32 rounding."""
    model = onnx.load(str(model_path))
    keep = {node.input[i] for node in model.graph.node for i in FLOAT32_ONLY_INPUTS.get(node.op_type, ())
            if i < len(node.input) and node.input[i]}

    def widen(tensor):
        if tensor.data_type == onnx.TensorProto.FLOAT and (not tensor.name or tensor.name not in keep):
            tensor.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(tensor).astype(np.float64), tensor.name))

    for tensor in model.graph.initializer:
        widen(tensor)
    for node in model.graph.node:
        for attr in node.attribute:
            if node.op_type == "Constant" and node.output[0] in keep:
                continue
            if attr.type == onnx.AttributeProto.TENSOR:
                widen(attr.t)
            elif node.op_type == "Cast" and attr.name == "to" and attr.i == onnx.TensorProto.FLOAT:
                attr.i = onnx.TensorProto.DOUBLE
    for value in list(model.graph.input) + list(model.graph.output):
        if value.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            value.type.tensor_type.elem_type = onnx.TensorProto.DOUBLE
    del model.graph.value_info[:]
    path = work_dir / f"{model_path.stem}_float64.onnx"
    onnx.save(model, str(path))
    return path


def run_kiln_kernels(kiln, model_path, inputs, output_names, kernels, opt_level, work_dir):
    """{output name: array} from `kiln run --kernels KERNELS`; raises RuntimeError with Kiln's message."""
    outputs, _ = run_kiln(kiln, model_path, inputs, output_names, work_dir,
                          ("--kernels", kernels, "--opt-level", opt_level))
    return outputs


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models_dir", type=pathlib.Path)
    parser.add_argument("--kiln", type=pathlib.Path, required=True, help="the kiln CLI executable")
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    parser.add_argument("--batches", nargs="+", type=int, default=[1])
    parser.add_argument("--opt-level", default="all", choices=("none", "basic", "all"))
    parser.add_argument("--normal-images", action="store_true", help="float inputs from N(0, 1)")
    parser.add_argument("--fp64", action="store_true", help="also compare both paths with a float64 run")
    args = parser.parse_args()

    all_passed = True
    for model_name in args.models:
        model_path = args.models_dir / f"{model_name}.onnx"
        specs = input_specs(model_path)
        output_names = [o.name for o in onnx.load(str(model_path), load_external_data=False).graph.output]
        for batch in args.batches:
            rng = np.random.default_rng(SEED)
            inputs = make_inputs(specs, batch, rng)
            if args.normal_images:
                inputs = {k: rng.standard_normal(v.shape).astype(np.float32) if v.dtype == np.float32 else v
                          for k, v in inputs.items()}
            label = f"{model_name} batch {batch}"
            with tempfile.TemporaryDirectory(prefix="kiln_fast_ref_") as work_dir:
                work_dir = pathlib.Path(work_dir)
                def fast_reference_and_exact():
                    fast = run_kiln_kernels(args.kiln, model_path, inputs, output_names, "fast", args.opt_level,
                                            work_dir)
                    ref = run_kiln_kernels(args.kiln, model_path, inputs, output_names, "reference",
                                           args.opt_level, work_dir)
                    if not args.fp64:
                        return fast, ref, None
                    wide_inputs = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in inputs.items()}
                    exact = run_kiln_kernels(args.kiln, as_float64(model_path, work_dir), wide_inputs, output_names,
                                             "reference", args.opt_level, work_dir)
                    return fast, ref, exact

                result = kiln_runs(label, fast_reference_and_exact)
            if result is None:
                all_passed = False
                continue
            fast, ref, exact = result
            for name in output_names:
                ratio = compare(ref[name], fast[name])
                passed = ratio is not None and ratio < TOLERANCE
                all_passed &= passed
                verdict = f"{ratio:.2e} {'PASS' if passed else 'FAIL'}" if ratio is not None else "FAIL shapes"
                line = f"{label}: {name} max|fast-ref|/max|ref| = {verdict} (max|ref| {np.abs(ref[name]).max():.3g})"
                if exact is not None:
                    line += (f"; vs float64: fast {compare(exact[name], fast[name]):.2e}, "
                             f"ref {compare(exact[name], ref[name]):.2e}")
                print(line, flush=True)
    return 0 if all_passed else 1


if __name__ == "__main__":
    sys.exit(main())
