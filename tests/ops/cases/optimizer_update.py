"""numpy cases for the optimizer update ops (SGDUpdate, SGDMomUpdate, NAGMomUpdate, AdamUpdate,
AdamWUpdate, RMSPropUpdate, RMSPropAlexUpdate, AdaGradUpdate): one step in float64 from MXNet
1.9.1's formulas (checked against mx.nd.*_update), for every float dtype, with and without
gradient clipping, and with a float32 master weight for float16 / bfloat16 weights."""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20260611)
BF16 = np.dtype(ml_dtypes.bfloat16)
F64 = np.float64


def sample(shape, low=-2, high=2):
    return RNG.uniform(low, high, size=shape)


def clip(x, bound):
    return np.clip(x, -bound, bound) if bound > 0 else x


def common(a):
    return a["lr"], a.get("wd", 0.0), a.get("rescale_grad", 1.0), a.get("clip_gradient", -1.0)


def sgd(w, g, states, a):
    lr, wd, rs, cg = common(a)
    return (1 - lr * wd) * w - lr * clip(rs * g, cg), []


def sgd_mom(w, g, states, a):
    lr, wd, rs, cg = common(a)
    mom = a.get("momentum", 0.0) * states[0] - lr * wd * w - lr * clip(rs * g, cg)
    return w + mom, [mom]


def nag_mom(w, g, states, a):
    lr, wd, rs, cg = common(a)
    mu = a.get("momentum", 0.0)
    d = clip(rs * g, cg) + wd * w
    mom = mu * states[0] - lr * d
    return w + mu * mom - lr * d, [mom]


def adam(w, g, states, a):
    lr, wd, rs, cg = common(a)
    b1, b2, eps = a.get("beta1", 0.9), a.get("beta2", 0.999), a.get("epsilon", 1e-8)
    d = clip(rs * g + wd * w, cg)
    mean = b1 * states[0] + (1 - b1) * d
    var = b2 * states[1] + (1 - b2) * d * d
    return w - lr * mean / (np.sqrt(var) + eps), [mean, var]


def adamw(w, g, states, a):
    lr, wd, rs, cg = common(a)
    b1, b2, eps, eta = a.get("beta1", 0.9), a.get("beta2", 0.999), a.get("epsilon", 1e-8), a["eta"]
    d = clip(rs * g, cg)
    mean = b1 * states[0] + (1 - b1) * d
    var = b2 * states[1] + (1 - b2) * d * d
    return w - eta * (lr * mean / (np.sqrt(var) + eps) + wd * w), [mean, var]


def rmsprop(w, g, states, a):
    lr, wd, rs, cg = common(a)
    gamma1, eps, cw = a.get("gamma1", 0.95), a.get("epsilon", 1e-8), a.get("clip_weights", -1.0)
    d = clip(rs * g + wd * w, cg)
    n = (1 - gamma1) * d * d + gamma1 * states[0]
    return clip(w - lr * d / np.sqrt(n + eps), cw), [n]


def rmspropalex(w, g, states, a):
    lr, wd, rs, cg = common(a)
    gamma1, gamma2 = a.get("gamma1", 0.95), a.get("gamma2", 0.9)
    eps, cw = a.get("epsilon", 1e-8), a.get("clip_weights", -1.0)
    d = clip(rs * g + wd * w, cg)
    n = (1 - gamma1) * d * d + gamma1 * states[0]
    gs = (1 - gamma1) * d + gamma1 * states[1]
    delta = gamma2 * states[2] - lr * d / np.sqrt(n - gs * gs + eps)
    return clip(w + delta, cw), [n, gs, delta]


def adagrad(w, g, states, a):
    lr, wd, rs, cg = common(a)
    eps = a.get("epsilon", 1e-7)
    d = clip(rs * g, cg)
    history = states[0] + d * d
    return w - lr * (d / np.sqrt(history + eps) + wd * w), [history]


