"""NDArray (mx.nd): Kiln's asynchronous array and the functions on it, with MXNet's names.

Every function runs a registered C++ op (pushed to Kiln's dependency engine and returning at
once); values are read by asnumpy(), asscalar() or printing, which wait for the result.
"""
import builtins as _builtins
import functools as _functools
import struct as _struct

import numpy as _np

from .. import _kiln
from .._kiln import NDArray, waitall, from_dlpack, save, load, load_frombuffer
from ..context import cpu
from . import random, contrib

_invoke = _kiln.invoke


def _invoke1(op, inputs, **attrs):
    return _invoke(op, inputs, attrs)[0]


def _ctx(ctx):
    return cpu() if ctx is None else ctx


def _mxnet_keywords(fn):
    """The keywords every mx.nd function takes in MXNet: out= (the result is written into that
    array, which is returned) and name= (ignored by imperative calls, as in MXNet). Any other
    keyword the function does not declare is a TypeError, not silently dropped."""
    @_functools.wraps(fn)
    def call(*args, out=None, name=None, **kwargs):
        result = fn(*args, **kwargs)
        if out is None:
            return result
        if not isinstance(result, NDArray):
            raise TypeError(f"{fn.__name__}: out= takes one array, and this call gives {len(result)}")
        if out.shape != result.shape or out.dtype != result.dtype:
            raise ValueError(f"{fn.__name__}: out= has shape {out.shape} and dtype {out.dtype}; the result has "
                             f"shape {result.shape} and dtype {result.dtype}")
        result.copyto(out)
        return out
    return call


def _dense(stype, what):
    if stype not in (None, "default"):
        raise ValueError(f"{what}: stype {stype!r} is not supported (Kiln's arrays are dense)")


# ---- creation ---------------------------------------------------------------------------------

def array(source_array, ctx=None, dtype=None):
    """An array with a copy of `source_array` (numpy array, NDArray, nested lists or a number).
    As in MXNet, the dtype is float32 unless given (an NDArray keeps its own)."""
    if isinstance(source_array, NDArray):
        dtype = source_array.dtype if dtype is None else dtype
        return source_array.astype(dtype).as_in_context(_ctx(ctx))
    dtype = _np.float32 if dtype is None else dtype
    # asarray, not ascontiguousarray, which turns a scalar into shape (1,): MXNet keeps shape ().
    return _kiln.from_numpy(_np.asarray(source_array, dtype=dtype, order="C"), _ctx(ctx))


@_mxnet_keywords
def zeros(shape, ctx=None, dtype=None, stype=None):
    _dense(stype, "zeros")
    return _kiln.full(shape, 0.0, dtype, _ctx(ctx))


@_mxnet_keywords
def ones(shape, ctx=None, dtype=None, stype=None):
    _dense(stype, "ones")
    return _kiln.full(shape, 1.0, dtype, _ctx(ctx))


@_mxnet_keywords
def full(shape, val, ctx=None, dtype=None):
    return _kiln.full(shape, float(val), dtype, _ctx(ctx))


def empty(shape, ctx=None, dtype=None):
    return _kiln.empty(shape, dtype, _ctx(ctx))


@_mxnet_keywords
def zeros_like(data):
    return _kiln.full(data.shape, 0.0, data.dtype, data.context)


@_mxnet_keywords
def ones_like(data):
    return _kiln.full(data.shape, 1.0, data.dtype, data.context)


@_mxnet_keywords
def arange(start, stop=None, step=1.0, repeat=1, ctx=None, dtype=None):
    if stop is None:
        start, stop = 0.0, start
    out = _kiln.arange(float(start), float(stop), float(step), dtype)
    if repeat != 1:
        out = tile(out.reshape((-1, 1)), (1, repeat)).reshape((-1,))
    return out.as_in_context(_ctx(ctx))


@_mxnet_keywords
def linspace(start, stop, num, endpoint=True, ctx=None, dtype=None):
    """num evenly spaced values from start to stop (stop itself with endpoint), computed in float64 and
    converted to dtype (float32 by default; integers truncate, as a cast does)."""
    steps = num - 1 if endpoint else num
    step = (stop - start) / steps if steps > 0 else 0.0
    values = arange(0, num, dtype="float64") * step + float(start)
    return values.astype(dtype or "float32").as_in_context(_ctx(ctx))


