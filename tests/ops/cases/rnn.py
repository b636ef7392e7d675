"""numpy cases for the recurrent family (RNN, GRU, LSTM) beyond ONNX's own tests: bidirectional runs,
sequence_lens shorter than the sequence (and 0), layout 1 with initial states, clip, every activation
function with and without alpha/beta, linear_before_reset, input_forget, peepholes, every float dtype,
partial outputs and empty batches/sequences.

The reference runs each sequence on its own, one step at a time, in float64, straight from the
ONNX equations. Where ONNX leaves a detail open it follows ONNX Runtime: clip bounds the gate
pre-activations (not the LSTM cell state fed to h), a sequence runs in reverse over its own length,
and a sequence of length 0 has zero final states.
"""

import ml_dtypes
import numpy as np
from casefile import write_case

RNG = np.random.default_rng(20261130)

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ["Tanh"], "GRU": ["Sigmoid", "Tanh"], "LSTM": ["Sigmoid", "Tanh", "Tanh"]}


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name: (function of (x, alpha, beta), takes alpha, takes beta, default alpha, default beta)
ACTIVATIONS = {
    "relu": (lambda x, a, b: np.maximum(x, 0), False, False, 0, 0),
    "tanh": (lambda x, a, b: np.tanh(x), False, False, 0, 0),
    "sigmoid": (lambda x, a, b: _sigmoid(x), False, False, 0, 0),
    "affine": (lambda x, a, b: a * x + b, True, True, 1.0, 0.0),
    "leakyrelu": (lambda x, a, b: np.where(x >= 0, x, a * x), True, False, 0.01, 0),
    "thresholdedrelu": (lambda x, a, b: np.where(x > a, x, 0), True, False, 1.0, 0),
    "scaledtanh": (lambda x, a, b: a * np.tanh(b * x), True, True, 1.0, 1.0),
    "hardsigmoid": (lambda x, a, b: np.clip(a * x + b, 0, 1), True, True, 0.2, 0.5),
    "elu": (lambda x, a, b: np.where(x >= 0, x, a * np.expm1(x)), True, False, 1.0, 0),
    "softsign": (lambda x, a, b: x / (1 + np.abs(x)), False, False, 0, 0),
    "softplus": (lambda x, a, b: np.logaddexp(0, x), False, False, 0, 0),
}


def resolve_activations(op, names, alphas, betas, dirs):
    """Per direction, the list of activation callables; alpha/beta consumed in order by the functions
    that take them."""
    per = len(DEFAULT_ACTIVATIONS[op])
    names = names or DEFAULT_ACTIVATIONS[op]
    alphas, betas = list(alphas or []), list(betas or [])
    funcs = []
    for name in names:
        fn, takes_a, takes_b, a, b = ACTIVATIONS[name.lower()]
        if takes_a and alphas:
            a = alphas.pop(0)
        if takes_b and betas:
            b = betas.pop(0)
        funcs.append(lambda x, fn=fn, a=a, b=b: fn(x, a, b))
    if len(funcs) == 2 * per and dirs == 2:
        return [funcs[:per], funcs[per:]]
    return [funcs[:per]] * dirs


