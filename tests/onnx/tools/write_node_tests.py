"""Writes the ONNX backend node tests in the standard backend-test layout.

The ONNX package carries, for every operator, the scripts that build its conformance tests; its
data files are not shipped, so this runs those scripts and writes what they produce exactly as
onnx's own `backend-test-tools generate-data` (onnx/backend/test/cmd_tools.py) does, for the node
tests only: every test, with one node or many (the *_expanded function bodies), any domain.

    OUT_DIR/<test_name>/model.onnx
    OUT_DIR/<test_name>/test_data_set_<k>/input_<j>.pb, output_<j>.pb

usage: write_node_tests.py OUT_DIR
"""

from __future__ import annotations

import os
import shutil
import sys
import time
import warnings

import numpy as np
from onnx import TensorProto, numpy_helper
from onnx.backend.test.case import node as node_cases


def serialize(value, declared) -> bytes:
    """The .pb bytes of one test value, in the proto its declared graph type asks for."""
    name = declared.name
    kind = declared.type.WhichOneof("value")
    if kind == "map_type":
        return numpy_helper.from_dict(value, name).SerializeToString()
    if kind == "sequence_type":
        return numpy_helper.from_list(value, name).SerializeToString()
    if kind == "optional_type":
        return numpy_helper.from_optional(value, name).SerializeToString()
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    return numpy_helper.from_array(np.asarray(value), name).SerializeToString()


def write_case(out: str, case) -> None:
    case_dir = os.path.join(out, case.name)
    os.makedirs(case_dir)
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for k, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(case_dir, f"test_data_set_{k}")
        os.makedirs(data_dir)
        for prefix, values, declared in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, value in enumerate(values):
                with open(os.path.join(data_dir, f"{prefix}_{j}.pb"), "wb") as f:
                    f.write(serialize(value, declared[j]))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    start = time.monotonic()
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with warnings.catch_warnings():
        # The generators compute expected outputs with numpy, some on purpose through overflow or
        # NaN; those warnings are the point of the test, not a problem.
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            cases = node_cases.collect_testcases(None)
    for case in cases:
        write_case(out, case)
    print(f"wrote {len(cases)} ONNX node tests to {out} in {time.monotonic() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
