"""Post-training INT8 quantization (MXNet 1.9's mx.contrib.quantization): quantize_model for a
symbol and its parameters, quantize_net for a Gluon HybridBlock.

    qsym, qarg_params, aux_params = mx.contrib.quantization.quantize_model(
        sym, arg_params, aux_params, data_names=('data',), calib_mode='entropy',
        calib_data=batches, num_calib_batches=10, quantized_dtype='auto')
    exe = qsym.simple_bind(mx.cpu(), data=(1, 3, 224, 224), grad_req='null')
    exe.copy_params_from(qarg_params, aux_params)
    out = exe.forward(data=x)[0]

Kiln's quantizer (kiln/quantize.hpp) does the work: BatchNorm folds into the Conv before it, the
float model runs over the calibration batches, a threshold is chosen per activation that a Conv,
FullyConnected or dot reads (`naive`: the largest magnitude, `entropy`: least KL divergence as
MXNet chooses it, `percentile`: a percentile of magnitudes), and the symbol is rewritten into
ONNX's QDQ form: QuantizeLinear -> DequantizeLinear pairs on those activations and int8 weights
(per output channel, symmetric) read through DequantizeLinear. The returned arg_params hold the
int8 weights, float32 scales and int8/uint8 zero points.

MXNet has no QuantizeLinear or DequantizeLinear: the symbol holds them as `_kiln_QuantizeLinear`
and `_kiln_DequantizeLinear` nodes, which Kiln reads back unchanged, so `qsym.tojson()`,
`qsym.save(...)` and `mx.sym.load(...)` round-trip it, but MXNet itself cannot load it. Saved with
its parameters (`qsym.save('q-symbol.json')`, `mx.nd.save('q-0000.params', {'arg:' + k: v, ...,
'aux:' + k: v, ...})`),
`mx.Predictor('q-symbol.json')` runs it on Kiln's int8 kernels; simple_bind/bind run it too (every
parameter variable carries `__shape__` and `__dtype__`), with the QDQ nodes computed as written.
"""
import json
import os
import tempfile

import numpy as np

from .. import _kiln
from ..base import KilnError
from ..context import cpu
from ..ndarray import NDArray, array, zeros, load as nd_load, save as nd_save
from ..symbol import Symbol, load as sym_load

_CALIB_MODES = ("none", "naive", "entropy", "percentile")
_DTYPES = ("int8", "uint8", "auto")


def _fail(message):
    raise KilnError(f"quantize_model: {message}")


def _load_sym(sym):
    if isinstance(sym, str):
        return sym_load(sym)
    if not isinstance(sym, Symbol):
        _fail(f"sym must be a Symbol or the path of a -symbol.json file, got {type(sym).__name__}")
    return sym


def _load_params(arg_params, aux_params):
    """arg_params and aux_params as dicts of NDArrays; a .params path (arg:/aux: names) fills both."""
    def as_dict(value, what):
        if value is None:
            return {}
        if not isinstance(value, dict):
            _fail(f"{what} must be a dict of name to NDArray, got {type(value).__name__}")
        out = {}
        for name, v in value.items():
            if not isinstance(v, NDArray):
                if not isinstance(v, np.ndarray):
                    _fail(f"{what}['{name}'] must be an NDArray or a numpy array, got {type(v).__name__}")
                v = array(v, dtype=v.dtype)
            out[name] = v
        return out
    if isinstance(arg_params, str):
        loaded = nd_load(arg_params)
        arg_params = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
        aux_params = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
    return as_dict(arg_params, "arg_params"), as_dict(aux_params, "aux_params")


def _names(value, what):
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        _fail(f"{what} must be a list of strings, got {value!r}")
    return list(value)


def _batch_arrays(batch):
    """The arrays of one calibration batch: a DataBatch (its .data), a list or tuple, a dict or one array."""
    if hasattr(batch, "data") and not isinstance(batch, (NDArray, np.ndarray)):
        batch = batch.data
    if isinstance(batch, dict):
        return batch
    if isinstance(batch, (list, tuple)):
        return list(batch)
    return [batch]


def _as_float32(value, where):
    if isinstance(value, NDArray):
        return value if value.dtype == np.float32 else value.astype("float32")
    try:
        values = np.ascontiguousarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        _fail(f"calib_data: {where} is not an array (got {type(value).__name__})")
    return array(values, dtype="float32")


