"""The symbolic API (mx.sym): build a network as a graph of named MXNet ops, list its arguments,
infer shapes, save it as -symbol.json, and bind it to run (Executor: forward, backward, outputs).

The op constructors of the C++ Symbol API (kiln/symbol.hpp) make their parameter variables with
MXNet's names; any other MXNet op name builds a node through Symbol.Create, whose attributes are
written the way MXNet's Python front end writes them. Binding imports the graph through Kiln's
MXNet importer, which names every op it cannot convert.
"""
from . import _kiln

_s = _kiln.symbol
Symbol = _s.Symbol
Executor = _s.Executor
Group = _s.Group
load = _s.load
load_json = _s.load_json


def _attr_text(value):
    """An attribute as MXNet's Python front end writes it."""
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (list, tuple)):
        items = ", ".join(_attr_text(v) for v in value)
        return f"({items},)" if len(value) == 1 else f"({items})"
    return str(value)


def Variable(name, attr=None, shape=None, lr_mult=None, wd_mult=None, dtype=None, init=None, stype=None,
             **kwargs):
    """A variable; as in MXNet, `init` is kept as its `__init__` attribute (an initializer's
    dumps() text), and other keywords as `__key__` attributes."""
    attrs = {k: str(v) for k, v in (attr or {}).items()}
    if init is not None:
        if isinstance(init, str):
            attrs["__init__"] = init
        elif hasattr(init, "dumps"):
            attrs["__init__"] = init.dumps()
        else:
            raise TypeError(f"Variable {name!r}: init must be an initializer or its dumps() text, got {init!r}")
    if stype not in (None, "default"):
        raise ValueError(f"Variable {name!r}: stype {stype!r} is not supported (Kiln's arrays are dense)")
    for key, value in kwargs.items():
        if not (key.startswith("__") and key.endswith("__")):
            raise TypeError(f"Variable {name!r}: unexpected keyword {key!r} (extra attributes are written "
                            "__name__=value, as in MXNet)")
        attrs[key] = str(value)
    if shape is not None:
        attrs["__shape__"] = _attr_text(tuple(shape))
    if lr_mult is not None:
        attrs["__lr_mult__"] = str(lr_mult)
    if wd_mult is not None:
        attrs["__wd_mult__"] = str(wd_mult)
    if dtype is not None:
        import numpy as np
        attrs["__dtype__"] = str({"float32": 0, "float64": 1, "float16": 2, "uint8": 3, "int32": 4, "int8": 5,
                                  "int64": 6, "bool": 7, "int16": 8, "uint16": 9, "uint32": 10,
                                  "uint64": 11}[np.dtype(dtype).name])
    return _s.Variable(name, attrs)


var = Variable


def _create(op, *args, name=None, attr=None, **kwargs):
    inputs = [a for a in args if isinstance(a, Symbol)]
    attrs = {k: str(v) for k, v in (attr or {}).items()}  # MXNet keeps them on the node as given
    for key, value in kwargs.items():
        if isinstance(value, Symbol):
            inputs.append(value)
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, Symbol) for v in value):
            inputs.extend(value)
        elif value is not None:
            attrs[key] = _attr_text(value)
    if op in ("Concat", "concat", "add_n", "ElementWiseSum", "stack"):
        attrs.setdefault("num_args", str(len(inputs)))
    return _s._create(op, inputs, attrs, name or "")


def _with_params(op, param_inputs, args, name, kwargs, attr=None):
    """A generic node whose parameter variables not given are made as MXNet makes them
    (NAME_weight, ...), in the op's input order."""
    data = kwargs.pop("data", None)
    if data is None:
        data, args = args[0], args[1:]
    given = {p: kwargs.pop(p) for p in param_inputs if p in kwargs}
    skip = {"bias"} if kwargs.get("no_bias", op == "Deconvolution") else set()
    if name is None:  # MXNet's automatic name, as a node of this op takes it
        name = _create(op, data, *args, **kwargs).name
    inputs = [data] + [given[p] if p in given else Variable(f"{name}_{p}") for p in param_inputs if p not in skip]
    return _create(op, *inputs, *args, name=name, attr=attr, **kwargs)


