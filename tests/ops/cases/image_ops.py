"""numpy cases for Col2Im, CenterCropPad, RoiAlign and MaxRoiPool.

Col2Im: 1-D to 3-D images, strides, dilations, asymmetric pads, every dtype (integers wrap, bool is
any), empty batches; the model adds each kernel offset's column slab into a padded image with strided
slices, then crops the pads. CenterCropPad: cropping and padding by even and odd amounts, axes
subsets (negative too), int32 shapes, every dtype, empty inputs and outputs. RoiAlign: both
coordinate modes, avg and max, fixed and adaptive sampling grids, spatial_scale, several images,
boxes past the edges and inverted ones, every float dtype, no boxes; the model samples each bin's
grid with numpy bilinear interpolation. MaxRoiPool: boxes rounded half away from zero, past the
edges, inverted (forced to one pixel), on several images, with spatial_scale, every float dtype, no
boxes; the model takes each bin's max with bin edges from float32 floor and ceil as Caffe does.
"""

import itertools

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261217)
BF16 = np.dtype(ml_dtypes.bfloat16)
ALL = ["float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64", "bool"]


def np_dtype(name):
    return BF16 if name == "bfloat16" else np.dtype(name)


def sample(shape, dtype, low=-4.0, high=4.0):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if np.issubdtype(np_dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, size=shape, endpoint=True).astype(dtype)
    return RNG.uniform(low, high, size=shape).astype(np_dtype(dtype))


# ---- Col2Im ---------------------------------------------------------------------------------------


def col2im(x, image, block, strides=None, dilations=None, pads=None):
    r = len(image)
    strides = strides or [1] * r
    dilations = dilations or [1] * r
    pads = pads or [0] * (2 * r)
    n, cols, _ = x.shape
    c = cols // int(np.prod(block))
    blocks = [(image[a] + pads[a] + pads[a + r] - dilations[a] * (block[a] - 1) - 1) // strides[a] + 1
              for a in range(r)]
    acc = np.float64 if x.dtype.kind == "f" or x.dtype == BF16 else np.int64
    padded = np.zeros((n, c) + tuple(image[a] + pads[a] + pads[a + r] for a in range(r)), dtype=acc)
    slabs = x.astype(acc).reshape((n, c) + tuple(block) + tuple(blocks))
    for offset in itertools.product(*[range(b) for b in block]):
        window = tuple(slice(offset[a] * dilations[a], offset[a] * dilations[a] + strides[a] * (blocks[a] - 1) + 1,
                             strides[a]) for a in range(r))
        padded[(slice(None), slice(None)) + window] += slabs[(slice(None), slice(None)) + offset]
    inside = tuple(slice(pads[a], pads[a] + image[a]) for a in range(r))
    y = padded[(slice(None), slice(None)) + inside]
    if x.dtype == np.bool_:
        return y != 0
    return y.astype(x.dtype)  # integers wrap


def col2im_case(root, name, x, image, block, rtol=1e-5, atol=1e-5, **attrs):
    inputs = [x, np.array(image, dtype=np.int64), np.array(block, dtype=np.int64)]
    write_case(root, name, "Col2Im", inputs, [col2im(x, image, block, **attrs)], attrs=attrs, rtol=rtol, atol=atol)


