"""The rest of MXNet 1.x's mx.nd math and shape functions, composed of Kiln's ops with MXNet's
semantics where they differ from numpy's: `rint` takes halves down (MXNet's own rule),
`argmax_channel` reduces axis 1, `pick` clips or wraps its indices. Each records for autograd as
the ops it is made of. FLUENT lists the NDArray methods the package attaches.
"""
import builtins as _builtins
import math as _math

import numpy as _np

from . import (_invoke1, _mxnet_keywords, arccosh, arcsinh, arctanh, array, broadcast_to, cast, cbrt, ceil, cosh,
               expm1, fix, floor, log1p, log2, log10, maximum, minimum, one_hot, prod, reciprocal, reshape, round,
               sinh, softmax, squeeze, sum, trunc, where, zeros_like)


@_mxnet_keywords
def rint(data):
    """The nearest integer; a half goes down (-2.5 -> -3, 2.5 -> 2), as MXNet rounds it."""
    low, high = floor(data), ceil(data)
    return where(data - low <= high - data, low, high)


@_mxnet_keywords
def rcbrt(data):
    return reciprocal(cbrt(data))


@_mxnet_keywords
def degrees(data):
    return data * (180.0 / _math.pi)


@_mxnet_keywords
def radians(data):
    return data * (_math.pi / 180.0)


@_mxnet_keywords
def softmin(data, axis=-1):
    return softmax(-data, axis)


@_mxnet_keywords
def nansum(data, axis=None, keepdims=False, exclude=False):
    """The sum with NaNs counted as 0."""
    return sum(where(_invoke1("IsNaN", [data]), zeros_like(data), data), axis, keepdims, exclude)


@_mxnet_keywords
def nanprod(data, axis=None, keepdims=False, exclude=False):
    """The product with NaNs counted as 1."""
    return prod(where(_invoke1("IsNaN", [data]), zeros_like(data) + 1, data), axis, keepdims, exclude)


@_mxnet_keywords
def argmax_channel(data):
    """The index of the largest value along axis 1, as a float of the data's dtype."""
    return _invoke1("ArgMax", [data], axis=1, keepdims=0).astype(data.dtype)


@_mxnet_keywords
def shape_array(data):
    return array(data.shape, dtype="int64")


@_mxnet_keywords
def size_array(data):
    return array([data.size], dtype="int64")


@_mxnet_keywords
def flip(data, axis):
    """The array reversed along `axis` (an int or a tuple of them)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    index = [_builtins.slice(None)] * data.ndim
    for a in axes:
        index[a % data.ndim] = _builtins.slice(None, None, -1)
    return data[tuple(index)]


reverse = flip


@_mxnet_keywords
def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """numpy.split's rule: `indices_or_sections` is a number of equal parts or the indices the
    axis is cut at. One part comes back as an array, several as a list."""
    n = ary.shape[axis]
    if isinstance(indices_or_sections, int):
        if indices_or_sections <= 0 or n % indices_or_sections:
            raise ValueError(f"split_v2: axis {axis} of length {n} cannot be cut into {indices_or_sections} "
                             "equal parts")
        step = n // indices_or_sections
        cuts = [step * k for k in range(1, indices_or_sections)]
    else:
        cuts = [int(i) for i in indices_or_sections]
        cuts = [c for c in cuts if c != 0]  # numpy's leading empty part, which MXNet leaves out
    bounds = [0] + cuts + [n]
    axis %= ary.ndim
    parts = []
    for begin, end in zip(bounds[:-1], bounds[1:]):
        index = [_builtins.slice(None)] * axis + [_builtins.slice(begin, end)]
        part = ary[tuple(index)]
        parts.append(squeeze(part, axis) if squeeze_axis else part)
    return parts if len(parts) > 1 else parts[0]


@_mxnet_keywords
def slice_like(data, shape_like, axes=()):
    """`data` cut from the start to `shape_like`'s size on `axes` (all of shape_like's axes when
    empty)."""
    like = shape_like.shape
    axes = tuple(range(len(like))) if not axes else tuple(axes)
    index = [_builtins.slice(None)] * data.ndim
    for a in axes:
        axis = a % data.ndim if -data.ndim <= a < data.ndim else a
        if not 0 <= axis < len(like) or axis >= data.ndim:
            raise ValueError(f"slice_like: axis {a} is outside data of shape {data.shape} or shape_like of "
                             f"shape {like}")
        index[axis] = _builtins.slice(0, like[axis])
    return data[tuple(index)]


@_mxnet_keywords
def reshape_like(lhs, rhs, lhs_begin=None, lhs_end=None, rhs_begin=None, rhs_end=None):
    """lhs reshaped so that its axes [lhs_begin, lhs_end) take rhs's axes [rhs_begin, rhs_end) (the
    whole shapes by default)."""
    lb, le = _builtins.slice(lhs_begin, lhs_end).indices(lhs.ndim)[:2]
    rb, re = _builtins.slice(rhs_begin, rhs_end).indices(rhs.ndim)[:2]
    return reshape(lhs, lhs.shape[:lb] + rhs.shape[rb:re] + lhs.shape[le:])


@_mxnet_keywords
def broadcast_axes(data, axis=(), size=()):
    """`data` repeated to `size[i]` along each `axis[i]` (each of length 1 in data)."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    sizes = (size,) if isinstance(size, int) else tuple(size)
    if len(axes) != len(sizes):
        raise ValueError(f"broadcast_axes: {len(axes)} axes and {len(sizes)} sizes")
    shape = list(data.shape)
    for a, s in zip(axes, sizes):
        if shape[a] != 1:
            raise ValueError(f"broadcast_axes: axis {a} of shape {data.shape} has length {shape[a]}, not 1")
        shape[a] = s
    return broadcast_to(data, tuple(shape))


