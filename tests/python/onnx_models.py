"""What the tests that build ONNX models with onnx.helper share: writing a model after ONNX's
checker has seen it, running one in ONNX Runtime (the reference they are compared with), and
making initializers and models."""
import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper


def save(model, path, check=True, full_check=True):
    """Writes `model` to `path` once ONNX's checker accepts it. check=False for a model whose
    inputs or outputs have no rank, which the checker refuses on a main graph (ONNX Runtime runs
    them); full_check=False to skip its shape inference."""
    if check:
        onnx.checker.check_model(model, full_check=full_check)
    onnx.save(model, str(path))
    return str(path)


def ort_run(path, feeds):
    return ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feeds)


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(graph, opset=17, ml=False):
    """A model of `graph` in `opset` of the default domain (and ai.onnx.ml 4 when `ml`)."""
    opsets = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("ai.onnx.ml", 4)] if ml else [])
    return helper.make_model(graph, opset_imports=opsets)