def write_col2im(root):
    # (image, block, attrs)
    geometries = [
        ([7], [3], {}),
        ([7], [2], {"strides": [2], "pads": [1, 2]}),
        ([5, 6], [2, 3], {}),
        ([5, 6], [2, 2], {"strides": [2, 1], "dilations": [1, 2], "pads": [1, 0, 2, 1]}),
        ([4, 5], [3, 3], {"pads": [1, 1, 1, 1]}),
        ([3, 4, 5], [2, 2, 3], {"strides": [1, 2, 1], "pads": [0, 1, 1, 1, 0, 0]}),
    ]
    for k, (image, block, attrs) in enumerate(geometries):
        r = len(image)
        blocks = [(image[a] + attrs.get("pads", [0] * 2 * r)[a] + attrs.get("pads", [0] * 2 * r)[a + r]
                   - attrs.get("dilations", [1] * r)[a] * (block[a] - 1) - 1) // attrs.get("strides", [1] * r)[a] + 1
                  for a in range(r)]
        x = sample((2, 3 * int(np.prod(block)), int(np.prod(blocks))), "float32")
        col2im_case(root, f"col2im_geometry_{k}", x, image, block, **attrs)
    for dtype in ALL:
        x = sample((2, 2 * 4, 12), dtype)
        tol = {"float16": 3e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)
        col2im_case(root, f"col2im_{dtype}", x, [4, 5], [2, 2], rtol=tol, atol=tol)
    col2im_case(root, "col2im_empty_batch", np.zeros((0, 4, 9), dtype=np.float32), [4, 4], [2, 2])


# ---- CenterCropPad --------------------------------------------------------------------------------


def center_crop_pad(x, shape, axes=None):
    axes = list(range(x.ndim)) if axes is None else [a % x.ndim for a in axes]
    out_shape = list(x.shape)
    for a, s in zip(axes, shape):
        out_shape[a] = int(s)
    y = np.zeros(out_shape, dtype=x.dtype)
    src, dst = [], []
    for a in range(x.ndim):
        i, o = x.shape[a], out_shape[a]
        n = min(i, o)
        s0 = (i - o) // 2 if i > o else 0
        d0 = (o - i) // 2 if o > i else 0
        src.append(slice(s0, s0 + n))
        dst.append(slice(d0, d0 + n))
    y[tuple(dst)] = x[tuple(src)]
    return y


def write_center_crop_pad(root):
    x = sample((5, 6, 3), "float32")
    for k, shape in enumerate([[3, 4, 3], [8, 9, 3], [4, 7, 2], [2, 10, 5], [1, 1, 1], [5, 6, 3]]):
        write_case(root, f"center_crop_pad_{k}", "CenterCropPad", [x, np.array(shape, dtype=np.int64)],
                   [center_crop_pad(x, shape)])
    for k, (axes, shape) in enumerate([([1], [3]), ([-1, 0], [6, 2]), ([2, -3], [1, 9])]):
        write_case(root, f"center_crop_pad_axes_{k}", "CenterCropPad", [x, np.array(shape, dtype=np.int32)],
                   [center_crop_pad(x, shape, axes)], attrs={"axes": axes})
    for dtype in ALL:
        xd = sample((4, 5), dtype)
        write_case(root, f"center_crop_pad_{dtype}", "CenterCropPad", [xd, np.array([7, 2], dtype=np.int64)],
                   [center_crop_pad(xd, [7, 2])])
    for k, (xs, shape) in enumerate([((0, 3), [2, 3]), ((4, 3), [0, 5]), ((0, 3), [0, 1])]):
        xe = sample(xs, "float32")
        write_case(root, f"center_crop_pad_empty_{k}", "CenterCropPad", [xe, np.array(shape, dtype=np.int64)],
                   [center_crop_pad(xe, shape)])
    scalar_axes = sample((3,), "int32")
    write_case(root, "center_crop_pad_1d", "CenterCropPad", [scalar_axes, np.array([6], dtype=np.int64)],
               [center_crop_pad(scalar_axes, [6])])


# ---- RoiAlign -------------------------------------------------------------------------------------


def bilinear(plane, y, x):
    """Samples a (C, H, W) image at points (y, x) the RoiAlign way: nothing beyond one pixel outside,
    clamped into the image otherwise."""
    h, w = plane.shape[1:]
    outside = (y < -1.0) | (y > h) | (x < -1.0) | (x > w)
    y, x = np.maximum(y, 0), np.maximum(x, 0)
    y0, x0 = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    top, right = y0 >= h - 1, x0 >= w - 1
    y0, x0 = np.where(top, h - 1, y0), np.where(right, w - 1, x0)
    y, x = np.where(top, y0, y), np.where(right, x0, x)
    y1, x1 = np.where(top, y0, y0 + 1), np.where(right, x0, x0 + 1)
    ly, lx = y - y0, x - x0
    corners = [((1 - ly) * (1 - lx), y0, x0), ((1 - ly) * lx, y0, x1), (ly * (1 - lx), y1, x0), (ly * lx, y1, x1)]
    weighted = np.stack([wgt * plane[:, yy, xx] for wgt, yy, xx in corners])  # (4, C, points)
    return np.where(outside[None, None], 0.0, weighted)


