"""Writes the real-model benchmark ONNX files: ResNet-50, MobileNetV2, YOLOv5s and BERT-base.

Usage: .venv-models/bin/python bench/models/make_models.py OUT_DIR

Weights are random (fixed seeds, nothing downloaded), so the files test Kiln's import and numerics,
not accuracy. Normalization layers get non-trivial parameters: random scales and shifts, and
BatchNorm running statistics measured on random images, so that folding BatchNorm into the
convolution changes the weights and a wrong fold shows (the export keeps the BatchNormalization
nodes rather than folding them itself). Every file has a dynamic batch axis and is
exported at opset 17 with the TorchScript exporter.
"""

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np
import onnx
import onnxruntime
import torch
import torchvision
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import bert  # noqa: E402
import yolov5s  # noqa: E402

OPSET = 17
SEED = 20240601
BERT_SEQUENCE_LENGTH = 128


def randomize_norm_parameters(model, generator):
    """Scales in [0.5, 1.5) and shifts in N(0, 0.1) for every BatchNorm and LayerNorm."""
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (nn.BatchNorm2d, nn.LayerNorm)):
                module.weight.copy_(0.5 + torch.rand(module.weight.shape, generator=generator))
                module.bias.copy_(0.1 * torch.randn(module.bias.shape, generator=generator))


def calibrate_batch_norm(model, images):
    """Sets every BatchNorm's running mean and variance to the statistics of one batch of images.

    Measured statistics, unlike made-up ones, keep a deep random network's activations at a sane
    scale, so the comparison's error ratio means something at the output.
    """
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            module.reset_running_stats()
            module.momentum = None  # cumulative average: after one batch, exactly its statistics
    model.train()
    with torch.no_grad():
        model(images)
    model.eval()


def export(model, example_inputs, input_names, output_names, path):
    dynamic_axes = {name: {0: "batch"} for name in input_names + output_names}
    torch.onnx.export(
        model,
        example_inputs,
        str(path),
        opset_version=OPSET,
        input_names=input_names,
        output_names=output_names,
        dynamic_axes=dynamic_axes,
        do_constant_folding=True,
        # PRESERVE exports an eval-mode model for inference but, unlike EVAL, leaves BatchNormalization
        # nodes in the graph instead of folding them into the convolutions, so Kiln's fold is tested.
        training=torch.onnx.TrainingMode.PRESERVE,
        dynamo=False,
    )
    onnx.checker.check_model(str(path))
    check_against_onnxruntime(model, example_inputs, input_names, path)


def check_against_onnxruntime(model, example_inputs, input_names, path):
    """Fails the export if ONNX Runtime's output differs from PyTorch's, so a bad export is caught
    here rather than blamed on Kiln later."""
    with torch.no_grad():
        expected = model(*example_inputs)
    expected = expected if isinstance(expected, tuple) else (expected,)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    actual = session.run(None, {name: t.numpy() for name, t in zip(input_names, example_inputs, strict=True)})
    for want, got in zip(expected, actual, strict=True):
        ratio = np.abs(want.numpy() - got).max() / max(np.abs(want.numpy()).max(), 1e-30)
        if not ratio < 1e-4:
            raise SystemExit(f"{path}: ONNX Runtime differs from PyTorch by {ratio:.2e} of the output range")


def vision_model(name, constructor, image_size, input_name, output_name, out_dir, generator):
    model = constructor()
    randomize_norm_parameters(model, generator)
    images = torch.rand(4, 3, image_size, image_size, generator=generator)
    calibrate_batch_norm(model, images)
    path = out_dir / f"{name}.onnx"
    export(model, (images[:1],), [input_name], [output_name], path)
    return path


def bert_model(out_dir, generator):
    config = bert.BertConfig()
    model = bert.Bert(config)
    randomize_norm_parameters(model, generator)
    model.eval()
    input_ids = torch.randint(0, config.vocab_size, (1, BERT_SEQUENCE_LENGTH), generator=generator)
    attention_mask = torch.ones(1, BERT_SEQUENCE_LENGTH, dtype=torch.int64)
    token_type_ids = torch.zeros(1, BERT_SEQUENCE_LENGTH, dtype=torch.int64)
    path = out_dir / "bert_base.onnx"
    export(
        model,
        (input_ids, attention_mask, token_type_ids),
        ["input_ids", "attention_mask", "token_type_ids"],
        ["last_hidden_state", "pooler_output"],
        path,
    )
    return path


def main():
    # The TorchScript exporter is deprecated but still gives opset 17 graphs made of plain ONNX ops,
    # and it warns about constant folding with PRESERVE, which only matters for training-mode models.
    warnings.filterwarnings("ignore", message="You are using the legacy TorchScript-based ONNX export")
    warnings.filterwarnings("ignore", message="It is recommended that constant folding be turned off")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=pathlib.Path)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)

    builders = {
        "resnet50": lambda g: vision_model(
            "resnet50",
            lambda: torchvision.models.resnet50(weights=None),
            224,
            "data",
            "logits",
            args.out_dir,
            g,
        ),
        "mobilenet_v2": lambda g: vision_model(
            "mobilenet_v2",
            lambda: torchvision.models.mobilenet_v2(weights=None),
            224,
            "data",
            "logits",
            args.out_dir,
            g,
        ),
        "yolov5s": lambda g: vision_model(
            "yolov5s", yolov5s.YOLOv5s, 640, "images", "output0", args.out_dir, g
        ),
        "bert_base": lambda g: bert_model(args.out_dir, g),
    }
    for name, build in builders.items():
        # Each model gets its own seed so that one model's weights do not depend on the others.
        torch.manual_seed(SEED)
        generator = torch.Generator().manual_seed(SEED)
        start = time.perf_counter()
        path = build(generator)
        size_mb = path.stat().st_size / 2**20
        print(f"{name}: wrote {path} ({size_mb:.1f} MiB, {time.perf_counter() - start:.1f} s)", flush=True)


if __name__ == "__main__":
    main()