def _calibration_batches(calib_data, data_names, num_calib_examples, num_calib_batches, counter, logger=None):
    """{data name: float32 NDArray} per batch of calib_data, up to the limits; the arrays of a batch
    go to data_names in order, and any further ones (labels) are left out. With a logger, each
    batch is logged as it is taken (calibration of a large set takes minutes)."""
    try:
        batches = iter(calib_data)
    except TypeError:
        _fail(f"calib_data must be an iterable of batches, got {type(calib_data).__name__}")
    examples = 0
    for index, batch in enumerate(batches):
        if num_calib_batches is not None and index >= num_calib_batches:
            return
        if num_calib_examples is not None and examples >= num_calib_examples:
            return
        arrays = _batch_arrays(batch)
        if isinstance(arrays, dict):
            missing = [n for n in data_names if n not in arrays]
            if missing:
                _fail(f"calib_data: batch {index} has no array named {missing[0]!r} (data_names {data_names})")
            named = {n: _as_float32(arrays[n], f"batch {index} '{n}'") for n in data_names}
        else:
            if len(arrays) < len(data_names):
                _fail(f"calib_data: batch {index} has {len(arrays)} arrays for data_names {data_names}")
            named = {n: _as_float32(a, f"batch {index} '{n}'") for n, a in zip(data_names, arrays)}
        examples += named[data_names[0]].shape[0] if named[data_names[0]].ndim else 1
        counter[0] += 1
        if logger:
            logger.info("Calibration: batch %d (%d examples)", counter[0], examples)
        yield named


def _data_shapes(data_shapes):
    """{name: shape with the batch dimension free (-1)} from a dict, (name, shape) pairs or DataDescs."""
    if data_shapes is None:
        return {}
    items = data_shapes.items() if isinstance(data_shapes, dict) else data_shapes
    shapes = {}
    try:
        for item in items:
            name, shape = (item.name, item.shape) if hasattr(item, "shape") else item
            shapes[name] = (-1,) + tuple(int(d) for d in shape)[1:]
    except (TypeError, ValueError):
        _fail(f"data_shapes must map names to shapes, got {data_shapes!r}")
    return shapes


def _positive(value, what):
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        _fail(f"{what} must be a positive int or None, got {value!r}")


def quantize_model(sym, arg_params, aux_params, data_names=("data",), label_names=("softmax_label",),
                   ctx=None, excluded_sym_names=None, excluded_op_names=None, calib_mode="entropy",
                   calib_data=None, num_calib_examples=None, quantized_dtype="int8", quantize_mode="smart",
                   quantize_granularity=None, logger=None, num_calib_batches=None, percentile=99.99,
                   data_shapes=None):
    """Quantizes a float model to INT8; returns (qsym, qarg_params, aux_params).

    sym : Symbol or str
        The float network, or the path of its -symbol.json.
    arg_params, aux_params : dict of name to NDArray (or numpy array)
        Its parameters; arg_params may instead be the path of a .params file (arg:/aux: names).
    data_names : list of str
        The inputs the calibration batches feed, in the order of a batch's arrays.
    label_names : list of str
        Arguments that are labels (never read at inference; need no parameter).
    ctx : Context
        The CPU (Kiln calibrates and runs on the CPU).
    excluded_sym_names : list of str
        Op nodes kept in float, by name (`conv0`, `fc1`, ...).
    excluded_op_names : list of str
        MXNet ops whose nodes are kept in float (`Convolution`, `FullyConnected`, ...).
    calib_mode : 'entropy' | 'naive' | 'percentile' | 'none'
        How thresholds are chosen (see the module). 'none' calibrates nothing: the weights of
        FullyConnected and dot are quantized and their inputs are quantized on every call over
        their own range (Kiln's dynamic quantization); Convolutions then stay float.
    calib_data : iterable of batches
        Each batch is an NDArray or numpy array, a list or tuple of them (one per data name;
        further ones, such as labels, are left out), a dict by data name, or an MXNet-style
        DataBatch (its `.data`); an mx.io.DataIter or gluon DataLoader works as is.
    num_calib_examples : int
        Stop once this many examples were seen (MXNet 1.9's limit; whole batches are used).
    num_calib_batches : int
        Stop after this many batches.
    quantized_dtype : 'int8' | 'uint8' | 'auto'
        The 8-bit type of activations: 'auto' takes uint8 for tensors never negative in
        calibration (after a Relu) and int8 for others; 'uint8' clips negative values to 0.
    quantize_mode : 'smart'
        What Kiln does: every Conv, FullyConnected and dot with constant weights not excluded is
        quantized, and the ops between them stay float. MXNet's 'full' (every op quantized) is
        refused.
    quantize_granularity : None | 'channel-wise'
        Kiln quantizes weights per output channel; MXNet's 'tensor-wise' (one scale per weight
        tensor, MXNet's default) is refused rather than ignored.
    percentile : float
        The percentile of magnitudes that calib_mode 'percentile' takes as the threshold.
    data_shapes : dict of name to shape, or a list of (name, shape) pairs or DataDesc
        The inputs' shapes, needed for calib_mode 'none' where a data variable has no
        `__shape__`; otherwise the first calibration batch gives them. The batch dimension stays
        free: the quantized symbol takes any batch size.

    Errors are KilnError naming the argument.
    """
    return _quantize(sym, arg_params, aux_params, data_names, label_names, ctx, excluded_sym_names,
                     excluded_op_names, calib_mode, calib_data, num_calib_examples, quantized_dtype, quantize_mode,
                     quantize_granularity, logger, num_calib_batches, percentile, _data_shapes(data_shapes))


