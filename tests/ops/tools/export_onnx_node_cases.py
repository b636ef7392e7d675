"""Exports the ONNX backend node tests as Kiln op cases.

The ONNX package carries, for every operator, the scripts that build its conformance tests
(a one-node model plus numpy-computed inputs and expected outputs). This runs them and writes
each single-node test of the default domain as a case folder (see casefile.py). Tests whose
graph has more than one node (the *_expanded variants, function bodies) are not op tests.

usage: export_onnx_node_cases.py OUT_DIR
"""

from __future__ import annotations

import os
import shutil
import sys
import warnings

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.test.case import node as node_cases

sys.path.insert(0, os.path.dirname(__file__))
import casefile  # noqa: E402


# DFT and STFT sum whole signals, and the reference computes them with numpy's float32 FFT, whose
# rounding is float32's epsilon times the signal's magnitude: their absolute tolerance grows by that
# epsilon times the largest expected magnitude.
SPECTRAL_OPS = {"DFT", "STFT"}
# Their expected values are draws of numpy's generator, which ONNX calls informational; the
# conformance suite checks their shapes and dtypes, and tests/ops/cases/random.py their values.
RANDOM_OPS = {"Bernoulli", "Multinomial", "RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}

# The operator domains Kiln registers ops of (src/frontends/onnx/domains.h).
KILN_DOMAINS = ("", "ai.onnx", "ai.onnx.preview.training", "ai.onnx.ml")


def attribute_value(attr) -> object:
    if attr.type == onnx.AttributeProto.TENSOR:
        return numpy_helper.to_array(attr.t)
    if attr.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS, onnx.AttributeProto.SPARSE_TENSOR,
                     onnx.AttributeProto.TYPE_PROTO, onnx.AttributeProto.TENSORS):
        raise casefile.Unsupported(f"attribute {attr.name} of type {onnx.AttributeProto.AttributeType.Name(attr.type)}")
    return helper.get_attribute_value(attr)


def as_array(value):
    """A numpy array for a tensor value (ndarray, numpy scalar or TensorProto); None otherwise."""
    if isinstance(value, onnx.TensorProto):
        if value.data_type not in casefile.KILN_ONNX_TYPES:
            raise casefile.Unsupported(f"dtype {onnx.TensorProto.DataType.Name(value.data_type)}")
        return numpy_helper.to_array(value)
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    return None


def main() -> int:
    out = sys.argv[1]
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.seterr(all="ignore")
        cases = node_cases.collect_testcases(None)
    written = 0
    for case in cases:
        graph = case.model.graph
        if len(graph.node) != 1 or graph.node[0].domain not in KILN_DOMAINS:
            continue
        node = graph.node[0]
        for k, (inputs, outputs) in enumerate(case.data_sets):
            name = case.name if k == 0 else f"{case.name}_{k}"
            attrs = {}
            reason = "random draws, whose expected values ONNX calls informational" if node.op_type in RANDOM_OPS \
                else None
            try:
                for a in node.attribute:
                    attrs[a.name] = attribute_value(a)
            except casefile.Unsupported as e:
                reason = str(e)
            # Graph inputs feed node inputs by name; an empty node input name is a missing optional.
            by_name = {gi.name: x for gi, x in zip(graph.input, inputs)}
            node_inputs = []
            for n in node.input:
                if n == "":
                    node_inputs.append(None)
                elif n in by_name:
                    try:
                        x = as_array(by_name[n])
                    except casefile.Unsupported as e:
                        reason, x = reason or str(e), None
                    if x is None:
                        reason = reason or "a sequence, map or optional input"
                    node_inputs.append(x)
                else:
                    reason = reason or f"input {n} is not a graph input"
                    node_inputs.append(None)
            # Expected values in the node's output order; a skipped output ("") has none (the
            # runner does not compare it), so later outputs keep their positions.
            by_output = {go.name: y for go, y in zip(graph.output, outputs)}
            expected = []
            try:
                for n in node.output:
                    y = as_array(by_output[n]) if n in by_output else None
                    if n in by_output and y is None:
                        reason = reason or "a sequence, map or optional output"
                    expected.append(y)
            except casefile.Unsupported as e:
                reason, expected = reason or str(e), []
            atol = float(case.atol)
            if node.op_type in SPECTRAL_OPS and expected:
                atol += float(np.finfo(np.float32).eps) * max(
                    float(np.max(np.abs(y), initial=0)) for y in expected if y is not None)
            casefile.write_case(out, name, node.op_type, node_inputs, expected, attrs,
                                rtol=float(case.rtol), atol=atol, source="onnx",
                                num_outputs=len(node.output), unsupported=reason)
            written += 1
    print(f"exported {written} ONNX node test cases (onnx {onnx.__version__}) to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
