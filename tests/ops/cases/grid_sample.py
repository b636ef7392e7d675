"""numpy cases for GridSample and AffineGrid.

GridSample: every mode x padding_mode x align_corners combination in 2-D, 1-D, 3-D and 4-D spatial
inputs, grids reaching outside [-1, 1] (far outside, infinite and NaN too), nearest ties (round half
to even), one-pixel axes, every X dtype (integers round half to even and saturate, bool is non-zero),
float64 and 16-bit grids, empty tensors. AffineGrid: 2-D and 3-D, both align_corners, every float
dtype, one-point axes (which sit at 0), empty batches and lattices.

The GridSample model is vectorized numpy: per spatial axis, each output position's source
coordinate (computed in the grid's precision, float32 for 16-bit grids, like PyTorch and the ONNX
reference), its taps and weights; then the product over axes of the taps, summed in float64.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261216)
BF16 = np.dtype(ml_dtypes.bfloat16)
MODES = ["nearest", "linear", "cubic"]
PADDINGS = ["zeros", "border", "reflection"]


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, low=-4.0, high=4.0):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.issubdtype(np_dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -100), min(info.max, 100) + 1, size=shape).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(np_dtype(dtype))


def reflect(x, lo, hi):
    """Reflects x into [lo, hi] by the near border, repeatedly."""
    rng = hi - lo
    if rng <= 0:
        return np.full_like(x, lo)
    below, above = x < lo, x > hi
    dx = np.where(below, lo - x, np.where(above, x - hi, 0.0))
    flips = np.floor(dx / rng)
    r = dx - flips * rng
    even = np.mod(flips, 2) == 0
    out = np.where(below, np.where(even, lo + r, hi - r), x)
    return np.where(above, np.where(even, hi - r, lo + r), out)


def cubic(t):
    a = -0.75
    near = lambda d: ((a + 2) * d - (a + 3)) * d * d + 1  # noqa: E731
    far = lambda d: ((a * d - 5 * a) * d + 8 * a) * d - 4 * a  # noqa: E731
    return np.stack([far(t + 1), near(t), near(1 - t), far(2 - t)], axis=-1)


def axis_taps(n, length, mode, padding, align):
    """Taps (index, weight, valid) of normalized coordinates n (any shape) along one axis."""
    ct = np.float64 if n.dtype == np.float64 else np.float32
    n = n.astype(ct)
    one, two, size = ct(1), ct(2), ct(length)
    with np.errstate(invalid="ignore", over="ignore"):
        x = (n + one) / two * (size - one) if align else ((n + one) * size - one) / two
        if mode == "nearest":
            x = np.rint(x)
        c = x.astype(np.float64)
        lo, hi = (0.0, length - 1.0) if align else (-0.5, length - 0.5)
        outside = (c < lo) | (c > hi)
        if padding == "border":
            c = np.where(outside, np.clip(c, 0, length - 1), c)
        elif padding == "reflection":
            c = np.where(outside, reflect(c, lo, hi), c)
        usable = np.abs(c) <= length + 4  # NaN and far-out coordinates sample zeros
        c = np.where(usable, c, 0.0)
        if mode == "nearest":
            index, weight = np.rint(c)[..., None], np.ones(c.shape + (1,))
        else:
            first = np.floor(c)
            t = c - first
            if mode == "linear":
                index, weight = first[..., None] + np.arange(2), np.stack([1 - t, t], axis=-1)
            else:
                index, weight = first[..., None] + np.arange(-1, 3), cubic(t)
    if padding == "zeros":
        valid = (index >= 0) & (index < length)
    elif padding == "border":
        index, valid = np.clip(index, 0, length - 1), np.ones(index.shape, dtype=bool)
    else:
        index = np.clip(np.rint(reflect(index, lo, hi)), 0, length - 1)
        valid = np.ones(index.shape, dtype=bool)
    valid &= usable[..., None]
    return index.astype(np.int64), weight, valid


def store(values, dtype):
    if dtype == np.bool_:
        return values != 0
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.rint(np.nan_to_num(values, nan=0.0)), info.min, info.max).astype(dtype)
    return values.astype(dtype)


def grid_sample(x, grid, mode="linear", padding="zeros", align=0):
    n, c = x.shape[:2]
    spatial = x.shape[2:]
    r = len(spatial)
    out_spatial = grid.shape[1:-1]
    p = int(np.prod(out_spatial))
    g = grid.reshape(n, p, r)
    flat = np.zeros((n, p, 1), dtype=np.int64)
    weight = np.ones((n, p, 1))
    valid = np.ones((n, p, 1), dtype=bool)
    strides = [int(np.prod(spatial[a + 1:])) for a in range(r)]
    for a in range(r):
        index, w, ok = axis_taps(g[..., r - 1 - a], spatial[a], mode, padding, align)
        flat = (flat[..., :, None] + index[..., None, :] * strides[a]).reshape(n, p, -1)
        weight = (weight[..., :, None] * w[..., None, :]).reshape(n, p, -1)
        valid = (valid[..., :, None] & ok[..., None, :]).reshape(n, p, -1)
    planes = x.reshape(n, c, -1)
    y = np.zeros((n, c, p), dtype=x.dtype)
    if planes.shape[2] == 0:  # an empty image samples zeros only
        return y.reshape((n, c) + tuple(out_spatial))
    for b in range(n):
        idx = np.where(valid[b], flat[b], 0)
        if mode == "nearest":
            y[b] = np.where(valid[b][None, :, 0], planes[b][:, idx[:, 0]], y[b])
        else:
            vals = planes[b][:, idx].astype(np.float64)
            y[b] = store(np.where(valid[b][None], vals * weight[b][None], 0.0).sum(axis=-1), x.dtype)
    return y.reshape((n, c) + tuple(out_spatial))


def grid_case(root, name, x, grid, mode="linear", padding="zeros", align=0, rtol=1e-5, atol=1e-5):
    y = grid_sample(x, grid, mode, padding, align)
    write_case(root, name, "GridSample", [x, grid], [y],
               attrs={"mode": mode, "padding_mode": padding, "align_corners": align}, rtol=rtol, atol=atol)


def write_grid_sample(root):
    x = sample((2, 3, 5, 6), "float32")
    grid = sample((2, 4, 7, 2), "float32", -1.3, 1.3)
    for mode in MODES:
        for padding in PADDINGS:
            for align in (0, 1):
                grid_case(root, f"grid_sample_2d_{mode}_{padding}_{align}", x, grid, mode, padding, align)
    # Far outside the image: many reflections, and the border.
    far = sample((1, 3, 4, 2), "float32", -7.0, 7.0)
    for mode in MODES:
        for padding in PADDINGS:
            grid_case(root, f"grid_sample_far_{mode}_{padding}", x[:1], far, mode, padding, 0)
    other_ranks = {1: ((7,), (5,)), 3: ((3, 4, 5), (2, 3, 2)), 4: ((2, 3, 2, 3), (2, 2, 1, 3))}
    for r, (in_spatial, out_spatial) in other_ranks.items():
        xr = sample((2, 2) + in_spatial, "float32")
        gr = sample((2,) + out_spatial + (r,), "float32", -1.2, 1.2)
        for mode in MODES:
            for padding in PADDINGS:
                grid_case(root, f"grid_sample_{r}d_{mode}_{padding}", xr, gr, mode, padding, 1 if r == 3 else 0)
    # Nearest ties: coordinates exactly halfway between pixels round to the even one.
    xt = np.arange(8, dtype=np.float32).reshape(1, 1, 1, 8)
    ties = np.array([-1.0, -0.75, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0], dtype=np.float32)
    gt = np.stack([ties, np.zeros_like(ties)], axis=-1).reshape(1, 1, 9, 2)
    for align in (0, 1):
        grid_case(root, f"grid_sample_nearest_ties_{align}", xt, gt, "nearest", "zeros", align)
    # One-pixel axes: with align_corners the reflection range is empty.
    x1 = sample((1, 2, 1, 1), "float32")
    g1 = sample((1, 2, 3, 2), "float32", -2.0, 2.0)
    for mode in MODES:
        for padding in PADDINGS:
            for align in (0, 1):
                grid_case(root, f"grid_sample_one_pixel_{mode}_{padding}_{align}", x1, g1, mode, padding, align)
    # Infinite and NaN positions: zeros outside, the edge for border, NaN samples zeros.
    gi = np.array([np.inf, 0.2, -np.inf, -0.3, 0.1, np.nan, np.nan, np.nan], dtype=np.float32).reshape(1, 1, 4, 2)
    for mode in MODES:
        grid_case(root, f"grid_sample_inf_nan_{mode}_zeros", x[:1], gi, mode, "zeros")
        grid_case(root, f"grid_sample_inf_{mode}_border", x[:1], gi[:, :, :2], mode, "border")
    for dtype in ["float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]:
        xd = sample((2, 2, 4, 5), dtype)
        tol = {"float16": 3e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)
        for mode in MODES:
            gd = sample((2, 3, 3, 2), "float64" if dtype == "float64" else "float32", -1.1, 1.1)
            grid_case(root, f"grid_sample_{dtype}_{mode}", xd, gd, mode, "border", 0, rtol=tol, atol=tol)
    for gdtype in ["float64", "float16", "bfloat16"]:
        gd = sample((2, 3, 4, 2), gdtype, -1.1, 1.1)
        for mode in MODES:
            grid_case(root, f"grid_sample_grid_{gdtype}_{mode}", x, gd, mode, "reflection", 1)
    for k, (xs, gs) in enumerate([((0, 2, 3, 3), (0, 2, 2, 2)), ((2, 0, 3, 3), (2, 2, 2, 2)),
                                  ((2, 2, 3, 3), (2, 0, 2, 2)), ((1, 2, 0, 3), (1, 2, 2, 2))]):
        xe = np.zeros(xs, dtype=np.float32)
        ge = sample(gs, "float32", -1, 1)
        out = np.zeros((xs[0], xs[1]) + gs[1:3], dtype=np.float32)
        write_case(root, f"grid_sample_empty_{k}", "GridSample", [xe, ge], [out])


def lattice(length, align):
    if align:
        return np.zeros(1) if length == 1 else np.linspace(-1.0, 1.0, length)
    return (2 * np.arange(length) + 1) / length - 1


def affine_grid(theta, size, align):
    spatial = size[2:]
    axes = [lattice(d, align) for d in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")  # z, y, x or y, x
    points = np.stack(list(mesh[::-1]) + [np.ones(tuple(spatial))], axis=-1)  # x, y, [z,] 1
    grid = np.einsum("...j,nkj->n...k", points, theta.astype(np.float64))
    return grid.astype(theta.dtype)


def write_affine_grid(root):
    for dtype in ["float32", "float64", "float16", "bfloat16"]:
        tol = {"float16": 3e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)
        for align in (0, 1):
            theta2 = sample((2, 2, 3), dtype, -1, 1)
            size2 = np.array([2, 3, 4, 5], dtype=np.int64)
            write_case(root, f"affine_grid_2d_{dtype}_{align}", "AffineGrid", [theta2, size2],
                       [affine_grid(theta2, size2, align)], attrs={"align_corners": align}, rtol=tol, atol=tol)
            theta3 = sample((2, 3, 4), dtype, -1, 1)
            size3 = np.array([2, 1, 3, 4, 2], dtype=np.int64)
            write_case(root, f"affine_grid_3d_{dtype}_{align}", "AffineGrid", [theta3, size3],
                       [affine_grid(theta3, size3, align)], attrs={"align_corners": align}, rtol=tol, atol=tol)
    for align in (0, 1):
        theta = sample((1, 3, 4), "float32", -1, 1)
        size = np.array([1, 2, 1, 3, 1], dtype=np.int64)
        write_case(root, f"affine_grid_one_point_axes_{align}", "AffineGrid", [theta, size],
                   [affine_grid(theta, size, align)], attrs={"align_corners": align})
    for k, (theta_shape, size) in enumerate([((0, 2, 3), [0, 1, 3, 3]), ((2, 2, 3), [2, 1, 0, 3]),
                                             ((1, 3, 4), [1, 1, 2, 0, 2])]):
        theta = sample(theta_shape, "float32")
        size = np.array(size, dtype=np.int64)
        write_case(root, f"affine_grid_empty_{k}", "AffineGrid", [theta, size], [affine_grid(theta, size, 0)])


def write(root):
    write_grid_sample(root)
    write_affine_grid(root)