def _quantize(sym, arg_params, aux_params, data_names, label_names, ctx, excluded_sym_names, excluded_op_names,
              calib_mode, calib_data, num_calib_examples, quantized_dtype, quantize_mode, quantize_granularity,
              logger, num_calib_batches, percentile, shapes):
    """quantize_model with the inputs' shapes as the quantized symbol will take them."""
    sym = _load_sym(sym)
    arg_params, aux_params = _load_params(arg_params, aux_params)
    data_names = _names(data_names, "data_names")
    label_names = _names(label_names, "label_names")
    excluded_sym_names = _names(excluded_sym_names, "excluded_sym_names")
    excluded_op_names = _names(excluded_op_names, "excluded_op_names")
    if ctx is not None and ctx != cpu():
        _fail(f"ctx must be the CPU, got {ctx}")
    if calib_mode not in _CALIB_MODES:
        _fail(f"calib_mode must be one of {', '.join(map(repr, _CALIB_MODES))}, got {calib_mode!r}")
    if quantized_dtype not in _DTYPES:
        _fail(f"quantized_dtype must be one of {', '.join(map(repr, _DTYPES))}, got {quantized_dtype!r}")
    if quantize_mode != "smart":
        _fail(f"quantize_mode must be 'smart' (Kiln quantizes the ops with int8 kernels and keeps the rest "
              f"float), got {quantize_mode!r}")
    if quantize_granularity not in (None, "channel-wise"):
        _fail(f"quantize_granularity must be 'channel-wise' (Kiln's weights are quantized per output channel), "
              f"got {quantize_granularity!r}")
    _positive(num_calib_examples, "num_calib_examples")
    _positive(num_calib_batches, "num_calib_batches")
    if not isinstance(percentile, (int, float)) or not 0 < percentile <= 100:
        _fail(f"percentile must be in (0, 100], got {percentile!r}")

    arguments = sym.list_arguments()
    for name in data_names:
        if name not in arguments:
            _fail(f"data_names: {name!r} is not an argument of sym (arguments: {arguments})")
    for name in arguments:
        if name not in data_names and name not in label_names and name not in arg_params:
            _fail(f"arg_params has no {name!r}, an argument of sym that is not in data_names or label_names")
    for name in sym.list_auxiliary_states():
        if name not in aux_params:
            _fail(f"aux_params has no {name!r}, an auxiliary state of sym")
    graph_nodes = json.loads(sym.tojson())["nodes"]
    nodes = [n for n in graph_nodes if n["op"] != "null"]
    node_names = {n["name"] for n in nodes}
    for name in excluded_sym_names:
        if name not in node_names:
            _fail(f"excluded_sym_names: {name!r} is not an op node of sym")
    excluded = excluded_sym_names + [n["name"] for n in nodes if n["op"] in excluded_op_names]

    if calib_mode == "none":
        for n in graph_nodes:
            if n["op"] == "null" and n["name"] in data_names and n["name"] not in shapes \
                    and "__shape__" not in n.get("attrs", {}):
                _fail(f"data_shapes must give the shape of {n['name']!r} for calib_mode 'none'")
    counter = [0]
    batches = None
    if calib_mode != "none":
        if calib_data is None:
            _fail(f"calib_data must be given for calib_mode {calib_mode!r}")
        batches = _calibration_batches(calib_data, data_names, num_calib_examples, num_calib_batches, counter,
                                       logger)
    if logger:
        logger.info("Quantizing symbol (calib_mode %s, quantized_dtype %s)", calib_mode, quantized_dtype)
    qsym, qarg_params, qaux_params, _ = _kiln.quantization.quantize_symbol(
        sym, arg_params, aux_params, batches, calib_mode, float(percentile), -1, quantized_dtype, excluded, [], shapes)
    if logger:
        logger.info("Calibrated on %d batches", counter[0])
    return qsym, qarg_params, qaux_params


def _save(prefix, epoch, qsym, qarg_params, aux_params):
    qsym.save(f"{prefix}-symbol.json")
    nd_save(f"{prefix}-{epoch:04d}.params", {**{"arg:" + k: v for k, v in qarg_params.items()},
                                            **{"aux:" + k: v for k, v in aux_params.items()}})


