"""Writes the ONNX fuzz target's seeds with subgraphs (tests/fuzz/corpus/onnx_model): an If whose
branches read values of the outer graph, a Loop with loop-carried values and a scan output, a
Scan, and an If nested in a Loop body reading the model's input two scopes out. Small, so that the
fuzzer's mutations (-max_len=4096) reach every part of them.
    .venv/bin/python tests/fuzz/tools/write_control_flow_seeds.py"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUT = os.path.join(os.path.dirname(__file__), "..", "corpus", "onnx_model")


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def write(name, graph, opset=17):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    data = model.SerializeToString()
    assert len(data) < 4096, (name, len(data))
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def branch(name, op):
    return helper.make_graph([helper.make_node(op, ["x", "x"], [name + "_y"])], name, [],
                             [vi(name + "_y", TensorProto.FLOAT, [2])])


write("if_outer_values.onnx", helper.make_graph(
    [helper.make_node("If", ["c"], ["y"], then_branch=branch("t", "Add"), else_branch=branch("e", "Mul"))],
    "if", [vi("c", TensorProto.BOOL, []), vi("x", TensorProto.FLOAT, [2])], [vi("y", TensorProto.FLOAT, [2])]))

loop_body = helper.make_graph(
    [helper.make_node("Add", ["v_in", "step"], ["v_out"]),
     helper.make_node("Identity", ["cond_in"], ["cond_out"]),
     helper.make_node("Identity", ["v_out"], ["scan"])],
    "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", TensorProto.FLOAT, [2])],
    [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [2]), vi("scan", TensorProto.FLOAT, [2])])
write("loop_scan_output.onnx", helper.make_graph(
    [helper.make_node("Loop", ["m", "", "v0"], ["v", "all"], body=loop_body)], "loop",
    [vi("m", TensorProto.INT64, []), vi("v0", TensorProto.FLOAT, [2]), vi("step", TensorProto.FLOAT, [2])],
    [vi("v", TensorProto.FLOAT, [2]), vi("all", TensorProto.FLOAT, ["n", 2])]))

scan_body = helper.make_graph(
    [helper.make_node("Add", ["s", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["seen"])],
    "scan_body", [vi("s", TensorProto.FLOAT, [2]), vi("x_t", TensorProto.FLOAT, [2])],
    [vi("s_out", TensorProto.FLOAT, [2]), vi("seen", TensorProto.FLOAT, [2])])
write("scan_reverse.onnx", helper.make_graph(
    [helper.make_node("Scan", ["s0", "x"], ["s", "seen_all"], body=scan_body, num_scan_inputs=1,
                      scan_input_directions=[1], scan_output_axes=[-1])],
    "scan", [vi("s0", TensorProto.FLOAT, [2]), vi("x", TensorProto.FLOAT, [3, 2])],
    [vi("s", TensorProto.FLOAT, [2]), vi("seen_all", TensorProto.FLOAT, [2, 3])]))

inner = helper.make_graph(
    [helper.make_node("If", ["cond_in"], ["v_out"],
                      then_branch=helper.make_graph([helper.make_node("Add", ["v_in", "bias"], ["a"])], "a", [],
                                                    [vi("a", TensorProto.FLOAT, [2])]),
                      else_branch=helper.make_graph([helper.make_node("Sub", ["v_in", "bias"], ["b"])], "b", [],
                                                    [vi("b", TensorProto.FLOAT, [2])])),
     helper.make_node("Identity", ["cond_in"], ["cond_out"])],
    "body", [vi("i", TensorProto.INT64, []), vi("cond_in", TensorProto.BOOL, []), vi("v_in", TensorProto.FLOAT, [2])],
    [vi("cond_out", TensorProto.BOOL, []), vi("v_out", TensorProto.FLOAT, [2])])
write("nested_if_in_loop.onnx", helper.make_graph(
    [helper.make_node("Loop", ["m", "c", "v0"], ["v"], body=inner)], "nested",
    [vi("m", TensorProto.INT64, []), vi("c", TensorProto.BOOL, []), vi("v0", TensorProto.FLOAT, [2]),
     vi("bias", TensorProto.FLOAT, [2])], [vi("v", TensorProto.FLOAT, [2])],
    [numpy_helper.from_array(np.array([0.5, -1], np.float32), "unused")]))
