"""Gluon losses (mx.gluon.loss): one value per sample. The common ones are bound from
kiln/nn/loss.hpp; the rest are Python HybridBlocks over mx.nd with MXNet's formulas."""
import math as _math

from .. import _kiln
from .block import HybridBlock

_loss = _kiln.gluon.loss
Loss = _loss.Loss
L1Loss = _loss.L1Loss
L2Loss = _loss.L2Loss
HuberLoss = _loss.HuberLoss
SoftmaxCrossEntropyLoss = SoftmaxCELoss = _loss.SoftmaxCrossEntropyLoss
SigmoidBinaryCrossEntropyLoss = SigmoidBCELoss = _loss.SigmoidBinaryCrossEntropyLoss
KLDivLoss = _loss.KLDivLoss


class _PythonLoss(HybridBlock):
    """A loss written in Python: its scalar weight, sample_weight and batch axis as Gluon's."""

    def __init__(self, weight, batch_axis, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._weight = weight
        self._batch_axis = batch_axis

    def _weighted(self, loss, sample_weight):
        if sample_weight is not None:
            loss = loss * sample_weight
        return loss if self._weight is None else loss * self._weight

    def _batch_mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)


class LogisticLoss(_PythonLoss):
    """log(1 + exp(-pred * label)) with labels in {-1, 1} ('signed') or {0, 1} ('binary'), computed
    as MXNet does (as binary cross-entropy on logits), so other labels give MXNet's values too."""

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"LogisticLoss: label_format must be 'signed' or 'binary', got '{label_format}'")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = label.reshape(pred.shape)
        if self._label_format == "signed":
            label = (label + 1.0) / 2.0  # to {0, 1}
        # Binary cross-entropy on logits, in the form that does not overflow for large |pred|.
        loss = F.relu(pred) - pred * label + F.Activation(-F.abs(pred), act_type="softrelu")
        return self._batch_mean(F, self._weighted(loss, sample_weight))


class CosineEmbeddingLoss(_PythonLoss):
    """1 - cos(input1, input2) for label 1, max(0, cos - margin) for label -1, per sample."""

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = input1.reshape(input2.shape)
        dot = F.sum(input1 * input2, axis=-1).reshape((-1, 1))
        norms = F.norm(input1, axis=-1).reshape((-1, 1)) * F.norm(input2, axis=-1).reshape((-1, 1))
        cos = dot / F.maximum(norms, F.full(norms.shape, 1e-12))
        label = label.reshape(cos.shape)
        loss = F.where(label == 1, 1 - cos, F.clip(cos - self._margin, 0, 1 - self._margin))
        return self._batch_mean(F, self._weighted(loss, sample_weight))


class PoissonNLLLoss(_PythonLoss):
    """The negative log likelihood of `target` under a Poisson of rate exp(pred) (from_logits) or
    pred, averaged over every element; compute_full adds Stirling's term for targets above 1."""

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = target.reshape(pred.shape)
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            stirling = target * F.log(target) - target + 0.5 * F.log(2 * _math.pi * target)
            loss = loss + stirling * (target > 1)
        return F.mean(self._weighted(loss, sample_weight))


__all__ = [name for name in dir() if not name.startswith("_") and name != "HybridBlock"]