def recurrent(op, X, W, R, B=None, lens=None, h0=None, c0=None, P=None, direction="forward", layout=0,
              activations=None, alpha=None, beta=None, clip=None, linear_before_reset=0, input_forget=0):
    """Returns Y, Y_h and (LSTM) Y_c in float64."""
    f64 = lambda a: None if a is None else np.asarray(a, dtype=np.float64)  # noqa: E731
    X, W, R, B, h0, c0, P = map(f64, (X, W, R, B, h0, c0, P))
    if layout == 1:
        X = X.swapaxes(0, 1)
        h0 = None if h0 is None else h0.swapaxes(0, 1)
        c0 = None if c0 is None else c0.swapaxes(0, 1)
    seq, batch, _ = X.shape
    dirs, H = W.shape[0], R.shape[2]
    G = GATES[op]
    B = np.zeros((dirs, 2 * G * H)) if B is None else B
    P = np.zeros((dirs, 3 * H)) if P is None else P
    h0 = np.zeros((dirs, batch, H)) if h0 is None else h0
    c0 = np.zeros((dirs, batch, H)) if c0 is None else c0
    lens = [seq] * batch if lens is None else [int(v) for v in lens]
    acts = resolve_activations(op, activations, alpha, beta, dirs)
    bound = (lambda x: np.clip(x, -clip, clip)) if clip is not None else (lambda x: x)

    Y = np.zeros((seq, dirs, batch, H))
    Yh = np.zeros((dirs, batch, H))
    Yc = np.zeros((dirs, batch, H))
    for d in range(dirs):
        w, r, wb, rb, p = W[d], R[d], B[d, :G * H], B[d, G * H:], P[d]
        f, *rest = acts[d]
        reverse = direction == "reverse" or d == 1
        for b in range(batch):
            h, c = h0[d, b], c0[d, b]
            steps = range(lens[b] - 1, -1, -1) if reverse else range(lens[b])
            for t in steps:
                x = X[t, b]
                if op == "RNN":
                    h = f(bound(w @ x + r @ h + wb + rb))
                elif op == "GRU":
                    g = rest[0]
                    sl = [slice(k * H, (k + 1) * H) for k in range(3)]
                    z = f(bound(w[sl[0]] @ x + r[sl[0]] @ h + wb[sl[0]] + rb[sl[0]]))
                    rg = f(bound(w[sl[1]] @ x + r[sl[1]] @ h + wb[sl[1]] + rb[sl[1]]))
                    if linear_before_reset:
                        cand = g(bound(w[sl[2]] @ x + rg * (r[sl[2]] @ h + rb[sl[2]]) + wb[sl[2]]))
                    else:
                        cand = g(bound(w[sl[2]] @ x + r[sl[2]] @ (rg * h) + rb[sl[2]] + wb[sl[2]]))
                    h = (1 - z) * cand + z * h
                else:
                    g, hf = rest
                    pre = w @ x + r @ h + wb + rb
                    pi, po, pf, pc = (pre[k * H:(k + 1) * H] for k in range(4))
                    i = f(bound(pi + p[:H] * c))
                    fg = 1 - i if input_forget else f(bound(pf + p[2 * H:] * c))
                    c = fg * c + i * g(bound(pc))
                    o = f(bound(po + p[H:2 * H] * c))
                    h = o * hf(c)
                Y[t, d, b] = h
            if lens[b] > 0:
                Yh[d, b], Yc[d, b] = h, c
    if layout == 1:
        Y, Yh, Yc = Y.transpose(2, 0, 1, 3), Yh.swapaxes(0, 1), Yc.swapaxes(0, 1)
    return (Y, Yh, Yc) if op == "LSTM" else (Y, Yh)


def weights(op, dirs, input_size, hidden, dtype, scale=0.5):
    G = GATES[op]
    u = lambda *shape: RNG.uniform(-scale, scale, size=shape).astype(dtype)  # noqa: E731
    return u(dirs, G * hidden, input_size), u(dirs, G * hidden, hidden), u(dirs, 2 * G * hidden)


TOLERANCE = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}


def case(root, name, op, seq=3, batch=2, input_size=3, hidden=4, direction="forward", layout=0, dtype="float32",
         with_bias=True, lens=None, lens_dtype=np.int32, with_h0=False, with_c0=False, with_p=False, num_outputs=None,
         hidden_attr=True, **attrs):
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    dirs = 2 if direction == "bidirectional" else 1
    W, R, B = weights(op, dirs, input_size, hidden, np_dtype)
    x_shape = (batch, seq, input_size) if layout else (seq, batch, input_size)
    state_shape = (batch, dirs, hidden) if layout else (dirs, batch, hidden)
    X = RNG.uniform(-1, 1, size=x_shape).astype(np_dtype)
    h0 = RNG.uniform(-1, 1, size=state_shape).astype(np_dtype) if with_h0 else None
    c0 = RNG.uniform(-1, 1, size=state_shape).astype(np_dtype) if with_c0 else None
    P = RNG.uniform(-0.5, 0.5, size=(dirs, 3 * hidden)).astype(np_dtype) if with_p else None
    lens_array = None if lens is None else np.array(lens, dtype=lens_dtype)
    B = B if with_bias else None
    outputs = recurrent(op, X, W, R, B, lens_array, h0, c0, P, direction=direction, layout=layout,
                        activations=attrs.get("activations"), alpha=attrs.get("activation_alpha"),
                        beta=attrs.get("activation_beta"), clip=attrs.get("clip"),
                        linear_before_reset=attrs.get("linear_before_reset", 0),
                        input_forget=attrs.get("input_forget", 0))
    outputs = [y.astype(np_dtype) for y in outputs][:num_outputs]
    inputs = [X, W, R, B, lens_array, h0]
    if op == "LSTM":
        inputs += [c0, P]
    while inputs[-1] is None:
        inputs.pop()
    all_attrs = dict(attrs, direction=direction, layout=layout)
    if hidden_attr:
        all_attrs["hidden_size"] = hidden
    rtol, atol = TOLERANCE[dtype]
    write_case(root, f"{op.lower()}_{name}", op, inputs, outputs, all_attrs, rtol=rtol, atol=atol,
               num_outputs=len(outputs))


