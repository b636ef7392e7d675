"""Five steps of the optimizers of PyTorch's torch.optim, written out in float64 numpy from the
update rules its documentation gives, on fixed weights and gradients, printed as JSON for
tests/nn/test_optimizer_references.cc, which runs Kiln's optimizer of the same settings on the same
values and compares the weights after every step.

Each case pairs a Kiln optimizer and options with the torch.optim settings that compute the same
update: constant learning rate (MXNet's lr-scaled momentum then equals PyTorch's), no gradient
clipping, epsilon 0 where the two place it differently (inside or outside the square root), no
weight decay for AdaGrad (MXNet keeps it out of the history, PyTorch does not), and epsilon 1e-12
for Adam and AdamW (MXNet's bias correction scales epsilon by 1 / sqrt(1 - beta2^t) next to
PyTorch's; at 1e-12 that difference is far below the test's tolerance).

usage: reference_optimizers.py   (JSON on stdout)
"""

import json
import sys

import numpy as np

STEPS = 5
SHAPE = (3, 4)


def sgd(lr, momentum, weight_decay, nesterov=False):
    """torch.optim.SGD: g += wd w; b = m b + g (b = g at the first step); w -= lr (g + m b or b)."""
    state = {}

    def step(w, g):
        g = g + weight_decay * w
        b = g if "b" not in state else momentum * state["b"] + g
        state["b"] = b
        return w - lr * (g + momentum * b if nesterov else b)
    return step


def adam(lr, weight_decay, eps, decoupled=False, beta1=0.9, beta2=0.999):
    """torch.optim.Adam (L2: g += wd w) and AdamW (w *= 1 - lr wd): bias-corrected moments,
    w -= lr m_hat / (sqrt(v_hat) + eps)."""
    state = {"t": 0}

    def step(w, g):
        state["t"] += 1
        t = state["t"]
        if decoupled:
            w = w * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * w
        state["m"] = beta1 * state.get("m", 0) + (1 - beta1) * g
        state["v"] = beta2 * state.get("v", 0) + (1 - beta2) * g * g
        m_hat, v_hat = state["m"] / (1 - beta1**t), state["v"] / (1 - beta2**t)
        return w - lr * m_hat / (np.sqrt(v_hat) + eps)
    return step


def rmsprop(lr, alpha, eps, weight_decay, momentum=0.0, centered=False):
    """torch.optim.RMSprop: v = alpha v + (1 - alpha) g^2; centered subtracts the square of the mean
    gradient; with momentum b = momentum b + g / avg, w -= lr b; else w -= lr g / avg."""
    state = {}

    def step(w, g):
        g = g + weight_decay * w
        state["v"] = alpha * state.get("v", 0) + (1 - alpha) * g * g
        avg = state["v"]
        if centered:
            state["g"] = alpha * state.get("g", 0) + (1 - alpha) * g
            avg = avg - state["g"] ** 2
        avg = np.sqrt(avg) + eps
        if momentum > 0:
            state["b"] = momentum * state.get("b", 0) + g / avg
            return w - lr * state["b"]
        return w - lr * g / avg
    return step


def adagrad(lr, eps):
    """torch.optim.Adagrad (no decay): s += g^2; w -= lr g / (sqrt(s) + eps)."""
    state = {}

    def step(w, g):
        state["s"] = state.get("s", 0) + g * g
        return w - lr * g / (np.sqrt(state["s"]) + eps)
    return step


CASES = [
    ("sgd_momentum", "sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, lambda: sgd(0.1, 0.9, 0.01)),
    ("nesterov", "nag", {"learning_rate": 0.1, "momentum": 0.9, "wd": 0.01}, lambda: sgd(0.1, 0.9, 0.01, True)),
    ("adam", "adam", {"learning_rate": 0.01, "wd": 0.01, "epsilon": 1e-12}, lambda: adam(0.01, 0.01, 1e-12)),
    ("adamw", "adamw", {"learning_rate": 0.01, "wd": 0.1, "epsilon": 1e-12},
     lambda: adam(0.01, 0.1, 1e-12, decoupled=True)),
    ("rmsprop", "rmsprop", {"learning_rate": 0.01, "gamma1": 0.9, "epsilon": 0.0, "wd": 0.01},
     lambda: rmsprop(0.01, 0.9, 0.0, 0.01)),
    ("rmsprop_centered", "rmsprop",
     {"learning_rate": 0.01, "gamma1": 0.9, "gamma2": 0.8, "epsilon": 0.0, "centered": True, "wd": 0.01},
     lambda: rmsprop(0.01, 0.9, 0.0, 0.01, momentum=0.8, centered=True)),
    ("adagrad", "adagrad", {"learning_rate": 0.1, "epsilon": 0.0}, lambda: adagrad(0.1, 0.0)),
]


def main():
    rng = np.random.default_rng(7)
    w0 = rng.uniform(-1, 1, SHAPE)
    grads = [rng.uniform(-1, 1, SHAPE) for _ in range(STEPS)]
    cases = []
    for name, optimizer, options, make_step in CASES:
        step, w, trajectory = make_step(), w0.copy(), []
        for g in grads:
            w = step(w, g)
            trajectory.append(w.ravel().tolist())
        cases.append({"name": name, "optimizer": optimizer, "options": options, "shape": list(SHAPE),
                      "w0": w0.ravel().tolist(), "grads": [g.ravel().tolist() for g in grads],
                      "expected": trajectory})
    json.dump({"reference": "torch.optim's update rules in numpy", "cases": cases}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
