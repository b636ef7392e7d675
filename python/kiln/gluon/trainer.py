"""Gluon's Trainer (mx.gluon.Trainer): Kiln's C++ Trainer, taking the optimizer by name or as an
mx.optimizer object."""
from .. import _kiln
from ..optimizer import Optimizer


class Trainer(_kiln.gluon.Trainer):
    """Applies an optimizer to a ParameterDict (or a list or dict of Parameters); step(batch_size)
    scales the gradients by 1 / batch_size and updates every parameter whose grad_req is not null."""

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device", compression_params=None,
                 update_on_kvstore=None):
        options = dict(optimizer_params or {})
        if isinstance(optimizer, Optimizer):
            options = {**optimizer.kwargs, **options}
            optimizer = optimizer.name
        super().__init__(params, optimizer, options)


__all__ = ["Trainer"]
