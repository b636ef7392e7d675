"""The benchmark models as PyTorch modules, for the PyTorch eager column: built with the same builders
as bench/models/make_models.py (torchvision ResNet-50 and MobileNetV2, yolov5s.py, bert.py) plus the
MLP, then loaded with the ONNX file's weights (see models.write_torch_weights)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import torch
import torchvision
from torch import nn

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "models"))
import bert  # noqa: E402
import yolov5s  # noqa: E402


class MLP(nn.Module):
    """models.write_mlp's network (models.MLP_DIMS, not imported here to keep onnx out of the PyTorch
    runner's memory; build() rejects weights of other shapes): fc0, Relu, fc1, Relu, fc2."""

    def __init__(self):
        super().__init__()
        self.fc0 = nn.Linear(784, 256)
        self.fc1 = nn.Linear(256, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(torch.relu(self.fc0(x)))))


BUILDERS = {
    "resnet50": lambda: torchvision.models.resnet50(weights=None),
    "mobilenet_v2": lambda: torchvision.models.mobilenet_v2(weights=None),
    "yolov5s": yolov5s.YOLOv5s,
    "bert_base": lambda: bert.Bert(bert.BertConfig()),
    "mlp": MLP,
}


def build(name: str, weights_npz: str) -> tuple[nn.Module, list[str]]:
    """The eval-mode module for model `name` with the weights in `weights_npz` copied in, and the
    state-dict entries the file did not have (they keep the builder's values: BatchNorm's
    num_batches_tracked, which inference does not read, would be the only one). Names in the file
    that are no state-dict entry are skipped; the comparison's output check shows whether the
    result computes what the ONNX file does.

    Weights are copied one tensor at a time so that the process holds the model once, not twice."""
    model = BUILDERS[name]().eval()
    state = model.state_dict(keep_vars=True)
    missing = set(state)
    with np.load(weights_npz) as weights, torch.no_grad():
        for key in weights.files:
            if key not in state:
                continue
            array = weights[key]
            if tuple(array.shape) != tuple(state[key].shape):
                raise ValueError(
                    f"{weights_npz}: weight '{key}' has shape {array.shape}, the PyTorch {name} module "
                    f"expects {tuple(state[key].shape)}"
                )
            state[key].copy_(torch.from_numpy(array))
            missing.discard(key)
    return model, sorted(missing)