@_mxnet_keywords
def eye(N, M=0, k=0, ctx=None, dtype=None):
    return array(_np.eye(N, M if M else N, k), ctx, dtype)


# ---- arithmetic with broadcasting -------------------------------------------------------------

def _as_array(x, like):
    return x if isinstance(x, NDArray) else _kiln.full((), float(x), like.dtype, like.context)


def _binary(op):
    def fn(lhs, rhs, out=None, name=None):
        if not isinstance(lhs, NDArray):
            lhs = _as_array(lhs, rhs)
        rhs = _as_array(rhs, lhs)
        if out is not None:
            _kiln.invoke_into(op, [lhs, rhs], [out])
            return out
        return _invoke1(op, [lhs, rhs])
    fn.__name__ = op
    return fn


add = broadcast_add = elemwise_add = broadcast_plus = _binary("Add")
subtract = broadcast_sub = elemwise_sub = broadcast_minus = _binary("Sub")
multiply = broadcast_mul = elemwise_mul = _binary("Mul")
divide = broadcast_div = elemwise_div = true_divide = _binary("Div")
power = broadcast_power = _binary("Pow")
maximum = broadcast_maximum = _binary("Max")
minimum = broadcast_minimum = _binary("Min")


def _comparison(method):
    def fn(lhs, rhs):
        return getattr(lhs, method)(rhs)
    return fn


equal = broadcast_equal = _comparison("__eq__")
not_equal = broadcast_not_equal = _comparison("__ne__")
greater = broadcast_greater = _comparison("__gt__")
greater_equal = broadcast_greater_equal = _comparison("__ge__")
lesser = broadcast_lesser = _comparison("__lt__")
lesser_equal = broadcast_lesser_equal = _comparison("__le__")


def where(condition, x, y):
    return _invoke1("Where", [condition.astype("bool"), x, y])


@_mxnet_keywords
def dot(lhs, rhs, transpose_a=False, transpose_b=False):
    if transpose_a:
        lhs = lhs.T
    if transpose_b:
        rhs = rhs.T
    return _kiln.dot(lhs, rhs)


@_mxnet_keywords
def batch_dot(lhs, rhs, transpose_a=False, transpose_b=False):
    if transpose_a:
        lhs = lhs.transpose((0, 2, 1))
    if transpose_b:
        rhs = rhs.transpose((0, 2, 1))
    return _kiln.dot(lhs, rhs)


# ---- elementwise math -------------------------------------------------------------------------

def _unary(op):
    def fn(data):
        return _invoke1(op, [data])
    fn.__name__ = op.lower()
    return _mxnet_keywords(fn)


exp = _unary("Exp")
log = _unary("Log")
sqrt = _unary("Sqrt")
abs = _unary("Abs")  # noqa: A001 (MXNet's name)
sign = _unary("Sign")
negative = _unary("Neg")
reciprocal = _unary("Reciprocal")
relu = _unary("Relu")
sigmoid = _unary("Sigmoid")
tanh = _unary("Tanh")
sin = _unary("Sin")
cos = _unary("Cos")
tan = _unary("Tan")
arcsin = _unary("Asin")
arccos = _unary("Acos")
arctan = _unary("Atan")
floor = _unary("Floor")
ceil = _unary("Ceil")
erf = _unary("Erf")
softsign = _unary("Softsign")
sinh = _unary("Sinh")
cosh = _unary("Cosh")
arcsinh = _unary("Asinh")
arccosh = _unary("Acosh")
arctanh = _unary("Atanh")
# MXNet's rounding: halves away from zero (round), towards zero (fix, trunc).
round = _unary("RoundHalfAway")  # noqa: A001 (MXNet's name)
fix = trunc = _unary("Trunc")
expm1 = _unary("Expm1")
log1p = _unary("Log1p")
log2 = _unary("Log2")
log10 = _unary("Log10")
cbrt = _unary("Cbrt")


@_mxnet_keywords
def square(data):
    return data * data


@_mxnet_keywords
def rsqrt(data):
    return reciprocal(sqrt(data))


@_mxnet_keywords
def log_softmax(data, axis=-1):
    return _invoke1("LogSoftmax", [data], axis=axis)


@_mxnet_keywords
def softmax(data, axis=-1):
    return _invoke1("Softmax", [data], axis=axis)


