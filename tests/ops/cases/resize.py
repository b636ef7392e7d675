"""numpy cases for Resize and Upsample: nearest, linear and cubic (with antialias and exclude_outside),
every coordinate transformation mode, upscaling and downscaling, scales and sizes, axes (negative
too), keep_aspect_ratio_policy, tf_crop_and_resize extrapolation, 1-D to 4-D inputs, every dtype,
empty tensors.

Expected values come from a plain numpy model written here, independent of the ONNX reference
implementation: each resized axis gets an (output x input) weight matrix, built per output coordinate
by summing the filter over every input index near the source coordinate (indices past an edge read
the edge), and the matrices are applied one axis at a time in float64. Integer results are rounded
half to even and saturated, as ONNX's saturate_cast does.
"""

import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261204)


def sample(shape, dtype):
    if dtype == "bool":
        return RNG.random(shape) > 0.5
    if dtype == "bfloat16":
        import ml_dtypes

        return RNG.uniform(-4, 4, size=shape).astype(ml_dtypes.bfloat16)
    if np.issubdtype(np.dtype(dtype), np.integer):
        info = np.iinfo(dtype)
        return RNG.integers(max(info.min, -1000), min(info.max, 1000) + 1, size=shape).astype(dtype)
    return RNG.uniform(-4, 4, size=shape).astype(dtype)


