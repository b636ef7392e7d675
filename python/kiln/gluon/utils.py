"""Gluon utilities (mx.gluon.utils)."""
from .. import _kiln


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Splits a batch across devices; with one device (Kiln runs on the CPU) the batch itself."""
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    n = data.shape[batch_axis]
    step = n // len(ctx_list)
    parts = []
    for i, ctx in enumerate(ctx_list):
        end = n if i == len(ctx_list) - 1 else (i + 1) * step
        parts.append(data.slice_axis(batch_axis, i * step, end).as_in_context(ctx))
    return parts


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scales the arrays in place so that their joint L2 norm is at most max_norm; returns the norm."""
    return _kiln.gluon.clip_global_norm(list(arrays), float(max_norm))


__all__ = ["split_and_load", "clip_global_norm"]