def _typed(op, cpp_fn, param_inputs):
    """The C++ constructor when the parameter variables are left to it, else a generic node."""
    def fn(*args, name=None, attr=None, **kwargs):
        # cuDNN's tuning hints and workspace size change nothing on the CPU, as in MXNet's CPU build.
        for hint in ("cudnn_tune", "workspace", "cudnn_off"):
            kwargs.pop(hint, None)
        layout = kwargs.pop("layout", None)
        if layout not in (None, "NCW", "NCHW", "NCDHW"):
            raise ValueError(f"{op}: layout {layout!r} is not supported; Kiln runs the channels-first layouts "
                             "(NCW, NCHW, NCDHW): transpose the data instead")
        if attr or any(k in kwargs for k in param_inputs):
            return _with_params(op, param_inputs, args, name, kwargs, attr)
        data = kwargs.pop("data", None)
        if data is None:
            data, args = args[0], args[1:]
        return cpp_fn(data, *args, name=name or "", **kwargs)
    fn.__name__ = op
    return fn


FullyConnected = _typed("FullyConnected", _s.FullyConnected, ("weight", "bias"))
Convolution = _typed("Convolution", _s.Convolution, ("weight", "bias"))
Deconvolution = _typed("Deconvolution", _s.Deconvolution, ("weight", "bias"))
BatchNorm = _typed("BatchNorm", _s.BatchNorm, ("gamma", "beta", "moving_mean", "moving_var"))
SoftmaxOutput = _typed("SoftmaxOutput", _s.SoftmaxOutput, ("label",))
Activation = _typed("Activation", _s.Activation, ())
Pooling = _typed("Pooling", _s.Pooling, ())
Flatten = flatten = _typed("Flatten", _s.Flatten, ())
Dropout = _typed("Dropout", _s.Dropout, ())
Reshape = _typed("Reshape", _s.Reshape, ())
softmax = _typed("softmax", _s.softmax, ())


def Concat(*data, dim=1, name=None, **kwargs):
    return _s.Concat(list(data), dim, name or "")


concat = Concat

for _op in ("elemwise_add", "elemwise_sub", "elemwise_mul", "elemwise_div", "broadcast_add", "broadcast_sub",
            "broadcast_mul", "broadcast_div"):
    globals()[_op] = (lambda cpp: (lambda lhs, rhs, name=None, **kw: cpp(lhs, rhs, name or "")))(getattr(_s, _op))


def __getattr__(op):
    """Any other MXNet op: mx.sym.dot(a, b), mx.sym.reshape(x, shape=(1, 4)), ..."""
    if op.startswith("__"):
        raise AttributeError(op)

    def fn(*args, **kwargs):
        return _create(op, *args, **kwargs)
    fn.__name__ = op
    return fn


# ---- Symbol methods written on top of the bindings ---------------------------------------------

def _infer_shape(self, *args, **kwargs):
    if args:
        kwargs.update({n: s for n, s in zip(self.list_arguments(), args) if s is not None})
    arg_shapes, out_shapes, aux_shapes, complete = self._infer_shape(kwargs)
    return (arg_shapes, out_shapes, aux_shapes) if complete else (None, None, None)


def _infer_shape_partial(self, *args, **kwargs):
    if args:
        kwargs.update({n: s for n, s in zip(self.list_arguments(), args) if s is not None})
    return self._infer_shape(kwargs)[:3]


def _eval(self, ctx=None, **kwargs):
    shapes = {k: v.shape for k, v in kwargs.items()}
    exe = self.simple_bind(ctx or _kiln.cpu(), grad_req="null", **shapes)
    return exe.forward(**kwargs)


def _repr(self):
    try:
        return f"<Symbol {self.name}>"
    except _kiln.KilnError:
        return f"<Symbol group [{', '.join(self.list_outputs())}]>"


def _from_json(text):
    """The inverse of tojson(), by a name pickle can store."""
    return load_json(text)


Symbol.infer_shape = _infer_shape
Symbol.infer_shape_partial = _infer_shape_partial
Symbol.eval = _eval
Symbol.__repr__ = _repr
Symbol.__rsub__ = lambda self, other: _create("_rminus_scalar", self, scalar=float(other))
Symbol.__rtruediv__ = lambda self, other: _create("_rdiv_scalar", self, scalar=float(other))
Symbol.__pow__ = lambda self, other: (_create("_power", self, other) if isinstance(other, Symbol)
                                      else _create("_power_scalar", self, scalar=float(other)))
Symbol.__neg__ = lambda self: _create("_mul_scalar", self, scalar=-1.0)
Symbol.__abs__ = lambda self: _create("abs", self)
# A symbol is an immutable graph description: pickles, and so copy.copy and copy.deepcopy, go
# through its JSON, as MXNet's do.
Symbol.__reduce__ = lambda self: (_from_json, (self.tojson(),))

__all__ = ["Symbol", "Executor", "Variable", "var", "Group", "load", "load_json"]
