"""Six steps of MXNet 1.9.1's optimizers (mx.optimizer, the ones Gluon's Trainer runs) on fixed
weights and gradients, printed as JSON for tests/nn/test_optimizer_references.cc, which runs Kiln's
optimizer of the same name and options on the same values and compares the weights after every
step. The cases use rescale_grad, clip_gradient, weight decay, schedules (with warm-up),
clip_weights and a float16 weight with a float32 master copy: the parts where MXNet's semantics
differ from PyTorch's.

NAG runs without weight decay: MXNet 1.9.1's nag_mom_update, run in place, reads the updated
weight for the decay term of the momentum (Kiln uses the old weight, as the formula says).

usage: mxnet_optimizers.py   (JSON on stdout)
"""

import json
import os
import sys
import warnings

os.environ.setdefault("MXNET_STORAGE_FALLBACK_LOG_VERBOSE", "0")
warnings.filterwarnings("ignore")

import mxnet as mx  # noqa: E402
import numpy as np  # noqa: E402

STEPS = 6
SHAPE = (3, 4)
CLIP = {"rescale_grad": 0.5, "clip_gradient": 0.3}

# name, optimizer, options, schedule (None or its description), dtype, multi_precision
CASES = [
    ("sgd_momentum_factor_schedule", "sgd", dict(CLIP, momentum=0.9, wd=0.01),
     {"type": "factor", "step": 2, "factor": 0.5, "base_lr": 0.1}, "float32"),
    ("nag", "nag", dict(CLIP, learning_rate=0.1, momentum=0.8), None, "float32"),
    ("adam_multifactor_warmup", "adam", dict(CLIP, wd=0.01, beta1=0.8, beta2=0.99),
     {"type": "multifactor", "steps": [4], "factor": 0.1, "base_lr": 0.01, "warmup_steps": 2,
      "warmup_begin_lr": 0.002}, "float32"),
    ("rmsprop_clip_weights", "rmsprop", dict(CLIP, learning_rate=0.01, wd=0.01, gamma1=0.8, clip_weights=0.6),
     None, "float32"),
    ("rmsprop_centered", "rmsprop",
     dict(CLIP, learning_rate=0.01, wd=0.01, gamma1=0.8, gamma2=0.7, epsilon=1e-4, centered=True), None,
     "float32"),
    ("adagrad_cosine_schedule", "adagrad", dict(CLIP, wd=0.05, eps=1e-6),
     {"type": "cosine", "max_update": 5, "base_lr": 0.1, "final_lr": 0.01}, "float32"),
    ("sgd_multi_precision_float16", "sgd", dict(CLIP, learning_rate=0.05, momentum=0.9, wd=0.01,
                                                multi_precision=True), None, "float16"),
]


def make_schedule(desc):
    if desc is None:
        return None
    warmup = {"warmup_steps": desc.get("warmup_steps", 0), "warmup_begin_lr": desc.get("warmup_begin_lr", 0)}
    if desc["type"] == "factor":
        return mx.lr_scheduler.FactorScheduler(desc["step"], desc["factor"], base_lr=desc["base_lr"], **warmup)
    if desc["type"] == "multifactor":
        return mx.lr_scheduler.MultiFactorScheduler(desc["steps"], desc["factor"], base_lr=desc["base_lr"],
                                                    **warmup)
    return mx.lr_scheduler.CosineScheduler(desc["max_update"], base_lr=desc["base_lr"],
                                           final_lr=desc["final_lr"], **warmup)


def run(optimizer, options, schedule, dtype, w0, grads):
    if schedule is not None:
        # MXNet overwrites the schedule's base_lr with the optimizer's learning_rate (Adam's
        # default 0.001 included); Kiln takes the schedule's. Passing the same value agrees.
        options = dict(options, learning_rate=schedule["base_lr"])
    opt = mx.optimizer.create(optimizer, lr_scheduler=make_schedule(schedule), **options)
    weight = mx.nd.array(w0, dtype=dtype)
    state = opt.create_state_multi_precision(0, weight)
    trajectory = []
    for g in grads:
        opt.update_multi_precision(0, weight, mx.nd.array(g, dtype=dtype), state)
        trajectory.append(weight.asnumpy().astype(np.float64).ravel().tolist())
    return trajectory


def main():
    out, sys.stdout = sys.stdout, sys.stderr  # MXNet prints notes to stdout; the JSON goes alone
    rng = np.random.default_rng(11)
    w0 = rng.uniform(-1, 1, SHAPE)
    grads = [rng.uniform(-1, 1, SHAPE) for _ in range(STEPS)]
    cases = []
    for name, optimizer, options, schedule, dtype in CASES:
        # Both sides start from the same values: the ones the dtype holds.
        w = w0.astype(dtype).astype(np.float64)
        gs = [g.astype(dtype).astype(np.float64) for g in grads]
        cases.append({"name": name, "optimizer": optimizer, "options": options, "schedule": schedule,
                      "dtype": dtype, "shape": list(SHAPE), "w0": w.ravel().tolist(),
                      "grads": [g.ravel().tolist() for g in gs],
                      "expected": run(optimizer, options, schedule, dtype, w, gs)})
    json.dump({"reference": "mxnet " + mx.__version__, "cases": cases}, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