def roi_align(x, rois, batch_indices, mode="avg", out_h=1, out_w=1, sampling_ratio=0, spatial_scale=1.0,
              ctm="half_pixel"):
    xd = x.astype(np.float64)
    c = x.shape[1]
    y = np.zeros((len(rois), c, out_h, out_w))
    shift = 0.5 if ctm == "half_pixel" else 0.0
    for i, (box, image) in enumerate(zip(rois.astype(np.float64), batch_indices)):
        x1, y1, x2, y2 = box * spatial_scale - shift
        roi_w, roi_h = x2 - x1, y2 - y1
        if ctm != "half_pixel":
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / out_h, roi_w / out_w
        gh = sampling_ratio if sampling_ratio > 0 else max(int(np.ceil(bin_h)), 0)
        gw = sampling_ratio if sampling_ratio > 0 else max(int(np.ceil(bin_w)), 0)
        if gh * gw == 0:
            continue
        for ph in range(out_h):
            for pw in range(out_w):
                ys = y1 + ph * bin_h + (np.arange(gh) + 0.5) * bin_h / gh
                xs = x1 + pw * bin_w + (np.arange(gw) + 0.5) * bin_w / gw
                yy, xx = np.meshgrid(ys, xs, indexing="ij")
                weighted = bilinear(xd[image], yy.ravel(), xx.ravel())  # (4, C, samples)
                if mode == "avg":
                    y[i, :, ph, pw] = weighted.sum(axis=0).sum(axis=-1) / (gh * gw)
                else:
                    y[i, :, ph, pw] = weighted.max(axis=0).max(axis=-1)
    return y.astype(x.dtype)


def roi_case(root, name, x, rois, indices, rtol=1e-5, atol=1e-5, **attrs):
    names = {"out_h": "output_height", "out_w": "output_width", "ctm": "coordinate_transformation_mode"}
    write_case(root, name, "RoiAlign", [x, rois, indices], [roi_align(x, rois, indices, **attrs)],
               attrs={names.get(k, k): v for k, v in attrs.items()}, rtol=rtol, atol=atol)


def write_roi_align(root):
    x = sample((2, 3, 8, 10), "float32")
    rois = np.array([[0, 0, 9, 7], [1.5, 2.25, 6.5, 5.0], [-2, -1, 4, 3], [7, 5, 12, 11], [3, 3, 3.2, 3.1],
                     [6, 5, 2, 1]], dtype=np.float32)
    indices = np.array([0, 1, 1, 0, 1, 0], dtype=np.int64)
    for mode in ["avg", "max"]:
        for ctm in ["half_pixel", "output_half_pixel"]:
            for ratio in [0, 2]:
                roi_case(root, f"roi_align_{mode}_{ctm}_{ratio}", x, rois, indices, mode=mode, out_h=3, out_w=4,
                         sampling_ratio=ratio, ctm=ctm)
    roi_case(root, "roi_align_scale", x, rois * 2, indices, out_h=2, out_w=2, spatial_scale=0.5)
    for dtype in ["float64", "float16", "bfloat16"]:
        tol = {"float16": 3e-3, "bfloat16": 3e-2}.get(dtype, 1e-5)
        roi_case(root, f"roi_align_{dtype}", x.astype(np_dtype(dtype)), rois.astype(np_dtype(dtype)), indices,
                 out_h=2, out_w=3, sampling_ratio=2, rtol=tol, atol=tol)
    roi_case(root, "roi_align_no_boxes", x, np.zeros((0, 4), dtype=np.float32), np.zeros((0,), dtype=np.int64),
             out_h=2, out_w=2)
    roi_case(root, "roi_align_no_channels", np.zeros((2, 0, 4, 4), dtype=np.float32), rois, indices, out_h=2)


