"""numpy cases for Kiln's gradient ops (ReduceSumLike, SliceGrad, GatherGrad, ConvGradData,
ConvGradWeight, MaxPoolGrad, AveragePoolGrad, NegativeLogLikelihoodLossGrad): each is the adjoint
of its forward op, computed here by scattering dY with plain loops (np.add.at) over the
positions the forward op reads, independently of Kiln's kernels."""

import itertools

import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20260612)


def sample(shape, dtype=np.float64):
    return RNG.uniform(-2, 2, size=shape).astype(dtype)


def i64(values):
    return np.asarray(values, dtype=np.int64)


def reduce_sum_like(root):
    for dtype in (np.float32, np.float64):
        x = sample((2, 3, 4), dtype)
        name = np.dtype(dtype).name
        write_case(root, f"reduce_sum_like_{name}", "ReduceSumLike", [x, np.zeros((3, 1), dtype)],
                   [x.sum(axis=(0, 2)).reshape(3, 1).astype(dtype)])
        write_case(root, f"reduce_sum_like_{name}_to_scalar", "ReduceSumLike", [x, np.zeros((), dtype)],
                   [np.asarray(x.sum(), dtype)])
        write_case(root, f"reduce_sum_like_{name}_same", "ReduceSumLike", [x, np.zeros((2, 3, 4), dtype)],
                   [x])


def slice_grad(root):
    like = np.zeros((4, 5))
    dy = sample((2, 3))
    dx = np.zeros((4, 5))
    dx[1:3, 0:5:2] = dy
    write_case(root, "slice_grad_steps", "SliceGrad",
               [dy, like, i64([1, 0]), i64([3, 5]), i64([0, 1]), i64([1, 2])], [dx])
    dy = sample((4, 3))
    dx = np.zeros((4, 5))
    dx[:, 4::-2] = dy
    write_case(root, "slice_grad_negative_step", "SliceGrad",
               [dy, like, i64([-1]), i64([-100]), i64([1]), i64([-2])], [dx])


def gather_grad(root):
    indices = i64([[1, 3], [1, -4]])
    dy = sample((2, 2, 3))
    dx = np.zeros((4, 3))
    np.add.at(dx, indices % 4, dy)  # repeated indices add up
    write_case(root, "gather_grad_axis0_repeated", "GatherGrad", [dy, indices, np.zeros((4, 3))], [dx],
               attrs={"axis": 0})
    dy = sample((2, 3, 2))
    dx = np.zeros((2, 3, 2))
    for j, k in enumerate([2, 0, 2]):
        dx[:, k, :] += dy[:, j, :]
    write_case(root, "gather_grad_axis1", "GatherGrad", [dy, i64([2, 0, 2]), np.zeros((2, 3, 2))], [dx],
               attrs={"axis": 1})


def conv_products(x_shape, w_shape, strides, dilations, pads, group):
    """Yields (x index, y index, w index) for every product a 2-D Conv sums."""
    n, c, h, w = x_shape
    m, cg, kh, kw = w_shape
    oh = (h + pads[0] + pads[2] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    for b, f, ch, i, j, ti, tj in itertools.product(range(n), range(m), range(cg), range(oh), range(ow),
                                                   range(kh), range(kw)):
        y = i * strides[0] - pads[0] + ti * dilations[0]
        x = j * strides[1] - pads[1] + tj * dilations[1]
        if 0 <= y < h and 0 <= x < w:
            g = f // (m // group)
            yield (b, g * cg + ch, y, x), (b, f, i, j), (f, ch, ti, tj)


def conv_grads(root):
    x_shape, w_shape = (1, 4, 6, 5), (6, 2, 2, 3)
    attrs = {"group": 2, "strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 0, 2]}
    x, w, dy = sample(x_shape), sample(w_shape), sample((1, 6, 3, 3))
    dx, dw = np.zeros(x_shape), np.zeros(w_shape)
    for xi, yi, wi in conv_products(x_shape, w_shape, attrs["strides"], attrs["dilations"], attrs["pads"], 2):
        dx[xi] += dy[yi] * w[wi]
        dw[wi] += dy[yi] * x[xi]
    write_case(root, "conv_grad_data_groups", "ConvGradData", [dy, w, np.zeros(x_shape)], [dx], attrs=attrs)
    write_case(root, "conv_grad_weight_groups", "ConvGradWeight", [x, dy, np.zeros(w_shape)], [dw],
               attrs=attrs)


def pool_windows(shape, kernel, strides, pads):
    """Yields (output index, [input (row, col) inside the image], window size with padding)."""
    h, w = shape
    oh = (h + pads[0] + pads[2] - kernel[0]) // strides[0] + 1
    ow = (w + pads[1] + pads[3] - kernel[1]) // strides[1] + 1
    for i, j in itertools.product(range(oh), range(ow)):
        taps = []
        for ti, tj in itertools.product(range(kernel[0]), range(kernel[1])):
            y, x = i * strides[0] - pads[0] + ti, j * strides[1] - pads[1] + tj
            if 0 <= y < h and 0 <= x < w:
                taps.append((y, x))
        yield (i, j), taps, kernel[0] * kernel[1]


def pool_grads(root):
    kernel, strides, pads = [3, 2], [2, 2], [1, 1, 1, 0]
    x = sample((1, 2, 6, 5))
    outs = list(pool_windows((6, 5), kernel, strides, pads))
    oh, ow = max(o[0] for o, _, _ in outs) + 1, max(o[1] for o, _, _ in outs) + 1
    dy = sample((1, 2, oh, ow))
    dx_max, dx_avg, dx_avg_pad = np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)
    for c in range(2):
        for (i, j), taps, padded in outs:
            best = max(taps, key=lambda t: x[0, c][t])
            dx_max[0, c][best] += dy[0, c, i, j]
            for t in taps:
                dx_avg[0, c][t] += dy[0, c, i, j] / len(taps)
                dx_avg_pad[0, c][t] += dy[0, c, i, j] / padded
    attrs = {"kernel_shape": kernel, "strides": strides, "pads": pads}
    write_case(root, "max_pool_grad_padded", "MaxPoolGrad", [dy, x], [dx_max], attrs=attrs)
    write_case(root, "average_pool_grad_padded", "AveragePoolGrad", [dy, x], [dx_avg], attrs=attrs)
    write_case(root, "average_pool_grad_count_include_pad", "AveragePoolGrad", [dy, x], [dx_avg_pad],
               attrs={**attrs, "count_include_pad": 1})


def nll_grad(root):
    target = i64([[0, 2, 1], [2, 1, 0]])
    weight = RNG.uniform(0.5, 2, size=3)
    like = np.zeros((2, 3, 3))
    for reduction in ("none", "sum", "mean"):
        dloss = sample((2, 3)) if reduction == "none" else sample(())
        counted = target != 1  # ignore_index 1
        total = weight[target][counted].sum()
        dx = np.zeros((2, 3, 3))
        for n, j in itertools.product(range(2), range(3)):
            if not counted[n, j]:
                continue
            share = dloss[n, j] if reduction == "none" else dloss / (total if reduction == "mean" else 1)
            dx[n, target[n, j], j] = -weight[target[n, j]] * share
        write_case(root, f"nll_grad_{reduction}", "NegativeLogLikelihoodLossGrad",
                   [dloss, like, target, weight], [dx], attrs={"reduction": reduction, "ignore_index": 1})


def write(root):
    reduce_sum_like(root)
    slice_grad(root)
    gather_grad(root)
    conv_grads(root)
    pool_grads(root)
    nll_grad(root)
