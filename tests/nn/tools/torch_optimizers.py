"""Five steps of PyTorch's optimizers on fixed weights and gradients, printed as JSON for
tests/nn/test_optimizer_references.cc, which runs Kiln's optimizer of the same settings on the same
values and compares the weights after every step.

Each case pairs a Kiln optimizer and options with the torch.optim settings that compute the same
update: constant learning rate (MXNet's lr-scaled momentum then equals PyTorch's), no gradient
clipping, epsilon 0 where the two place it differently (inside or outside the square root), and
no weight decay for AdaGrad (MXNet keeps it out of the history, PyTorch does not), and epsilon
1e-12 for Adam and AdamW (MXNet's bias correction scales epsilon by 1 / sqrt(1 - beta2^t) next to
PyTorch's; at 1e-12 that difference is far below the test's tolerance).

usage: torch_optimizers.py   (JSON on stdout)
"""

import json
import sys

import numpy as np
import torch

STEPS = 5
SHAPE = (3, 4)

CASES = [
    ("sgd_momentum", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01)),
    ("nesterov", "nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01},
     lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)),
    ("adam", "adam", {"learning_rate": 0.01, "wd": 0.01, "epsilon": 1e-12},
     lambda p: torch.optim.Adam(p, lr=0.01, weight_decay=0.01, eps=1e-12)),
    ("adamw", "adamw", {"learning_rate": 0.01, "wd": 0.1, "epsilon": 1e-12},
     lambda p: torch.optim.AdamW(p, lr=0.01, weight_decay=0.1, eps=1e-12)),
    ("rmsprop", "rmsprop", {"learning_rate": 0.01, "gamma1": 0.9, "epsilon": 0.0, "wd": 0.01},
     lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, eps=0.0, weight_decay=0.01)),
    ("rmsprop_centered", "rmsprop",
     {"learning_rate": 0.01, "gamma1": 0.9, "gamma2": 0.8, "epsilon": 0.0, "centered": True, "wd": 0.01},
     lambda p: torch.optim.RMSprop(p, lr=0.01, alpha=0.9, eps=0.0, momentum=0.8, centered=True,
                                   weight_decay=0.01)),
    ("adagrad", "adagrad", {"learning_rate": 0.1, "epsilon": 0.0},
     lambda p: torch.optim.Adagrad(p, lr=0.1, eps=0.0)),
]


def run(make_optimizer, w0, grads):
    weight = torch.nn.Parameter(torch.tensor(w0, dtype=torch.float64))
    optimizer = make_optimizer([weight])
    trajectory = []
    for g in grads:
        optimizer.zero_grad()
        weight.grad = torch.tensor(g, dtype=torch.float64)
        optimizer.step()
        trajectory.append(weight.detach().numpy().ravel().tolist())
    return trajectory


def main():
    rng = np.random.default_rng(7)
    w0 = rng.uniform(-1, 1, SHAPE)
    grads = [rng.uniform(-1, 1, SHAPE) for _ in range(STEPS)]
    cases = []
    for name, optimizer, options, make_optimizer in CASES:
        cases.append({"name": name, "optimizer": optimizer, "options": options, "shape": list(SHAPE),
                      "w0": w0.ravel().tolist(), "grads": [g.ravel().tolist() for g in grads],
                      "expected": run(make_optimizer, w0, grads)})
    json.dump({"reference": "torch " + torch.__version__, "cases": cases}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