# op, reference, state initial values (ranges), attributes without and with clipping
OPS = [
    ("SGDUpdate", sgd, [], {"lr": 0.1, "wd": 0.05}),
    ("SGDMomUpdate", sgd_mom, [(-0.5, 0.5)], {"lr": 0.1, "wd": 0.05, "momentum": 0.9}),
    ("NAGMomUpdate", nag_mom, [(-0.5, 0.5)], {"lr": 0.1, "wd": 0.05, "momentum": 0.9}),
    ("AdamUpdate", adam, [(-0.5, 0.5), (0.01, 1)], {"lr": 0.05, "wd": 0.05, "epsilon": 1e-3}),
    ("AdamWUpdate", adamw, [(-0.5, 0.5), (0.01, 1)], {"lr": 0.05, "wd": 0.05, "eta": 0.7, "beta1": 0.8}),
    ("RMSPropUpdate", rmsprop, [(0.01, 1)], {"lr": 0.05, "wd": 0.05, "gamma1": 0.9, "clip_weights": 1.5}),
    # The centered mean g stays small next to n so that n - g^2 > 0.
    ("RMSPropAlexUpdate", rmspropalex, [(0.5, 1), (-0.1, 0.1), (-0.2, 0.2)],
     {"lr": 0.05, "wd": 0.05, "gamma1": 0.9, "gamma2": 0.8, "epsilon": 1e-4}),
    ("AdaGradUpdate", adagrad, [(0.01, 1)], {"lr": 0.1, "wd": 0.05}),
]

TOLERANCES = {np.dtype(np.float32): (1e-5, 1e-6), np.dtype(np.float64): (1e-12, 1e-12),
              np.dtype(np.float16): (4e-3, 2e-3), BF16: (3e-2, 1e-2)}


def write_op(root, op, reference, state_ranges, attrs):
    shape = (3, 5)
    for clipped in [False, True]:
        a = dict(attrs, rescale_grad=0.7, clip_gradient=0.9) if clipped else attrs
        for dtype in [np.float32, np.float64, np.float16, BF16]:
            for master in ([False, True] if dtype in (np.float16, BF16) else [False]):
                w = sample(shape).astype(dtype)
                g = sample(shape).astype(dtype)
                state_dtype = np.float32 if master else dtype
                states = [sample(shape, lo, hi).astype(state_dtype) for lo, hi in state_ranges]
                # The master copy is near the 16-bit weight but not equal to it: the step must read it.
                w32 = (w.astype(F64) + sample(shape, 0.03, 0.06)).astype(np.float32) if master else None
                start = (w32 if master else w).astype(F64)
                new_w, new_states = reference(start, g.astype(F64), [s.astype(F64) for s in states], a)
                inputs = [w, g] + states + ([w32] if master else [])
                outputs = [new_w.astype(dtype)] + [s.astype(state_dtype) for s in new_states]
                if master:
                    outputs.append(new_w.astype(np.float32))
                # One tolerance per case: the weight's dtype's (with a master copy, the 16-bit
                # weight is the rounded result; the master copy's offset from it is larger).
                rtol, atol = TOLERANCES[np.dtype(dtype)]
                name = f"{op.lower()}_{np.dtype(dtype).name}" + ("_master" if master else "") + \
                    ("_clipped" if clipped else "")
                write_case(root, name, op, inputs, outputs, attrs=a, rtol=rtol, atol=atol,
                           num_outputs=len(outputs))


def write_defaults(root):
    """Only the required attributes: the defaults (MXNet's) decide the step."""
    w, g = sample((4,)), sample((4,))
    mean, var = sample((4,), -0.5, 0.5), sample((4,), 0.01, 1)
    new_w, (new_mean, new_var) = adam(w, g, [mean, var], {"lr": 0.01})
    write_case(root, "adamupdate_defaults", "AdamUpdate", [w, g, mean, var], [new_w, new_mean, new_var],
               attrs={"lr": 0.01}, rtol=1e-12, atol=1e-12)
    n = sample((4,), 0.01, 1)
    new_w, (new_n,) = rmsprop(w, g, [n], {"lr": 0.01})
    write_case(root, "rmspropupdate_defaults", "RMSPropUpdate", [w, g, n], [new_w, new_n],
               attrs={"lr": 0.01}, rtol=1e-12, atol=1e-12)


def write(root):
    for op, reference, state_ranges, attrs in OPS:
        write_op(root, op, reference, state_ranges, attrs)
    write_defaults(root)