broadcast_axis = broadcast_axes


@_mxnet_keywords
def pick(data, index, axis=-1, keepdims=False, mode="clip"):
    """data[..., index[...], ...] along `axis`: one element per position of `index`, whose shape is
    data's without that axis (or with it as 1). Out-of-range indices are clipped or wrapped."""
    if mode not in ("clip", "wrap"):
        raise ValueError(f"pick: mode must be 'clip' or 'wrap', got '{mode}'")
    axis %= data.ndim
    n = data.shape[axis]
    idx = cast(index, "int64")
    if idx.ndim == data.ndim - 1:
        idx = idx.expand_dims(axis, inplace=True)
    if mode == "clip":
        idx = minimum(maximum(idx, array([0], dtype="int64")), array([n - 1], dtype="int64"))
    else:
        idx = _invoke1("Mod", [idx, array([n], dtype="int64")])
    out = _invoke1("GatherElements", [data, idx], axis=axis)
    return out if keepdims else out.squeeze(axis, inplace=True)


@_mxnet_keywords
def choose_element_0index(lhs, rhs):
    """lhs[i, rhs[i]] for every row i of a 2-d lhs (MXNet's older name for pick on axis 1)."""
    return pick(lhs, rhs, axis=1)


@_mxnet_keywords
def fill_element_0index(lhs, mhs, rhs):
    """A copy of the 2-d lhs with lhs[i, rhs[i]] set to mhs[i] for every row i."""
    idx = cast(rhs, "int64").reshape((-1, 1))
    return _invoke1("ScatterElements", [lhs, idx, mhs.astype(lhs.dtype).reshape((-1, 1))], axis=1)


def onehot_encode(indices, out):
    """Writes the one-hot rows of `indices` into `out`, of shape (len(indices), depth); returns out."""
    out[:] = one_hot(indices, out.shape[1], dtype=_np.dtype(out.dtype).name)
    return out


_PAD_MODES = ("constant", "edge", "reflect")


@_mxnet_keywords
def pad(data, mode, pad_width, constant_value=0.0):
    """Pads a 4-d or 5-d array; pad_width holds (before, after) for every axis, in axis order."""
    if mode not in _PAD_MODES:
        raise ValueError(f"pad: mode must be one of {', '.join(_PAD_MODES)}, got '{mode}'")
    widths = [int(w) for w in pad_width]
    if len(widths) != 2 * data.ndim:
        raise ValueError(f"pad: pad_width needs {2 * data.ndim} values for shape {data.shape}, got {len(widths)}")
    pads = widths[0::2] + widths[1::2]  # ONNX's order: every axis's start, then every axis's end
    inputs = [data, array(pads, dtype="int64")]
    if mode == "constant":
        inputs.append(array([constant_value], dtype=data.dtype).reshape(()))
    return _invoke1("Pad", inputs, mode=mode)


# Methods of NDArray that call these functions, as MXNet's fluent interface does.
FLUENT = {
    "round": round, "rint": rint, "fix": fix, "trunc": trunc, "floor": floor, "ceil": ceil,
    "expm1": expm1, "log1p": log1p, "log2": log2, "log10": log10, "cbrt": cbrt, "rcbrt": rcbrt,
    "sinh": sinh, "cosh": cosh, "arcsinh": arcsinh, "arccosh": arccosh, "arctanh": arctanh,
    "degrees": degrees, "radians": radians, "softmin": softmin, "nansum": nansum, "nanprod": nanprod,
    "argmax_channel": argmax_channel, "shape_array": shape_array, "size_array": size_array, "flip": flip,
    "split_v2": split_v2, "slice_like": slice_like, "reshape_like": reshape_like, "broadcast_axes": broadcast_axes,
    "pick": pick, "pad": pad,
}