@_mxnet_keywords
def clip(data, a_min, a_max):
    return _invoke1("Clip", [data, _as_array(a_min, data), _as_array(a_max, data)])


@_mxnet_keywords
def Activation(data, act_type="relu"):
    ops = {"relu": "Relu", "sigmoid": "Sigmoid", "tanh": "Tanh", "softrelu": "Softplus",
           "softsign": "Softsign"}
    if act_type not in ops:
        raise ValueError(f"Activation: unknown act_type '{act_type}' (known: {', '.join(ops)})")
    return _invoke1(ops[act_type], [data])


@_mxnet_keywords
def LeakyReLU(data, act_type="leaky", slope=0.25):
    if act_type == "leaky":
        return _invoke1("LeakyRelu", [data], alpha=float(slope))
    if act_type == "elu":
        return _invoke1("Elu", [data], alpha=float(slope))
    if act_type == "gelu":
        return _invoke1("Gelu", [data])
    raise ValueError(f"LeakyReLU: unsupported act_type '{act_type}'")


# ---- reductions -------------------------------------------------------------------------------

@_mxnet_keywords
def sum(data, axis=None, keepdims=False, exclude=False):  # noqa: A001
    return data._reduce("ReduceSum", axis, keepdims, exclude)


@_mxnet_keywords
def mean(data, axis=None, keepdims=False, exclude=False):
    return data._reduce("ReduceMean", axis, keepdims, exclude)


@_mxnet_keywords
def max(data, axis=None, keepdims=False, exclude=False):  # noqa: A001
    return data._reduce("ReduceMax", axis, keepdims, exclude)


@_mxnet_keywords
def min(data, axis=None, keepdims=False, exclude=False):  # noqa: A001
    return data._reduce("ReduceMin", axis, keepdims, exclude)


@_mxnet_keywords
def prod(data, axis=None, keepdims=False, exclude=False):
    return data._reduce("ReduceProd", axis, keepdims, exclude)


@_mxnet_keywords
def norm(data, ord=2, axis=None, keepdims=False):  # noqa: A002
    if ord not in (1, 2):
        raise ValueError(f"norm: ord must be 1 or 2, got {ord}")
    return data._reduce("ReduceL2" if ord == 2 else "ReduceL1", axis, keepdims, False)


def _arg_reduce(op):
    @_mxnet_keywords
    def fn(data, axis=None, keepdims=False):
        if axis is None:  # over the flattened array, giving shape (1,)
            data, axis, keepdims = data.reshape((-1,)), 0, True
        # MXNet returns the indices as floats in the data's dtype.
        return _invoke1(op, [data], axis=axis, keepdims=int(keepdims)).astype(data.dtype)
    return fn


@_mxnet_keywords
def sum_axis(data, axis=None, keepdims=False):
    return sum(data, axis, keepdims)


argmax = _arg_reduce("ArgMax")
argmin = _arg_reduce("ArgMin")


