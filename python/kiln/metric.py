"""Evaluation metrics (mx.metric), bound from kiln/nn/metric.hpp; create() and
CompositeEvalMetric as in MXNet."""
from . import _kiln

_metric = _kiln.gluon.metric
EvalMetric = _metric.EvalMetric
Accuracy = _metric.Accuracy
TopKAccuracy = _metric.TopKAccuracy
CrossEntropy = _metric.CrossEntropy
MAE = _metric.MAE
MSE = _metric.MSE
F1 = _metric.F1

_BY_NAME = {"acc": Accuracy, "accuracy": Accuracy, "top_k_accuracy": TopKAccuracy, "top_k_acc": TopKAccuracy,
            "ce": CrossEntropy, "cross-entropy": CrossEntropy, "mae": MAE, "mse": MSE, "f1": F1}


class CompositeEvalMetric:
    """Several metrics updated together."""

    def __init__(self, metrics=None, name="composite"):
        self.name = name
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        self.metrics.append(create(metric))

    def update(self, labels, preds):
        for m in self.metrics:
            m.update(labels, preds)

    def reset(self):
        for m in self.metrics:
            m.reset()

    def get(self):
        pairs = [m.get() for m in self.metrics]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def get_name_value(self):
        return [m.get() for m in self.metrics]


def create(metric, *args, **kwargs):
    """A metric from its name ('acc', 'mse', ...), a list of names (composite) or a metric."""
    if isinstance(metric, (list, tuple)):
        return CompositeEvalMetric(list(metric))
    if isinstance(metric, str):
        key = metric.lower()
        if key not in _BY_NAME:
            raise ValueError(f"metric.create: unknown metric '{metric}' (known: {', '.join(sorted(_BY_NAME))})")
        return _BY_NAME[key](*args, **kwargs)
    return metric


__all__ = ["EvalMetric", "Accuracy", "TopKAccuracy", "CrossEntropy", "MAE", "MSE", "F1",
           "CompositeEvalMetric", "create"]
