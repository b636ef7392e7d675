"""Trains the Gluon MLP test's network in numpy from the files test_gluon_reference.cc writes and
prints the loss of every step as JSON: the forward pass, softmax cross entropy and its gradients
written out in float64, with MXNet's Adam.

The directory holds the initial weights (w0.npy, b0.npy, ... as Gluon's Dense: (units, in)),
the data (x.npy float32, y.npy int64), the sample order of every step (order.npy, (steps, batch))
and the Adam settings (adam.json).

usage: gluon_mlp_numpy.py DIR
"""

import json
import math
import sys

import numpy as np


def main() -> None:
    d = sys.argv[1]
    settings = json.load(open(f"{d}/adam.json"))
    layers = settings["layers"]
    params = [np.load(f"{d}/w{i}.npy").astype(np.float64) for i in range(layers)] + \
             [np.load(f"{d}/b{i}.npy").astype(np.float64) for i in range(layers)]
    x = np.load(f"{d}/x.npy").astype(np.float64)
    y = np.load(f"{d}/y.npy")
    order = np.load(f"{d}/order.npy")
    lr, beta1, beta2, eps = settings["lr"], settings["beta1"], settings["beta2"], settings["epsilon"]
    mean = [np.zeros_like(p) for p in params]
    var = [np.zeros_like(p) for p in params]
    losses = []
    for t, idx in enumerate(order, start=1):
        weights, biases = params[:layers], params[layers:]
        # Forward, keeping each layer's input and pre-activation.
        inputs, pre = [], []
        h = x[idx]
        for i, (w, b) in enumerate(zip(weights, biases)):
            inputs.append(h)
            z = h @ w.T + b
            pre.append(z)
            h = np.maximum(z, 0) if i + 1 < layers else z
        shifted = h - h.max(axis=1, keepdims=True)
        log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
        labels = y[idx]
        per_sample = -log_probs[np.arange(len(idx)), labels]
        losses.append(float(per_sample.mean()))
        # Backward of the per-sample losses' sum (Gluon's loss.backward()), then Trainer.step(batch)
        # scales the gradients by 1 / batch.
        grad = np.exp(log_probs)
        grad[np.arange(len(idx)), labels] -= 1
        grad_w, grad_b = [None] * layers, [None] * layers
        for i in reversed(range(layers)):
            if i + 1 < layers:
                grad = grad * (pre[i] > 0)
            grad_w[i] = grad.T @ inputs[i]
            grad_b[i] = grad.sum(axis=0)
            grad = grad @ weights[i]
        grads = [g / len(idx) for g in grad_w + grad_b]
        # MXNet's Adam: epsilon outside the square root, the bias correction folded into the rate.
        lr_t = lr * math.sqrt(1 - beta2**t) / (1 - beta1**t)
        for p, g, m, v in zip(params, grads, mean, var):
            m *= beta1
            m += (1 - beta1) * g
            v *= beta2
            v += (1 - beta2) * g * g
            p -= lr_t * m / (np.sqrt(v) + eps)
    print(json.dumps(losses))


if __name__ == "__main__":
    main()