def _shape_list(data_shapes):
    """Input shapes from DataDesc objects, (name, shape) pairs or shapes."""
    shapes = []
    try:
        for item in data_shapes:
            if hasattr(item, "shape"):
                item = item.shape
            elif isinstance(item, (list, tuple)) and len(item) == 2 and isinstance(item[0], str):
                item = item[1]
            shapes.append(tuple(int(d) for d in item))
    except (TypeError, ValueError):
        _fail(f"data_shapes must be a list of shapes, (name, shape) pairs or DataDesc, got {data_shapes!r}")
    return shapes


class QuantizedNet:
    """What quantize_net returns in place of MXNet's SymbolBlock (which would run the QDQ nodes one by
    one, in fp32): the quantized symbol and parameters (`symbol`, `arg_params`, `aux_params`), callable like the
    network it came from, on a Predictor that runs Kiln's int8 kernels; `export` writes the files."""

    def __init__(self, qsym, qarg_params, aux_params, data_names):
        self.symbol, self.arg_params, self.aux_params = qsym, qarg_params, aux_params
        self.data_names = list(data_names)
        with tempfile.TemporaryDirectory() as folder:
            prefix = os.path.join(folder, "quantized")
            _save(prefix, 0, qsym, qarg_params, aux_params)
            self._predictor = _kiln.Predictor(prefix + "-symbol.json")

    def __call__(self, *inputs):
        if len(inputs) != len(self.data_names):
            raise KilnError(f"QuantizedNet: {len(inputs)} inputs given for {self.data_names}")
        outputs = self._predictor.predict({n: _as_float32(x, f"input '{n}'") for n, x in zip(self.data_names, inputs)})
        return outputs[0] if len(outputs) == 1 else outputs

    forward = __call__

    def export(self, path, epoch=0):
        """Writes PATH-symbol.json and PATH-EPOCH.params (Kiln-only: see the module)."""
        _save(path, epoch, self.symbol, self.arg_params, self.aux_params)


def quantize_net(network, quantized_dtype="auto", quantize_mode="smart", quantize_granularity=None,
                 exclude_layers=None, exclude_layers_match=None, exclude_operators=None, calib_data=None,
                 data_shapes=None, calib_mode="none", num_calib_examples=None, ctx=None, logger=None,
                 num_calib_batches=None):
    """Quantizes a Gluon HybridBlock (MXNet 1.9's quantize_net / quantize_net_v2): the network is
    traced on zeros of the input shapes (from data_shapes, else the first calibration batch),
    exported, and its symbol quantized by quantize_model; exclude_layers are node names of the
    exported symbol, exclude_layers_match substrings of them, exclude_operators MXNet op names.
    Returns a QuantizedNet, on the fused int8 kernels (MXNet returns a SymbolBlock), which takes
    any batch size, as the exported network does."""
    exclude_layers = _names(exclude_layers, "exclude_layers")
    exclude_layers_match = _names(exclude_layers_match, "exclude_layers_match")
    if data_shapes is not None:
        shapes = _shape_list(data_shapes)
    elif calib_data is not None:
        first = next(iter(calib_data), None)
        if first is None:
            _fail("calib_data gave no batch")
        arrays = _batch_arrays(first)
        shapes = [tuple(a.shape) for a in (arrays.values() if isinstance(arrays, dict) else arrays)]
    else:
        _fail("quantize_net needs data_shapes or calib_data to know the input shapes")
    network.hybridize()
    traced = [zeros(shape) for shape in shapes]
    while True:  # as MXNet does: trailing arrays the network does not take (labels) are dropped
        try:
            network(*traced)
            break
        except (TypeError, KilnError):
            if len(traced) == 1:
                raise
            traced.pop()
            shapes.pop()
    with tempfile.TemporaryDirectory() as folder:
        prefix = os.path.join(folder, "net")
        network.export(prefix, 0)
        sym = sym_load(prefix + "-symbol.json")
        loaded = nd_load(prefix + "-0000.params")
    arg_params = {k[4:]: v for k, v in loaded.items() if k.startswith("arg:")}
    aux_params = {k[4:]: v for k, v in loaded.items() if k.startswith("aux:")}
    data_names = [n for n in sym.list_arguments() if n not in arg_params]
    nodes = [n["name"] for n in json.loads(sym.tojson())["nodes"] if n["op"] != "null"]
    excluded = exclude_layers + [n for n in nodes for m in exclude_layers_match if m in n and n not in exclude_layers]
    qsym, qarg_params, qaux_params = _quantize(
        sym, arg_params, aux_params, data_names, (), ctx, excluded, _names(exclude_operators, "exclude_operators"),
        calib_mode, calib_data, num_calib_examples, quantized_dtype, quantize_mode, quantize_granularity, logger,
        num_calib_batches, 99.99, _data_shapes(list(zip(data_names, shapes))))
    return QuantizedNet(qsym, qarg_params, qaux_params, data_names)


__all__ = ["quantize_model", "quantize_net", "QuantizedNet"]
