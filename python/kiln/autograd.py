"""Imperative automatic differentiation with MXNet's mx.autograd API.

    x = mx.nd.array([1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = x ** 2 + 3 * x + 2
    y.backward()        # x.grad is [5, 7, 9]

Recording and training state are per thread, kept by the C++ core (kiln/autograd.hpp).
"""
from ._kiln import NDArray
from ._kiln import autograd as _ag

is_recording = _ag.is_recording
is_training = _ag.is_training
set_recording = _ag.set_recording
set_training = _ag.set_training


class _RecordingStateScope:
    """Sets the recording and training switches on entry and restores them on exit."""

    def __init__(self, is_record, train_mode):
        self._enter_record = is_record
        self._enter_train = train_mode
        self._prev_record = None
        self._prev_train = None

    def __enter__(self):
        if self._enter_record is not None:
            self._prev_record = set_recording(self._enter_record)
        if self._enter_train is not None:
            self._prev_train = set_training(self._enter_train)
        return self

    def __exit__(self, *exc):
        if self._enter_record is not None:
            set_recording(self._prev_record)
        if self._enter_train is not None:
            set_training(self._prev_train)
        return False


def record(train_mode=True):
    """Records the ops run inside the scope for backward(); training mode by default."""
    return _RecordingStateScope(True, train_mode)


def pause(train_mode=False):
    """Stops recording inside the scope (e.g. for an optimizer step); predict mode by default."""
    return _RecordingStateScope(False, train_mode)


def train_mode():
    """Training mode (Dropout drops, BatchNorm uses batch statistics) without changing recording."""
    return _RecordingStateScope(None, True)


def predict_mode():
    return _RecordingStateScope(None, False)


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def backward(heads, head_grads=None, retain_graph=False, train_mode=True):
    """Gradients of `heads` into the gradient buffers of the variables they were recorded from."""
    heads = _as_list(heads)
    grads = [] if head_grads is None else _as_list(head_grads)
    _ag.backward(heads, grads, retain_graph, train_mode)


def mark_variables(variables, gradients=None, grad_reqs="write"):
    """Marks arrays as variables (attach_grad); Kiln allocates the gradient buffers itself."""
    variables = _as_list(variables)
    reqs = _as_list(grad_reqs) if isinstance(grad_reqs, (list, tuple)) else [grad_reqs] * len(variables)
    for var, req in zip(variables, reqs):
        var.attach_grad(req)


def grad(heads, variables, head_grads=None, retain_graph=None, create_graph=False, train_mode=True):
    """The gradients of `heads` with respect to `variables` (arrays marked with attach_grad before
    the recording), returned as new arrays; the variables' .grad buffers are left alone. With
    create_graph the gradient computation is recorded too, so the results can be differentiated
    again (the graph is then kept unless retain_graph is False), as in MXNet."""
    single = isinstance(variables, NDArray)
    variables = _as_list(variables)
    grads = [] if head_grads is None else _as_list(head_grads)
    retain = create_graph if retain_graph is None else bool(retain_graph)
    results = _ag.grad(_as_list(heads), variables, grads, retain, bool(create_graph), train_mode)
    return results[0] if single else results


__all__ = ["record", "pause", "train_mode", "predict_mode", "is_recording", "is_training",
           "set_recording", "set_training", "backward", "mark_variables", "grad"]
