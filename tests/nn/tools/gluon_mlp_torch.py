"""Trains the Gluon MLP test's network in PyTorch from the files test_gluon_torch.cc writes and
prints the loss of every step as JSON.

The directory holds the initial weights (w0.npy, b0.npy, ... as Gluon's Dense: (units, in)),
the data (x.npy float32, y.npy int64), the sample order of every step (order.npy, (steps, batch))
and the Adam settings (adam.json). The update is MXNet's Adam, written out here, because
torch.optim.Adam puts epsilon elsewhere (see include/kiln/nn/optimizer.hpp); the forward pass,
the loss and the gradients are PyTorch's.

usage: gluon_mlp_torch.py DIR
"""

import json
import math
import sys

import numpy as np
import torch


def main() -> None:
    d = sys.argv[1]
    torch.manual_seed(0)
    layers = json.load(open(f"{d}/adam.json"))
    weights = [torch.tensor(np.load(f"{d}/w{i}.npy"), requires_grad=True) for i in range(layers["layers"])]
    biases = [torch.tensor(np.load(f"{d}/b{i}.npy"), requires_grad=True) for i in range(layers["layers"])]
    x = torch.tensor(np.load(f"{d}/x.npy"))
    y = torch.tensor(np.load(f"{d}/y.npy"))
    order = np.load(f"{d}/order.npy")
    lr, beta1, beta2, eps = layers["lr"], layers["beta1"], layers["beta2"], layers["epsilon"]
    params = weights + biases
    mean = [torch.zeros_like(p) for p in params]
    var = [torch.zeros_like(p) for p in params]
    losses = []
    for t, idx in enumerate(order, start=1):
        h = x[torch.tensor(idx)]
        for i, (w, b) in enumerate(zip(weights, biases)):
            h = h @ w.T + b
            if i + 1 < len(weights):
                h = torch.relu(h)
        per_sample = torch.nn.functional.cross_entropy(h, y[torch.tensor(idx)], reduction="none")
        for p in params:
            p.grad = None
        # Gluon: loss.backward() of the per-sample losses, then Trainer.step(batch) scales by 1 / batch.
        per_sample.sum().backward()
        losses.append(float(per_sample.detach().mean()))
        with torch.no_grad():
            lr_t = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
            for p, m, v in zip(params, mean, var):
                g = p.grad / len(idx)
                m.mul_(beta1).add_((1 - beta1) * g)
                v.mul_(beta2).add_((1 - beta2) * g * g)
                p.sub_(lr_t * m / (v.sqrt() + eps))
    print(json.dumps(losses))


if __name__ == "__main__":
    main()