# ---- MaxRoiPool -----------------------------------------------------------------------------------


def round_half_away(v):
    return int(np.copysign(np.floor(abs(v) + 0.5), v))


def max_roi_pool(x, rois, pooled_shape, spatial_scale=1.0):
    out_h, out_w = pooled_shape
    height, width = x.shape[2:]
    y = np.zeros((len(rois), x.shape[1], out_h, out_w), dtype=np.float64)
    for i, row in enumerate(rois.astype(np.float64)):
        image = int(row[0])
        x1, y1, x2, y2 = (round_half_away(v * spatial_scale) for v in row[1:])
        roi_h, roi_w = max(y2 - y1 + 1, 1), max(x2 - x1 + 1, 1)
        bin_h, bin_w = np.float32(roi_h) / np.float32(out_h), np.float32(roi_w) / np.float32(out_w)
        for ph in range(out_h):
            h0 = min(max(int(np.floor(np.float32(ph) * bin_h)) + y1, 0), height)
            h1 = min(max(int(np.ceil(np.float32(ph + 1) * bin_h)) + y1, 0), height)
            for pw in range(out_w):
                w0 = min(max(int(np.floor(np.float32(pw) * bin_w)) + x1, 0), width)
                w1 = min(max(int(np.ceil(np.float32(pw + 1) * bin_w)) + x1, 0), width)
                if h1 > h0 and w1 > w0:
                    y[i, :, ph, pw] = x[image, :, h0:h1, w0:w1].astype(np.float64).max(axis=(1, 2))
    return y.astype(x.dtype)


def write_max_roi_pool(root):
    x = sample((2, 3, 9, 11), "float32")
    rois = np.array([[0, 0, 0, 10, 8], [1, 2.5, 1.5, 7.5, 6.5], [1, -3, -2, 4, 3], [0, 8, 6, 15, 12],
                     [1, 6, 5, 2, 1], [0, 3, 3, 3, 3]], dtype=np.float32)
    for pooled in [(1, 1), (2, 3), (4, 4)]:
        write_case(root, f"max_roi_pool_{pooled[0]}x{pooled[1]}", "MaxRoiPool", [x, rois],
                   [max_roi_pool(x, rois, pooled)], attrs={"pooled_shape": list(pooled)}, rtol=0, atol=0)
    for factor, scale, pooled in [(2.0, 0.5, (3, 2)), (0.75, 0.625, (2, 2))]:
        scaled = rois * np.array([1, factor, factor, factor, factor], dtype=np.float32)
        write_case(root, f"max_roi_pool_scale_{scale}", "MaxRoiPool", [x, scaled],
                   [max_roi_pool(x, scaled, pooled, scale)],
                   attrs={"pooled_shape": list(pooled), "spatial_scale": scale}, rtol=0, atol=0)
    for dtype in ["float64", "float16", "bfloat16"]:
        xd, rd = x.astype(np_dtype(dtype)), rois.astype(np_dtype(dtype))
        write_case(root, f"max_roi_pool_{dtype}", "MaxRoiPool", [xd, rd], [max_roi_pool(xd, rd, (2, 3))],
                   attrs={"pooled_shape": [2, 3]}, rtol=0, atol=0)
    write_case(root, "max_roi_pool_no_boxes", "MaxRoiPool", [x, np.zeros((0, 5), dtype=np.float32)],
               [np.zeros((0, 3, 2, 2), dtype=np.float32)], attrs={"pooled_shape": [2, 2]})


def write(root):
    write_col2im(root)
    write_center_crop_pad(root)
    write_roi_align(root)
    write_max_roi_pool(root)