def source_coordinates(mode, out_len, in_len, scale, roi):
    """Source coordinate of each output index along one axis (the ONNX spec's formulas, with the
    fractional output width scale * in_len)."""
    y = np.arange(out_len, dtype=np.float64)
    width = scale * in_len
    if mode == "half_pixel":
        return (y + 0.5) / scale - 0.5
    if mode == "half_pixel_symmetric":
        offset = in_len / 2 * (1 - out_len / width)
        return offset + (y + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return np.full(out_len, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    if mode == "align_corners":
        return np.zeros(out_len) if width == 1 else y * (in_len - 1) / (width - 1)
    if mode == "asymmetric":
        return y / scale
    if mode == "tf_crop_and_resize":
        start, end = roi
        if width == 1:
            return np.full(out_len, (start + end) / 2 * (in_len - 1))
        return start * (in_len - 1) + y * (end - start) * (in_len - 1) / (width - 1)
    raise ValueError(mode)


def nearest_matrix(x, in_len, nearest_mode):
    if nearest_mode == "round_prefer_floor":
        idx = np.ceil(x - 0.5)
    elif nearest_mode == "round_prefer_ceil":
        idx = np.floor(x + 0.5)
    elif nearest_mode == "floor":
        idx = np.floor(x)
    else:
        idx = np.ceil(x)
    idx = np.clip(idx, 0, in_len - 1).astype(np.int64)
    w = np.zeros((len(x), in_len))
    w[np.arange(len(x)), idx] = 1
    return w


def linear_kernel(d):
    return np.maximum(0.0, 1 - np.abs(d))


def cubic_kernel(a):
    def k(d):
        d = np.abs(d)
        near = ((a + 2) * d - (a + 3)) * d * d + 1
        far = ((a * d - 5 * a) * d + 8 * a) * d - 4 * a
        return np.where(d <= 1, near, np.where(d < 2, far, 0.0))

    return k


def filter_matrix(x, in_len, kernel, radius, stretch, antialias, exclude_outside):
    """Row y weighs input index j by kernel((j - x[y]) * stretch); an index past an edge reads the edge."""
    w = np.zeros((len(x), in_len))
    for y, xv in enumerate(x):
        js = np.arange(int(np.floor(xv - radius / stretch)) - 1, int(np.ceil(xv + radius / stretch)) + 2)
        wj = kernel((js - xv) * stretch)
        if antialias:
            wj = wj / wj.sum()
        if exclude_outside:
            wj = np.where((js < 0) | (js >= in_len), 0.0, wj)
            wj = wj / wj.sum()
        np.add.at(w[y], np.clip(js, 0, in_len - 1), wj)
    return w


def resize(x, scales=None, sizes=None, axes=None, roi=None, mode="nearest",
           coordinate_transformation_mode="half_pixel", nearest_mode="round_prefer_floor",
           keep_aspect_ratio_policy="stretch", cubic_coeff_a=-0.75, antialias=0, exclude_outside=0,
           extrapolation_value=0.0):
    rank = x.ndim
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    out_len = list(x.shape)
    scale = [1.0] * rank
    if scales is not None:
        for a, s in zip(axes, scales):
            # float32 arithmetic, as ONNX shape inference and ONNX Runtime compute output lengths.
            out_len[a] = int(np.floor(np.float32(x.shape[a]) * np.float32(s)))
            scale[a] = float(np.float32(s))
    elif keep_aspect_ratio_policy == "stretch":
        for a, n in zip(axes, sizes):
            out_len[a] = int(n)
            scale[a] = n / x.shape[a] if x.shape[a] else 1.0
    else:
        pick = min if keep_aspect_ratio_policy == "not_larger" else max
        common = pick(n / x.shape[a] for a, n in zip(axes, sizes))
        for a in axes:
            scale[a] = common
            out_len[a] = int(np.floor(common * x.shape[a] + 0.5))
    windows = {a: (0.0, 1.0) for a in range(rank)}
    if roi is not None:
        for i, a in enumerate(axes):
            windows[a] = (float(roi[i]), float(roi[len(axes) + i]))

    result = x.astype(np.float64)
    outside = np.zeros(out_len, dtype=bool)
    for a in range(rank):
        in_len = x.shape[a]
        if out_len[a] == in_len and scale[a] == 1.0 and windows[a] == (0.0, 1.0):
            continue
        src = source_coordinates(coordinate_transformation_mode, out_len[a], in_len, scale[a], windows[a])
        stretch = min(scale[a], 1.0) if antialias else 1.0
        if mode == "nearest":
            w = nearest_matrix(src, in_len, nearest_mode)
        elif mode == "linear":
            w = filter_matrix(src, in_len, linear_kernel, 1, stretch, antialias, exclude_outside)
        else:
            kernel = cubic_kernel(cubic_coeff_a)
            w = filter_matrix(src, in_len, kernel, 2, stretch, antialias, exclude_outside)
        result = np.moveaxis(np.tensordot(w, np.moveaxis(result, a, 0), axes=1), 0, a)
        if coordinate_transformation_mode == "tf_crop_and_resize":
            flagged = (src < 0) | (src > in_len - 1)
            shape = [1] * rank
            shape[a] = out_len[a]
            outside = outside | flagged.reshape(shape)
    result = np.where(outside, extrapolation_value, result)
    return as_dtype(result, x.dtype)


def as_dtype(values, dtype):
    if dtype == np.bool_:
        return values != 0
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return np.clip(np.round(values), info.min, info.max).astype(dtype)
    return values.astype(dtype)


def f32(values):
    return np.array(values, dtype=np.float32)


def i64(values):
    return np.array(values, dtype=np.int64)


def resize_case(root, name, x, scales=None, sizes=None, roi=None, rtol=1e-5, atol=1e-5, **attrs):
    expected = resize(x, scales=None if scales is None else f32(scales),
                      sizes=None if sizes is None else i64(sizes), roi=roi, **attrs)
    inputs = [x, None if roi is None else f32(roi), None if scales is None else f32(scales),
              None if sizes is None else i64(sizes)]
    write_case(root, name, "Resize", inputs, [expected], attrs=attrs, rtol=rtol, atol=atol)


COORDINATE_MODES = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric"]
NEAREST_MODES = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]


def write(root):
    x3 = sample((2, 5, 7), "float32")
    # Upscale and downscale along two axes by scales, and to sizes, in every coordinate mode.
    for coord in COORDINATE_MODES:
        for nm in NEAREST_MODES:
            resize_case(root, f"resize_nearest_{coord}_{nm}_up", x3, scales=[1, 2.5, 1.6], mode="nearest",
                        coordinate_transformation_mode=coord, nearest_mode=nm)
            resize_case(root, f"resize_nearest_{coord}_{nm}_down", x3, sizes=[2, 3, 4], mode="nearest",
                        coordinate_transformation_mode=coord, nearest_mode=nm)
        for kind in ["linear", "cubic"]:
            resize_case(root, f"resize_{kind}_{coord}_up", x3, scales=[1, 1.7, 2.2], mode=kind,
                        coordinate_transformation_mode=coord)
            resize_case(root, f"resize_{kind}_{coord}_down", x3, scales=[1, 0.6, 0.45], mode=kind,
                        coordinate_transformation_mode=coord)
            resize_case(root, f"resize_{kind}_{coord}_sizes", x3, sizes=[3, 3, 9], mode=kind,
                        coordinate_transformation_mode=coord)

    # Every dtype, nearest and linear, upscale and downscale; bool only resizes by nearest. Integer
    # results round exact halves to even; scales of powers of two keep the weights exact, so no
    # result sits a rounding error away from a half.
    for dtype in ["float16", "bfloat16", "float64", "uint8", "int8", "int32", "int64"]:
        x = sample((3, 4, 6), dtype)
        resize_case(root, f"resize_nearest_{dtype}_up", x, scales=[1, 2, 1.5], mode="nearest")
        resize_case(root, f"resize_nearest_{dtype}_down", x, sizes=[3, 3, 4], mode="nearest")
        resize_case(root, f"resize_linear_{dtype}_up", x, scales=[1, 2, 4], mode="linear", rtol=1e-3)
        resize_case(root, f"resize_linear_{dtype}_down", x, sizes=[2, 2, 3], mode="linear", rtol=1e-3,
                    coordinate_transformation_mode="align_corners")
        resize_case(root, f"resize_linear_{dtype}_down_half_pixel", x, scales=[1, 0.5, 0.5], mode="linear",
                    rtol=1e-3)
        resize_case(root, f"resize_cubic_{dtype}_up", x, scales=[1, 2, 2], mode="cubic", rtol=1e-3)
    resize_case(root, "resize_nearest_bool", sample((3, 4), "bool"), scales=[2, 1.5], mode="nearest")
    # Integer results round half to even and saturate (cubic overshoots past the range).
    edges = np.array([[0, 255, 0, 255, 1, 2]], dtype=np.uint8)
    resize_case(root, "resize_cubic_uint8_saturates", edges, scales=[1, 2], mode="cubic")
    resize_case(root, "resize_linear_uint8_half_to_even", edges, scales=[1, 2], mode="linear",
                coordinate_transformation_mode="asymmetric")
    resize_case(root, "resize_cubic_int8_saturates", np.array([-128, 127, -128, 127], dtype=np.int8),
                scales=[4], mode="cubic")

    # 1-D and 4-D inputs.
    x1 = sample((9,), "float32")
    for kind in ["nearest", "linear", "cubic"]:
        resize_case(root, f"resize_{kind}_1d_up", x1, scales=[2.3], mode=kind)
        resize_case(root, f"resize_{kind}_1d_down", x1, sizes=[4], mode=kind)
        resize_case(root, f"resize_{kind}_1d_align_corners_to_1", x1, sizes=[1], mode=kind,
                    coordinate_transformation_mode="align_corners")
        resize_case(root, f"resize_{kind}_1d_pytorch_to_1", x1, sizes=[1], mode=kind,
                    coordinate_transformation_mode="pytorch_half_pixel")
    resize_case(root, "resize_linear_length_1_axis", sample((1, 3), "float32"), sizes=[4, 5], mode="linear")
    x4 = sample((2, 3, 5, 4), "float32")
    resize_case(root, "resize_linear_4d_trilinear", x4, scales=[1, 2, 0.8, 1.5], mode="linear")
    resize_case(root, "resize_nearest_4d_every_axis", x4, sizes=[3, 2, 7, 2], mode="nearest")

    # axes, negative axes, keep_aspect_ratio_policy.
    resize_case(root, "resize_linear_axes_negative", x3, scales=[1.5, 2], axes=[-1, 1], mode="linear")
    resize_case(root, "resize_nearest_axes_one", x3, sizes=[11], axes=[-1], mode="nearest")
    for policy in ["stretch", "not_larger", "not_smaller"]:
        resize_case(root, f"resize_linear_{policy}", x3, sizes=[8, 8], axes=[1, 2], mode="linear",
                    keep_aspect_ratio_policy=policy)
        resize_case(root, f"resize_nearest_{policy}_down", x3, sizes=[3, 3], axes=[2, -2], mode="nearest",
                    keep_aspect_ratio_policy=policy)

    # tf_crop_and_resize: windows inside and beyond the input, extrapolation, integer fill.
    for kind in ["nearest", "linear", "cubic"]:
        resize_case(root, f"resize_{kind}_tf_crop", x3, sizes=[2, 4, 5], roi=[0, 0.2, 0.1, 1, 0.8, 0.7],
                    mode=kind, coordinate_transformation_mode="tf_crop_and_resize")
        resize_case(root, f"resize_{kind}_tf_crop_extrapolate", x3, sizes=[6, 5], axes=[2, 1],
                    roi=[-0.25, 0.1, 1.2, 1.35], mode=kind,
                    coordinate_transformation_mode="tf_crop_and_resize", extrapolation_value=-7.5)
    resize_case(root, "resize_linear_tf_crop_int32_fill", sample((4, 5), "int32"), sizes=[3, 6],
                roi=[-0.5, 0.2, 0.5, 1.5], mode="linear", coordinate_transformation_mode="tf_crop_and_resize",
                extrapolation_value=2.5)

    # Antialias and exclude_outside.
    big = sample((2, 12, 17), "float32")
    for kind in ["linear", "cubic"]:
        resize_case(root, f"resize_{kind}_antialias_down", big, scales=[1, 0.4, 0.3], mode=kind, antialias=1)
        resize_case(root, f"resize_{kind}_antialias_sizes", big, sizes=[2, 5, 3], mode=kind, antialias=1,
                    coordinate_transformation_mode="align_corners")
        resize_case(root, f"resize_{kind}_antialias_up_is_plain", big, scales=[1, 1.5, 2], mode=kind,
                    antialias=1)
        resize_case(root, f"resize_{kind}_exclude_outside", big, scales=[1, 0.7, 1.8], mode=kind,
                    exclude_outside=1, cubic_coeff_a=-0.5)
    resize_case(root, "resize_linear_antialias_uint8", sample((8, 16), "uint8"), sizes=[4, 4], mode="linear",
                antialias=1)

    # Empty tensors: an empty batch, and a scale that rounds an axis down to nothing.
    empty = sample((0, 3, 4), "float32")
    resize_case(root, "resize_linear_empty_batch", empty, scales=[1, 2, 2], mode="linear")
    resize_case(root, "resize_nearest_empty_batch", empty.astype(np.int64), sizes=[0, 5, 1], mode="nearest")
    resize_case(root, "resize_linear_to_nothing", sample((2, 1, 3), "float32"), scales=[1, 0.5, 1],
                mode="linear")
    resize_case(root, "resize_nearest_identity", x3, scales=[1, 1, 1], mode="nearest")
    resize_case(root, "resize_linear_identity_sizes", x3, sizes=[2, 5, 7], mode="linear")

    # Upsample: asymmetric coordinates, nearest takes the floor.
    for dtype in ["float32", "uint8", "int64", "float16"]:
        x = sample((2, 3, 4), dtype)
        scales = f32([1, 2, 1.5])
        write_case(root, f"upsample_nearest_{dtype}", "Upsample", [x, scales],
                   [resize(x, scales=scales, mode="nearest", coordinate_transformation_mode="asymmetric",
                           nearest_mode="floor")], attrs={"mode": "nearest"})
        write_case(root, f"upsample_linear_{dtype}", "Upsample", [x, scales],
                   [resize(x, scales=scales, mode="linear", coordinate_transformation_mode="asymmetric")],
                   attrs={"mode": "linear"}, rtol=1e-3)
    x = sample((2, 3), "bool")
    write_case(root, "upsample_nearest_bool", "Upsample", [x, f32([3, 2])],
               [np.repeat(np.repeat(x, 3, 0), 2, 1)])