@_mxnet_keywords
def topk(data, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32"):
    """The k largest (smallest with is_ascend) elements along `axis` (of the flattened array when
    None; k <= 0 takes them all): their indices, values, both, or a 0/1 mask of data's shape."""
    if ret_typ not in ("indices", "value", "both", "mask"):
        raise ValueError(f"topk: ret_typ must be indices, value, both or mask, got {ret_typ!r}")
    source = data.reshape((-1,)) if axis is None else data
    axis = -1 if axis is None else axis
    count = k if k > 0 else source.shape[axis]
    k_array = _kiln.full((1,), float(count), "int64", data.context)
    values, indices = _invoke("TopK", [source, k_array], {"axis": axis, "largest": int(not is_ascend)})
    if ret_typ == "value":
        return values
    if ret_typ == "both":
        return [values, indices.astype(dtype)]
    if ret_typ == "mask":
        ones = _invoke1("Expand", [full((), 1, dtype=data.dtype), array(indices.shape, dtype="int64")])
        mask = _invoke1("ScatterElements", [zeros_like(source), indices, ones], axis=axis)
        return mask.reshape(data.shape)
    return indices.astype(dtype)


@_mxnet_keywords
def sort(data, axis=-1, is_ascend=True):
    """The elements sorted along `axis` (of the flattened array when None)."""
    return topk(data, axis=axis, k=0, ret_typ="value", is_ascend=is_ascend)


@_mxnet_keywords
def argsort(data, axis=-1, is_ascend=True, dtype="float32"):
    """The indices that sort the elements along `axis` (of the flattened array when None)."""
    return topk(data, axis=axis, k=0, ret_typ="indices", is_ascend=is_ascend, dtype=dtype)


# ---- shapes -----------------------------------------------------------------------------------

@_mxnet_keywords
def reshape(data, shape=None):
    return data.reshape(shape)


@_mxnet_keywords
def transpose(data, axes=None):
    return data.transpose(axes)


@_mxnet_keywords
def flatten(data):
    return data.flatten()  # traced as Flatten, so exported graphs keep their batch size free


Flatten = flatten


def _expanded_shape(shape, axis):
    axis = axis if axis >= 0 else axis + len(shape) + 1
    return tuple(shape[:axis]) + (1,) + tuple(shape[axis:])


def _squeezed_shape(shape, axis):
    if axis is None:
        axes = [i for i, d in enumerate(shape) if d == 1]
    else:
        axes = [a % len(shape) for a in ((axis,) if isinstance(axis, int) else axis)]
    squeezed = tuple(d for i, d in enumerate(shape) if i not in axes)
    return squeezed if squeezed or not shape else (1,)  # MXNet keeps one axis of an all-ones shape


# NDArray's methods take inplace=: True gives a view sharing the array's memory, as in MXNet; the
# functions give copies. Kiln's own callers take views of the arrays they have just made.
def _expand_dims_method(self, axis, inplace=False):
    view = self.reshape(_expanded_shape(self.shape, axis))
    return view if inplace else view.copy()


def _squeeze_method(self, axis=None, inplace=False):
    view = self.reshape(_squeezed_shape(self.shape, axis))
    return view if inplace else view.copy()


@_mxnet_keywords
def expand_dims(data, axis):
    """A copy of `data` with a new axis of length 1 at `axis`."""
    return _expand_dims_method(data, axis)


@_mxnet_keywords
def squeeze(data, axis=None):
    """A copy of `data` without its length-1 axes (those of `axis`, or all)."""
    return _squeeze_method(data, axis)


_flatten_view = NDArray.flatten  # traced as Flatten, so exported graphs keep their batch size free


def _flatten_method(self, inplace=False):
    view = _flatten_view(self)
    return view if inplace else view.copy()


@_mxnet_keywords
def concat(*data, dim=1):
    return _invoke1("Concat", list(data), axis=dim)


@_mxnet_keywords
def stack(*data, axis=0):
    return concat(*[_expand_dims_method(d, axis, inplace=True) for d in data], dim=axis)


@_mxnet_keywords
def split(data, num_outputs, axis=1, squeeze_axis=False):
    outs = _invoke("Split", [data], {"axis": axis, "num_outputs": num_outputs}, num_outputs)
    if squeeze_axis:
        outs = [_squeeze_method(o, axis, inplace=True) for o in outs]
    return outs if num_outputs > 1 else outs[0]


@_mxnet_keywords
def slice_axis(data, axis, begin, end):
    n = data.shape[axis]
    end = n if end is None else end
    index = [_builtins.slice(None)] * (axis % data.ndim) + [_builtins.slice(begin, end)]
    return data[tuple(index)]


_INT64_MAX, _INT64_MIN = 2**63 - 1, -2**63


@_mxnet_keywords
def slice(data, begin, end, step=()):  # noqa: A001
    """data[begin[0]:end[0]:step[0], begin[1]:end[1]:step[1], ...] over the first len(begin) axes; a
    None bound or step takes its default (the whole axis, step 1), as MXNet's slice."""
    if len(begin) != len(end) or len(step) > len(begin):
        raise ValueError(f"slice: begin {tuple(begin)}, end {tuple(end)} and step {tuple(step)} must have "
                         "matching lengths")
    steps = [1 if s is None else int(s) for s in step] + [1] * (len(begin) - len(step))
    if 0 in steps:
        raise ValueError("slice: step 0 is not allowed")
    starts = [(0 if k > 0 else _INT64_MAX) if b is None else int(b) for b, k in zip(begin, steps)]
    ends = [(_INT64_MAX if k > 0 else _INT64_MIN) if e is None else int(e) for e, k in zip(end, steps)]
    axes = list(range(len(begin)))
    return _invoke1("Slice", [data] + [array(v, dtype="int64") for v in (starts, ends, axes, steps)])


crop = slice


def concatenate(arrays, axis=0, always_copy=True):
    """MXNet's older name for concat: the arrays joined along `axis` (always a new array)."""
    return concat(*arrays, dim=axis)


@_mxnet_keywords
def moveaxis(tensor, source, destination):
    """tensor with axis `source` moved to position `destination`, the others in their order."""
    ndim = tensor.ndim
    source, destination = source % ndim, destination % ndim
    order = [a for a in range(ndim) if a != source]
    order.insert(destination, source)
    return tensor.transpose(tuple(order))


@_mxnet_keywords
def repeat(data, repeats, axis=None):
    """Each element repeated `repeats` times along `axis` (of the flattened array when None), as
    numpy.repeat with one count."""
    if axis is None:
        data, axis = data.reshape((-1,)), 0
    axis %= data.ndim
    shape = data.shape
    columns = tile(_expand_dims_method(data, axis + 1, inplace=True), (1,) * (axis + 1) + (repeats,) + (1,) * (data.ndim - axis - 1))
    return columns.reshape(shape[:axis] + (shape[axis] * repeats,) + shape[axis + 1:])


def add_n(*args):
    """The elementwise sum of the arrays (MXNet's ElementWiseSum)."""
    if not args:
        raise ValueError("add_n: expected at least one array")
    total = args[0]
    for a in args[1:]:
        total = total + a
    return total


ElementWiseSum = add_n


@_mxnet_keywords
def tile(data, reps):
    reps = tuple(reps)
    if len(reps) < data.ndim:
        reps = (1,) * (data.ndim - len(reps)) + reps
    elif len(reps) > data.ndim:
        data = data.reshape((1,) * (len(reps) - data.ndim) + data.shape)
    return _invoke1("Tile", [data, array(reps, dtype="int64")])


@_mxnet_keywords
def broadcast_to(data, shape):
    shape = tuple(d if s == 0 else s for d, s in zip(data.shape, shape)) if len(shape) == data.ndim else shape
    return _invoke1("Expand", [data, array(shape, dtype="int64")])


@_mxnet_keywords
def broadcast_like(lhs, rhs):
    return broadcast_to(lhs, rhs.shape)


@_mxnet_keywords
def take(a, indices, axis=0):
    return _invoke1("Gather", [a, indices.astype("int64")], axis=axis)


@_mxnet_keywords
def one_hot(indices, depth, on_value=1.0, off_value=0.0, dtype="float32"):
    values = array([off_value, on_value], dtype=dtype)
    return _invoke1("OneHot", [indices.astype("int64"), array([depth], dtype="int64"), values], axis=-1)


@_mxnet_keywords
def cast(data, dtype):
    return data.astype(dtype)


Cast = cast


@_mxnet_keywords
def Dropout(data, p=0.5):
    from .. import autograd
    if not autograd.is_training() or p == 0:
        return data
    return _invoke("Dropout", [data, full((), p), full((), 1, dtype="bool")], {}, 1)[0]


def to_dlpack_for_read(data):
    return data.__dlpack__()


to_dlpack_for_write = to_dlpack_for_read


# ---- NDArray methods written on top of the functions above ------------------------------------

def _asscalar(self):
    if self.size != 1:
        raise ValueError(f"asscalar: the array must have exactly one element, its shape is {self.shape}")
    return self.asnumpy().reshape(()).item()


def _repr(self):
    shape = "x".join(str(d) for d in self.shape)
    return f"\n{self.asnumpy()}\n<NDArray {shape} @{self.context}>"


def _iter(self):
    for i in range(len(self)):
        yield self[i]


def _bool(self):
    if self.size != 1:
        raise ValueError("The truth value of an NDArray with more than one element is ambiguous.")
    return bool(self.asscalar())


def _array(self, dtype=None, copy=None):
    out = self.asnumpy()
    return out if dtype is None else out.astype(dtype)


# ---- random draws under MXNet 1.x's operator names (nd.random holds the distributions) ------------

def _rate_exponential(lam=1, shape=None, dtype=None, ctx=None, out=None, name=None):
    """The exponential distribution of rate lam (MXNet's operators take the rate, nd.random the scale)."""
    return random.exponential(1.0 / lam if not isinstance(lam, NDArray) else 1.0 / lam.astype("float64"), shape,
                              dtype, ctx, out)


uniform = random_uniform = sample_uniform = random.uniform
normal = random_normal = sample_normal = random.normal
random_gamma = sample_gamma = random.gamma
random_exponential = sample_exponential = _rate_exponential
random_poisson = sample_poisson = random.poisson
random_negative_binomial = sample_negative_binomial = random.negative_binomial
random_generalized_negative_binomial = sample_generalized_negative_binomial = random.generalized_negative_binomial
random_randint = random.randint
sample_multinomial = random.multinomial
shuffle = random.shuffle


def _tostype(self, stype):
    """A dense copy for 'default'; Kiln has no sparse storage for 'row_sparse' or 'csr'."""
    _dense(stype, "tostype")
    return self.copy()


# MXNet pickles an array as {'handle': its record in the .params format}: the bytes of one array
# in a .params file, between the file's header (magic, reserved, count 1) and its name count (0).
_PARAMS_HEADER = _struct.pack("<QQQ", 0x112, 0, 1)
_NO_NAMES = _struct.pack("<Q", 0)


def _from_record(record):
    return load_frombuffer(_PARAMS_HEADER + bytes(record) + _NO_NAMES)[0]


def _getstate(self):
    data = _kiln._save_to_bytes([self])
    return {"handle": bytearray(data[len(_PARAMS_HEADER):-len(_NO_NAMES)])}


def _setstate(self, state):
    """Fills this array from a pickled state (of the same shape and dtype)."""
    loaded = _from_record(state["handle"])
    if loaded.shape != self.shape or loaded.dtype != self.dtype:
        raise ValueError(f"__setstate__: the state holds shape {loaded.shape} {loaded.dtype}, this array is "
                         f"{self.shape} {self.dtype}")
    self[:] = loaded


def _reduce(self):
    return _from_record, (bytes(_getstate(self)["handle"]),)


_METHODS = {
    "__getstate__": _getstate, "__setstate__": _setstate, "__reduce__": _reduce,
    "tostype": _tostype, "repeat": repeat,
    "asscalar": _asscalar, "__repr__": _repr, "__str__": _repr, "__iter__": _iter, "__bool__": _bool,
    "__float__": lambda self: float(_asscalar(self)), "__int__": lambda self: int(_asscalar(self)),
    "__array__": _array, "tolist": lambda self: self.asnumpy().tolist(),
    "sum": sum, "mean": mean, "max": max, "min": min, "prod": prod, "norm": norm,
    "argmax": argmax, "argmin": argmin, "topk": topk, "sort": sort, "argsort": argsort,
    "exp": exp, "log": log, "sqrt": sqrt, "square": square, "abs": abs, "sign": sign,
    "relu": relu, "sigmoid": sigmoid, "tanh": tanh, "softmax": softmax, "log_softmax": log_softmax,
    "clip": clip, "expand_dims": _expand_dims_method, "squeeze": _squeeze_method, "flatten": _flatten_method,
    "tile": tile, "broadcast_to": broadcast_to, "broadcast_like": broadcast_like,
    "zeros_like": zeros_like, "ones_like": ones_like, "slice_axis": slice_axis, "slice": slice, "take": take,
    "one_hot": one_hot, "split": split,
}
from . import mxnet_ops as _mxnet_ops  # noqa: E402 (it builds on the functions above)
from .mxnet_ops import (rint, rcbrt, degrees, radians, softmin, nansum, nanprod, argmax_channel,  # noqa: E402
                        shape_array, size_array, flip, reverse, split_v2, slice_like, reshape_like,
                        broadcast_axes, broadcast_axis, pick, pad, choose_element_0index, fill_element_0index,
                        onehot_encode)

_METHODS.update(_mxnet_ops.FLUENT)
_METHODS.update({"sin": sin, "cos": cos, "tan": tan, "arcsin": arcsin, "arccos": arccos, "arctan": arctan,
                 "reciprocal": reciprocal, "rsqrt": rsqrt})
for _name, _fn in _METHODS.items():
    setattr(NDArray, _name, _fn)
NDArray.stype = "default"  # Kiln's arrays are dense
NDArray.__array_priority__ = 1000.0  # numpy defers `ndarray op NDArray` to NDArray's operators

__all__ = [name for name in dir() if not name.startswith("_")]
