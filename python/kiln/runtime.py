"""What this build of Kiln has, under MXNet's feature names (mx.runtime.Features):

    features = mx.runtime.Features()
    features.is_enabled("CUDA")

The names are MXNet 1.9's; each says what Kiln's build does (kiln.features() holds Kiln's own)."""
import collections

from ._kiln import features as _kiln_features


class Feature(collections.namedtuple("Feature", ["name", "enabled"])):
    def __repr__(self):
        return ("✔ " if self.enabled else "✖ ") + self.name


def _feature_values():
    own = _kiln_features()
    return {
        "CUDA": own["cuda"], "CUDNN": own["cuda"], "NCCL": own["cuda"], "CUDA_RTC": False, "TENSORRT": False,
        "MKLDNN": own["onednn"], "OPENMP": own["onednn"], "BLAS_OPEN": False, "BLAS_ATLAS": False,
        "BLAS_MKL": False, "BLAS_APPLE": False, "LAPACK": False, "OPENCV": False, "CAFFE": False,
        "PROFILER": True, "DIST_KVSTORE": False, "CXX14": True, "INT64_TENSOR_SIZE": True,
        "SIGNAL_HANDLER": False, "DEBUG": False, "TVM_OP": False,
    }


class Features(collections.OrderedDict):
    """Every feature name with whether the build has it; is_enabled() refuses a name it does not know."""

    def __init__(self):
        super().__init__((name, Feature(name, enabled)) for name, enabled in _feature_values().items())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        name = feature_name.upper()
        if name not in self:
            raise RuntimeError(f"Feature '{feature_name}' is unknown, known features are: {list(self.keys())}")
        return self[name].enabled


def feature_list():
    return list(Features().values())


__all__ = ["Feature", "Features", "feature_list"]
