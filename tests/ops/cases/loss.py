"""numpy cases for the loss family: SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss.

Covers what the ONNX node tests miss: every float dtype and both label dtypes, rank-2 to rank-5
scores, sample counts that cross the kernel's blocks of samples, empty batches, classes and
spatial axes, ignore_index inside, below and above the class range, every sample ignored (a
mean of 0 / 0), weights with and without ignore_index, large and far-apart logits (log-softmax
must not overflow), and reductions big enough to split across threads.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261207)
BF16 = np.dtype(ml_dtypes.bfloat16)

FLOATS = ["float32", "float64", "float16", "bfloat16"]
# (rtol, atol) per dtype: the 16-bit floats round the inputs and each output element.
TOL = {"float32": (1e-5, 1e-5), "float64": (1e-10, 1e-10), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def log_softmax(x):
    """Along axis 1, in float64."""
    x = x.astype(np.float64)
    shifted = x - x.max(axis=1, keepdims=True, initial=-np.inf)
    with np.errstate(divide="ignore"):
        return shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))


def nll(log_prob, labels, weights=None, reduction="mean", ignore_index=None):
    """The loss from float64 log-probabilities (N, C, ...) and labels (N, ...), in float64."""
    ignored = np.zeros(labels.shape, bool) if ignore_index is None else labels == ignore_index
    cls = np.where(ignored, 0, labels).astype(np.int64)
    if log_prob.shape[1] == 0:  # no classes: every sample is ignored
        picked, w = np.zeros(labels.shape), np.zeros(labels.shape)
    else:
        picked = np.take_along_axis(log_prob, np.expand_dims(cls, 1), axis=1).squeeze(1)
        w = np.ones(labels.shape) if weights is None else weights.astype(np.float64)[cls]
    w = np.where(ignored, 0.0, w)
    loss = -picked * w
    if reduction == "none":
        return loss
    if reduction == "sum":
        return np.array(loss.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.array(loss.sum() / w.sum())


def problem(shape, dtype, label_dtype="int64", low=-3.0, high=3.0, weighted=False):
    """scores (N, C, ...), labels (N, ...) in [0, C), weights (C) or None."""
    x = RNG.uniform(low, high, size=shape).astype(np_dtype(dtype))
    label_shape = (shape[0],) + tuple(shape[2:])
    labels = RNG.integers(0, max(shape[1], 1), size=label_shape).astype(label_dtype)
    weights = RNG.uniform(0.2, 2.0, size=(shape[1],)).astype(np_dtype(dtype)) if weighted else None
    return x, labels, weights


def write_pair(root, name, x, labels, weights=None, reduction="mean", ignore_index=None, tol=None):
    """Writes one case of each op (SCE with and without log_prob) for the same problem."""
    dtype = x.dtype
    rtol, atol = tol or TOL[str(dtype)]
    attrs = {"reduction": reduction}
    if ignore_index is not None:
        attrs["ignore_index"] = ignore_index
    inputs = [x, labels] + ([weights] if weights is not None else [])
    lp = log_softmax(x)
    sce = nll(lp, labels, weights, reduction, ignore_index).astype(dtype)
    write_case(root, f"sce_{name}", "SoftmaxCrossEntropyLoss", inputs, [sce], attrs, rtol, atol)
    write_case(root, f"sce_{name}_log_prob", "SoftmaxCrossEntropyLoss", inputs, [sce, lp.astype(dtype)], attrs,
               rtol, atol, num_outputs=2)
    # NLL gets log-probabilities as its input, as it would after a LogSoftmax.
    lp_in = lp.astype(dtype)
    loss = nll(lp_in.astype(np.float64), labels, weights, reduction, ignore_index).astype(dtype)
    write_case(root, f"nll_{name}", "NegativeLogLikelihoodLoss", [lp_in] + inputs[1:], [loss], attrs, rtol, atol)


def write(root):
    # Every float dtype, both label dtypes, all reductions, weighted or not.
    for dtype in FLOATS:
        for label_dtype in ["int32", "int64"]:
            for reduction in ["none", "sum", "mean"]:
                for weighted in [False, True]:
                    x, labels, weights = problem((4, 7, 3), dtype, label_dtype, weighted=weighted)
                    w = "w" if weighted else "nw"
                    write_pair(root, f"{dtype}_{label_dtype}_{reduction}_{w}", x, labels, weights, reduction)

    # Ranks 2 to 5 and odd sizes; a sample axis crossing the kernel's 256-sample blocks.
    for k, shape in enumerate([(5, 3), (1, 1), (2, 4, 5, 3), (2, 3, 2, 3, 2), (3, 5, 300), (2, 6, 17, 19)]):
        for reduction in ["none", "mean"]:
            x, labels, weights = problem(shape, "float32", weighted=k % 2 == 1)
            write_pair(root, f"shape{k}_{reduction}", x, labels, weights, reduction)

    # ignore_index: in range, negative (below the class range), above it; with and without weights.
    for ii in [0, 2, -1, -100, 9]:
        for weighted in [False, True]:
            x, labels, weights = problem((6, 4, 5), "float32", weighted=weighted)
            flat = labels.reshape(-1)
            flat[RNG.random(flat.size) < 0.3] = ii  # ignored samples carry labels outside [0, C) too
            w = "w" if weighted else "nw"
            for reduction in ["none", "sum", "mean"]:
                write_pair(root, f"ii{ii}_{w}_{reduction}".replace("-", "m"), x, labels, weights, reduction, ii)

    # Every sample ignored: no loss, and the mean is 0 / 0.
    x, labels, weights = problem((3, 4, 2), "float32", weighted=True)
    labels[:] = -1
    for reduction in ["none", "sum", "mean"]:
        write_pair(root, f"all_ignored_{reduction}", x, labels, weights, reduction, -1)
        write_pair(root, f"all_ignored_nw_{reduction}", x, labels, None, reduction, -1)

    # Empty batch, empty spatial axis, and no classes with every sample ignored.
    for k, shape in enumerate([(0, 4), (0, 3, 5), (2, 3, 0), (3, 0)]):
        for reduction in ["none", "sum", "mean"]:
            x, labels, weights = problem(shape, "float32", weighted=True)
            ii = -1 if shape[1] == 0 else None
            if ii is not None:
                labels[:] = ii
            write_pair(root, f"empty{k}_{reduction}", x, labels, weights, reduction, ii)

    # Large and far-apart logits: exp would overflow without subtracting the maximum, and the
    # log-probabilities of the unlikely classes reach -1e4.
    for dtype in ["float32", "float64"]:
        x, labels, _ = problem((4, 6, 2), dtype, low=-1e4, high=1e4)
        write_pair(root, f"large_logits_{dtype}", x, labels, None, "none", tol=(1e-6, 1e-3))
        x = np.full((2, 3), 1e30, dtype=dtype)
        x[:, 1] = -1e30
        labels = np.array([0, 1], dtype=np.int64)
        write_pair(root, f"huge_logits_{dtype}", x, labels, None, "none", tol=(1e-6, 1e-3))

    # Reductions over enough samples to split across threads; the sums run in double.
    x, labels, weights = problem((8, 10, 4099), "float32", weighted=True)
    for reduction in ["sum", "mean"]:
        write_pair(root, f"big_{reduction}", x, labels, weights, reduction, tol=(1e-5, 1e-4))
    x, labels, _ = problem((20000, 5), "float32", "int32")
    write_pair(root, "big_rows_mean", x, labels, None, "mean")
