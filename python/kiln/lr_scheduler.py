"""Learning-rate schedules (mx.lr_scheduler), bound from kiln/nn/lr_scheduler.hpp: the rate as a
function of the number of updates, with MXNet's optional warm-up. Pass one to a Trainer as
optimizer_params={'lr_scheduler': ...}."""
from . import _kiln

_lr = _kiln.gluon.lr_scheduler
LRScheduler = _lr.LRScheduler
FactorScheduler = _lr.FactorScheduler
MultiFactorScheduler = _lr.MultiFactorScheduler
CosineScheduler = _lr.CosineScheduler
PolyScheduler = _lr.PolyScheduler

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "CosineScheduler", "PolyScheduler"]
