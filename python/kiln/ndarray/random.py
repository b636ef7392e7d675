"""Random arrays (mx.nd.random), drawn from the generator mx.random.seed() resets."""
from .. import _kiln


def uniform(low=0.0, high=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    result = _kiln._random_uniform(float(low), float(high), shape, dtype)
    if out is not None:
        out[:] = result
        return out
    return result


def normal(loc=0.0, scale=1.0, shape=(1,), dtype=None, ctx=None, out=None, **kwargs):
    result = _kiln._random_normal(float(loc), float(scale), shape, dtype)
    if out is not None:
        out[:] = result
        return out
    return result


def randn(*shape, loc=0.0, scale=1.0, dtype=None, ctx=None, **kwargs):
    return normal(loc, scale, shape, dtype)


__all__ = ["uniform", "normal", "randn"]
