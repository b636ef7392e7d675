"""Gluon losses (mx.gluon.loss): one value per sample, bound from kiln/nn/loss.hpp."""
from .. import _kiln

_loss = _kiln.gluon.loss
Loss = _loss.Loss
L1Loss = _loss.L1Loss
L2Loss = _loss.L2Loss
HuberLoss = _loss.HuberLoss
SoftmaxCrossEntropyLoss = SoftmaxCELoss = _loss.SoftmaxCrossEntropyLoss
SigmoidBinaryCrossEntropyLoss = SigmoidBCELoss = _loss.SigmoidBinaryCrossEntropyLoss
KLDivLoss = _loss.KLDivLoss

__all__ = [name for name in dir() if not name.startswith("_")]
