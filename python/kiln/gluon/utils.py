"""Gluon utilities (mx.gluon.utils)."""
from .. import _kiln


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Cuts `data` into `num_slice` parts along `batch_axis`. With even_split the axis must divide
    evenly (ValueError otherwise); without it the first parts take one extra row each, as MXNet
    cuts them."""
    size = data.shape[batch_axis]
    if size < num_slice:
        raise ValueError(f"split_data: {size} rows along axis {batch_axis} cannot make {num_slice} parts")
    if even_split and size % num_slice:
        raise ValueError(f"split_data: axis {batch_axis} of shape {data.shape} does not split evenly into "
                         f"{num_slice} parts; pass even_split=False or change num_slice")
    each, extras = divmod(size, num_slice)
    bounds = [0]
    for k in range(num_slice):
        bounds.append(bounds[-1] + each + (1 if k < extras else 0))
    return [data.slice_axis(batch_axis, bounds[k], bounds[k + 1]) for k in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits a batch across devices (split_data), each part copied to its device."""
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    parts = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(parts, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales the arrays in place so that their joint L2 norm is at most max_norm; returns the norm."""
    return _kiln.gluon.clip_global_norm(list(arrays), float(max_norm))


__all__ = ["split_data", "split_and_load", "clip_global_norm"]
