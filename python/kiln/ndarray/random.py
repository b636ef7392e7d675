"""Random arrays (mx.nd.random, also mx.random): MXNet 1.x's distributions, drawn by Kiln's random
ops (RandomUniform, Sample*, Multinomial) from the seeds mx.random.seed() resets.

A parameter is a number or an NDArray. With numbers, `shape` is the output's shape ((1,) when
absent, as in MXNet); with NDArrays (broadcast together), the output is their shape followed by
`shape`, one draw per parameter element and position of `shape`."""
import numpy as _np

from .. import _kiln
from .._kiln import NDArray
from ..context import cpu as _cpu


def _invoke1(op, inputs, **attrs):
    return _kiln.invoke(op, inputs, attrs)[0]


def _finish(result, ctx, out):
    if ctx is not None:
        result = result.as_in_context(ctx)
    if out is None:
        return result
    if out.shape != result.shape:
        raise ValueError(f"out= has shape {out.shape}; the draws have shape {result.shape}")
    result.astype(out.dtype).copyto(out)
    return out


def _draw(op, params, shape, dtype, ctx, out, default_dtype="float32"):
    tensors = any(isinstance(p, NDArray) for p in params)
    if shape is None:
        shape = () if tensors else (1,)
    elif isinstance(shape, (int, _np.integer)):
        shape = (int(shape),)
    inputs = [p.astype("float64") if isinstance(p, NDArray) else _kiln.from_numpy(_np.array(float(p)), _cpu())
              for p in params]
    dtype = dtype if dtype is not None else (out.dtype if out is not None else default_dtype)
    result = _invoke1(op, inputs, shape=[int(d) for d in shape], dtype=_kiln._onnx_dtype(dtype))
    return _finish(result, ctx, out)


def uniform(low=0, high=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Draws uniform in [low, high)."""
    return _draw("SampleUniform", [low, high], shape, dtype, ctx, out)


def normal(loc=0, scale=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Draws from the normal distribution N(loc, scale^2)."""
    return _draw("SampleNormal", [loc, scale], shape, dtype, ctx, out)


def randn(*shape, loc=0, scale=1, dtype=None, ctx=None, out=None, name=None):
    """normal(loc, scale) of the shape given as positional arguments."""
    return normal(loc, scale, shape if shape else None, dtype, ctx, out)


def gamma(alpha=1, beta=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Draws from Gamma(alpha, beta): shape alpha, scale beta (mean alpha * beta)."""
    return _draw("SampleGamma", [alpha, beta], shape, dtype, ctx, out)


def exponential(scale=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Draws from the exponential distribution of mean `scale` (rate 1 / scale)."""
    rate = 1.0 / scale if not isinstance(scale, NDArray) else 1.0 / scale.astype("float64")
    return _draw("SampleExponential", [rate], shape, dtype, ctx, out)


def poisson(lam=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Draws from Poisson(lam), as floats unless dtype says otherwise."""
    return _draw("SamplePoisson", [lam], shape, dtype, ctx, out)


def negative_binomial(k=1, p=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """The number of failures before k successes of probability p."""
    return _draw("SampleNegativeBinomial", [k, p], shape, dtype, ctx, out)


def generalized_negative_binomial(mu=1, alpha=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Draws of mean mu and variance mu + alpha * mu^2 (Poisson(mu) for alpha 0)."""
    return _draw("SampleGeneralizedNegativeBinomial", [mu, alpha], shape, dtype, ctx, out)


def randint(low, high, shape=None, dtype=None, ctx=None, out=None, name=None):
    """Integers uniform in [low, high), int32 unless dtype says otherwise."""
    shape = (1,) if shape is None else ((int(shape),) if isinstance(shape, (int, _np.integer)) else shape)
    dtype = dtype if dtype is not None else (out.dtype if out is not None else "int32")
    result = _invoke1("SampleRandint", [], low=int(low), high=int(high), shape=[int(d) for d in shape],
                      dtype=_kiln._onnx_dtype(dtype))
    return _finish(result, ctx, out)


def multinomial(data, shape=None, get_prob=False, out=None, dtype="int32", name=None):
    """Class indices drawn from the categorical distributions in the last axis of `data`
    (probabilities summing to 1): data.shape[:-1] + shape of them. With get_prob=True, also the log
    probability of each draw."""
    from . import log, reshape
    samples = 1 if shape is None else int(_np.prod((shape,) if isinstance(shape, int) else shape))
    sample_shape = () if shape is None else ((shape,) if isinstance(shape, int) else tuple(shape))
    batch = data.shape[:-1]
    log_prob = log(reshape(data, (-1, data.shape[-1])).astype("float32"))
    drawn = _invoke1("Multinomial", [log_prob], sample_size=samples, dtype=_kiln._onnx_dtype("int64"))
    result = _finish(reshape(drawn.astype(dtype), batch + sample_shape), None, out)
    if not get_prob:
        return result
    return result, reshape(_invoke1("GatherElements", [log_prob, drawn], axis=1), batch + sample_shape)


def shuffle(data, out=None, name=None):
    """data with its first axis in a random order (a permutation drawn by uniform keys)."""
    from . import take
    keys = uniform(0, 1, shape=(data.shape[0],), dtype="float64").asnumpy()
    order = _kiln.from_numpy(_np.argsort(keys, kind="stable").astype(_np.int64), _cpu())
    return _finish(take(data, order), None, out)


__all__ = ["uniform", "normal", "randn", "gamma", "exponential", "poisson", "negative_binomial",
           "generalized_negative_binomial", "randint", "multinomial", "shuffle"]