def write(root):
    for op in ["RNN", "GRU", "LSTM"]:
        lstm = op == "LSTM"
        states = {"with_h0": True, "with_c0": lstm}
        for direction in ["forward", "reverse", "bidirectional"]:
            case(root, f"{direction}", op, direction=direction, **states)
            # Sequences shorter than seq_length: steps past the end are zeros, reverse starts at the end.
            case(root, f"{direction}_lens", op, seq=5, batch=4, direction=direction, lens=[5, 2, 4, 1], **states)
            case(root, f"{direction}_layout1", op, seq=4, batch=3, direction=direction, layout=1,
                 lens=[2, 4, 3], **states)
        case(root, "lens_with_zero", op, seq=3, batch=3, direction="bidirectional", lens=[3, 0, 2], **states)
        case(root, "lens_int64", op, seq=4, batch=2, lens=[4, 3], lens_dtype=np.int64)
        case(root, "no_bias_no_state", op, with_bias=False)
        case(root, "no_hidden_size_attr", op, hidden_attr=False)
        case(root, "odd_sizes", op, seq=7, batch=5, input_size=9, hidden=11, direction="bidirectional", **states)
        case(root, "wide_batch", op, seq=3, batch=67, input_size=16, hidden=33, **states)
        case(root, "clip", op, direction="bidirectional", clip=0.3, **states)
        case(root, "only_y", op, num_outputs=1, **states)
        case(root, "empty_batch", op, batch=0, **states)
        case(root, "empty_sequence", op, seq=0, **states)
        case(root, "input_size_zero", op, input_size=0, **states)
        for dtype in ["float64", "float16", "bfloat16"]:
            case(root, f"{dtype}", op, dtype=dtype, direction="bidirectional", lens=[3, 2], **states)
        if lstm:
            case(root, "peepholes", op, direction="bidirectional", with_p=True, lens=[3, 1], **states)
            case(root, "peepholes_clip", op, with_p=True, clip=0.4, **states)
            case(root, "input_forget", op, with_p=True, input_forget=1, **states)
            case(root, "input_forget_layout1", op, layout=1, input_forget=1, direction="reverse", **states)
            case(root, "y_and_y_h", op, num_outputs=2, **states)
        if op == "GRU":
            for direction in ["forward", "bidirectional"]:
                case(root, f"linear_before_reset_{direction}", op, direction=direction, linear_before_reset=1,
                     lens=[3, 2], **states)
            case(root, "linear_before_reset_clip", op, linear_before_reset=1, clip=0.3, with_h0=True)

    # Each activation function as f, with and without alpha/beta, and as g / h.
    for name, (_, takes_a, takes_b, _, _) in ACTIVATIONS.items():
        spelled = {"relu": "Relu", "tanh": "Tanh", "sigmoid": "Sigmoid", "affine": "Affine",
                   "leakyrelu": "LeakyRelu", "thresholdedrelu": "ThresholdedRelu", "scaledtanh": "ScaledTanh",
                   "hardsigmoid": "HardSigmoid", "elu": "Elu", "softsign": "Softsign", "softplus": "Softplus"}[name]
        case(root, f"act_{name}_default_params", "RNN", activations=[spelled], with_h0=True)
        params = {}
        if takes_a:
            params["activation_alpha"] = [0.7]
        if takes_b:
            params["activation_beta"] = [0.3]
        if params:
            case(root, f"act_{name}_params", "RNN", activations=[spelled], with_h0=True, **params)
        case(root, f"act_{name}_as_gru_g", "GRU", activations=["Sigmoid", spelled], with_h0=True, **params)
        case(root, f"act_{name}_as_lstm_h", "LSTM", activations=["Sigmoid", "Tanh", spelled], with_h0=True,
             **params)
    # Per-direction activations, with alpha/beta consumed in order across both directions.
    case(root, "act_per_direction", "LSTM", direction="bidirectional", with_h0=True,
         activations=["HardSigmoid", "Tanh", "Affine", "Sigmoid", "LeakyRelu", "ScaledTanh"],
         activation_alpha=[0.3, 0.5, 0.2, 0.9], activation_beta=[0.4, 0.1, 1.5])
    # One set of names for both directions, lower case as some exporters write them.
    case(root, "act_shared_lowercase", "GRU", direction="bidirectional", activations=["hardsigmoid", "softsign"],
         activation_alpha=[0.25], activation_beta=[0.45])
    # The ONNX RNN default has two names; a one-direction op uses the first.
    case(root, "act_two_names_one_direction", "RNN", activations=["Relu", "Tanh"])
