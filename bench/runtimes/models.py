"""The benchmark's model files and what every runtime is fed: the MLP written as ONNX, random inputs
saved as .npy (Kiln and the runner processes read the same files), and the ONNX weights renamed to
the PyTorch modules' state-dict names so PyTorch eager runs the same weights."""

from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MLP_DIMS = (784, 256, 128, 10)


def write_mlp(folder: str) -> str:
    """MLP 784-256-128-10 as torch.nn.Linear exports it: Gemm(transB=1) + Relu, free batch."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i, (n_in, n_out) in enumerate(zip(MLP_DIMS[:-1], MLP_DIMS[1:], strict=True)):
        weight = (rng.standard_normal((n_out, n_in)) / np.sqrt(n_in)).astype(np.float32)
        inits += [
            numpy_helper.from_array(weight, f"W{i}"),
            numpy_helper.from_array((0.1 * rng.standard_normal(n_out)).astype(np.float32), f"b{i}"),
        ]
        # Named as the TorchScript exporter names a Linear's node, so write_torch_weights finds fc<i>.
        nodes.append(
            helper.make_node("Gemm", [prev, f"W{i}", f"b{i}"], [f"fc{i}"], name=f"/fc{i}/Gemm", transB=1)
        )
        prev = f"fc{i}"
        if i < len(MLP_DIMS) - 2:
            nodes.append(helper.make_node("Relu", [prev], [f"relu{i}"]))
            prev = f"relu{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", MLP_DIMS[0]])],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, ["N", MLP_DIMS[-1]])],
        inits,
    )
    path = os.path.join(folder, "mlp.onnx")
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def _gathered_table_rows(model: onnx.ModelProto, input_name: str) -> int | None:
    """Rows of the smallest initializer table that `input_name` indexes with Gather (an embedding's
    vocabulary), so that random ids stay in range: token type ids must be 0 or 1, word ids below
    the vocabulary size."""
    tables = {t.name: t.dims[0] for t in model.graph.initializer if t.dims}
    rows = [
        tables[node.input[0]]
        for node in model.graph.node
        if node.op_type == "Gather" and node.input[1] == input_name and node.input[0] in tables
    ]
    return min(rows) if rows else None


def write_inputs(model_path: str, batch: int, folder: str, seed: int = 0) -> list[tuple[str, str]]:
    """Random inputs for `model_path` with the free dimensions set to `batch`, saved as .npy files
    in `folder`; returns (input name, file) in the graph's input order. Integer inputs named like a
    mask are all ones; other integer inputs are valid indices of the table they are gathered from."""
    model = onnx.load(model_path, load_external_data=False)
    rng = np.random.default_rng(seed)
    initializers = {i.name for i in model.graph.initializer}
    files = []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor_type = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in tensor_type.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
        if np.issubdtype(dtype, np.integer):
            if "mask" in value.name:
                array = np.ones(shape, dtype)
            else:
                array = rng.integers(0, _gathered_table_rows(model, value.name) or 2, size=shape).astype(
                    dtype
                )
        else:
            array = rng.random(shape, dtype=np.float32).astype(dtype)
        path = os.path.join(folder, f"{value.name}.npy")
        np.save(path, array)
        files.append((value.name, path))
    return files


# Per op: (input index, parameter name, whether the ONNX tensor is the PyTorch one transposed).
_PARAMETER_INPUTS = {
    "Conv": ((1, "weight", False), (2, "bias", False)),
    "BatchNormalization": (
        (1, "weight", False),
        (2, "bias", False),
        (3, "running_mean", False),
        (4, "running_var", False),
    ),
    "Gemm": ((1, "weight", False), (2, "bias", False)),
    "MatMul": ((1, "weight", True),),
    "LayerNormalization": ((1, "weight", False), (2, "bias", False)),
    "Gather": ((0, "weight", False),),
}


def _module_path(node_name: str) -> str:
    """The PyTorch module a TorchScript-exported node came from: '/layer1/layer1.0/conv1/Conv' is
    layer1.0.conv1 (a child of a container repeats the container's name in its scope)."""
    path = []
    for scope in node_name.split("/")[1:-1]:
        if path and scope.startswith(path[-1] + "."):
            path[-1] = scope
        else:
            path.append(scope)
    return ".".join(path)


def write_torch_weights(model_path: str, path: str) -> int:
    """Saves the ONNX file's weights under the PyTorch state-dict names of bench/runtimes/torch_models.py
    as an .npz; returns how many were saved.

    The TorchScript exporter keeps state-dict names for the initializers it keeps as they are. Equal
    tensors share one initializer, the others being Identity nodes of it named as the parameter (BERT's
    zero biases), and a Linear on 3-D input becomes MatMul with the weight transposed under an
    anonymous name. So parameters are also found through the nodes that read them: a node's scope
    names its module (see _module_path) and its op says which input is which parameter. Names that
    are no PyTorch parameter (the MLP's W0) are skipped by torch_models.build.
    """
    model = onnx.load(model_path)
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Identity" and node.input[0] in arrays:
            arrays[node.output[0]] = arrays[node.input[0]]
    weights = {name: array for name, array in arrays.items() if not name.startswith("onnx::")}
    for node in model.graph.node:
        module = _module_path(node.name)
        if not module:
            continue
        for index, parameter, transposed in _PARAMETER_INPUTS.get(node.op_type, ()):
            if index < len(node.input) and node.input[index] in arrays:
                array = arrays[node.input[index]]
                weights[f"{module}.{parameter}"] = np.ascontiguousarray(array.T) if transposed else array
    np.savez(path, **weights)
    return len(weights)


def output_names(model_path: str) -> list[str]:
    return [value.name for value in onnx.load(model_path, load_external_data=False).graph.output]
