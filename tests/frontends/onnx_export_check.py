#!/usr/bin/env python3
"""Kiln's ONNX export against the ONNX checker and ONNX Runtime.

  onnx_export_check.py KILN WORKDIR

Builds models with onnx.helper (a conv net, a transformer-style block, a YOLO-style block, and
two of forms older opsets spell differently: opset 18's Reduce*/Pad/Split, opset 9's Upsample),
has Kiln import each and export it again (`kiln convert`, at several opsets, with and without
--simplify and --shape), runs onnx.checker.check_model(full_check=True) on every file Kiln wrote,
and checks that ONNX Runtime computes the same outputs from Kiln's file as from the original.
Also checks that an opset which cannot express a node is refused, naming the node.
"""
import os
import subprocess
import sys

import numpy as np
import onnx
import onnx.defs
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RTOL, ATOL = 1e-5, 1e-6
KILN_NEWEST_OPSET = 28  # kNewestOpset in src/frontends/onnx/import.h
# --simplify folds BatchNormalization into Conv weights, which rounds differently.
RTOL_SIMPLIFIED, ATOL_SIMPLIFIED = 1e-4, 1e-5


def floats(rng, shape, scale=0.3):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def model(nodes, inputs, outputs, initializers, opset):
    tensors = [numpy_helper.from_array(v, k) for k, v in initializers.items()]
    graph = helper.make_graph(nodes, "g", inputs, outputs, tensors)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="test")
    onnx.checker.check_model(m, full_check=True)
    return m


def conv_net(rng):
    """Conv, BatchNormalization, Relu, MaxPool, ReduceMean (axes as an input: opset 18), Gemm, Softmax."""
    inits = {
        "w1": floats(rng, (8, 3, 3, 3)), "b1": floats(rng, (8,), 0.1),
        "gamma": rng.uniform(0.5, 1.5, 8).astype(np.float32), "beta": floats(rng, (8,), 0.1),
        "mean": floats(rng, (8,), 0.1), "var": rng.uniform(0.5, 1.5, 8).astype(np.float32),
        "mean_axes": np.array([3], np.int64),
        "wf": floats(rng, (10, 8)), "bf": floats(rng, (10,), 0.1),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("BatchNormalization", ["c1", "gamma", "beta", "mean", "var"], ["bn"], name="bn1"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu1"),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2], name="pool1"),
        helper.make_node("ReduceMean", ["p", "mean_axes"], ["rm"], keepdims=1, name="mean_w"),
        helper.make_node("GlobalAveragePool", ["rm"], ["gp"], name="gap"),
        helper.make_node("Flatten", ["gp"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], transB=1, name="fc"),
        helper.make_node("Softmax", ["logits"], ["prob"], name="softmax"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 16, 16])]
    outputs = [helper.make_tensor_value_info("prob", TensorProto.FLOAT, ["N", 10])]
    feeds = {"x": floats(rng, (2, 3, 16, 16), 1.0)}
    return model(nodes, inputs, outputs, inits, 18), feeds


def transformer_block(rng):
    """LayerNormalization, MatMul, heads split by a Reshape whose shape is computed from Shape(x)
    (Shape -> Gather -> Unsqueeze -> Concat), Transpose, Softmax, Where (a padding mask), Gelu,
    ReduceMean. Free batch and sequence dimensions."""
    d, heads, ff = 16, 2, 32
    inits = {
        "ln_scale": rng.uniform(0.5, 1.5, d).astype(np.float32), "ln_bias": floats(rng, (d,), 0.1),
        "wq": floats(rng, (d, d)), "wk": floats(rng, (d, d)), "wv": floats(rng, (d, d)),
        "wo": floats(rng, (d, d)), "w1": floats(rng, (d, ff)), "b1": floats(rng, (ff,), 0.1),
        "w2": floats(rng, (ff, d)), "b2": floats(rng, (d,), 0.1),
        "i0": np.array(0, np.int64), "i1": np.array(1, np.int64), "zero_axis": np.array([0], np.int64),
        "head_dims": np.array([heads, d // heads], np.int64), "merged": np.array([0, 0, d], np.int64),
        "scale": np.array(np.sqrt(d // heads), np.float32), "neg_inf": np.array(-1e9, np.float32),
        "seq_axis": np.array([1], np.int64),
    }
    n = helper.make_node
    nodes = [
        n("LayerNormalization", ["x", "ln_scale", "ln_bias"], ["ln"], axis=-1, name="ln"),
        n("MatMul", ["ln", "wq"], ["q"], name="q"), n("MatMul", ["ln", "wk"], ["k"], name="k"),
        n("MatMul", ["ln", "wv"], ["v"], name="v"),
        n("Shape", ["x"], ["x_shape"], name="shape"),
        n("Gather", ["x_shape", "i0"], ["batch"], name="batch"),
        n("Gather", ["x_shape", "i1"], ["seq"], name="seq"),
        n("Unsqueeze", ["batch", "zero_axis"], ["batch1"], name="batch1"),
        n("Unsqueeze", ["seq", "zero_axis"], ["seq1"], name="seq1"),
        n("Concat", ["batch1", "seq1", "head_dims"], ["heads_shape"], axis=0, name="heads_shape"),
        n("Reshape", ["q", "heads_shape"], ["qh"], name="qh"),
        n("Reshape", ["k", "heads_shape"], ["kh"], name="kh"),
        n("Reshape", ["v", "heads_shape"], ["vh"], name="vh"),
        n("Transpose", ["qh"], ["qt"], perm=[0, 2, 1, 3], name="qt"),
        n("Transpose", ["kh"], ["kt"], perm=[0, 2, 3, 1], name="kt"),
        n("Transpose", ["vh"], ["vt"], perm=[0, 2, 1, 3], name="vt"),
        n("MatMul", ["qt", "kt"], ["scores"], name="scores"),
        n("Div", ["scores", "scale"], ["scaled"], name="scaled"),
        n("Where", ["mask", "scaled", "neg_inf"], ["masked"], name="masked"),
        n("Softmax", ["masked"], ["attn"], axis=-1, name="attn"),
        n("MatMul", ["attn", "vt"], ["ctx"], name="ctx"),
        n("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3], name="ctx_t"),
        n("Reshape", ["ctx_t", "merged"], ["ctx_m"], name="ctx_m"),
        n("MatMul", ["ctx_m", "wo"], ["proj"], name="proj"),
        n("Add", ["x", "proj"], ["res"], name="res"),
        n("MatMul", ["res", "w1"], ["h1"], name="h1"), n("Add", ["h1", "b1"], ["h1b"], name="h1b"),
        n("Gelu", ["h1b"], ["g"], name="gelu"), n("MatMul", ["g", "w2"], ["h2"], name="h2"),
        n("Add", ["h2", "b2"], ["h2b"], name="h2b"), n("Add", ["res", "h2b"], ["y"], name="y"),
        n("ReduceMean", ["y", "seq_axis"], ["pooled"], keepdims=0, name="pooled"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", "S", d]),
              helper.make_tensor_value_info("mask", TensorProto.BOOL, ["N", 1, 1, "S"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", "S", d]),
               helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["N", d])]
    mask = np.ones((2, 1, 1, 6), bool)
    mask[1, ..., 4:] = False
    feeds = {"x": floats(rng, (2, 6, d), 1.0), "mask": mask}
    return model(nodes, inputs, outputs, inits, 20), feeds


def yolo_block(rng):
    """Conv, x * Sigmoid(x), Split with num_outputs (opset 18; 3 uneven parts of 16), Resize,
    Concat, Split with explicit sizes."""
    inits = {"w1": floats(rng, (16, 8, 1, 1)), "w2": floats(rng, (8, 8, 3, 3)), "b2": floats(rng, (8,), 0.1),
             "scales": np.array([1, 1, 2, 2], np.float32), "sizes": np.array([4, 12], np.int64)}
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], name="conv1"), n("Sigmoid", ["c1"], ["s1"], name="sig1"),
        n("Mul", ["c1", "s1"], ["silu1"], name="silu1"),
        n("Split", ["silu1"], ["a", "b"], axis=1, num_outputs=2, name="split_half"),
        n("Conv", ["b", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        n("Sigmoid", ["c2"], ["s2"], name="sig2"), n("Mul", ["c2", "s2"], ["silu2"], name="silu2"),
        n("Concat", ["a", "silu2"], ["cat"], axis=1, name="cat"),
        n("Resize", ["cat", "", "scales"], ["up"], mode="nearest", name="up"),
        n("Split", ["up", "sizes"], ["small", "large"], axis=1, name="split_sizes"),
        n("Split", ["cat"], ["p0", "p1", "p2"], axis=1, num_outputs=3, name="split_uneven"),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8, 8, 8])]
    channels_and_sizes = [("small", 4, 16), ("large", 12, 16), ("p0", 6, 8), ("p1", 6, 8), ("p2", 4, 8)]
    outputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, ["N", c, h, h])
               for name, c, h in channels_and_sizes]
    feeds = {"x": floats(rng, (2, 8, 8, 8), 1.0)}
    return model(nodes, inputs, outputs, inits, 18), feeds


def opset18_forms(rng):
    """Forms older opsets spell differently: Reduce* axes as inputs, noop_with_empty_axes, Pad with
    axes, an uneven Split by num_outputs."""
    inits = {"axes_last": np.array([-1], np.int64), "empty": np.array([], np.int64),
             "pads": np.array([1, 2, 0, 3], np.int64), "pad_axes": np.array([1, 3], np.int64),
             "pad_value": np.array(0.25, np.float32)}
    n = helper.make_node
    nodes = [
        n("ReduceL1", ["x", "axes_last"], ["l1"], keepdims=0, name="l1"),
        n("ReduceSumSquare", ["x", "empty"], ["squares"], noop_with_empty_axes=1, name="squares"),
        n("ReduceMax", ["x"], ["same"], noop_with_empty_axes=1, name="same"),
        n("ReduceLogSumExp", ["x"], ["lse_all"], keepdims=1, name="lse_all"),
        n("Pad", ["x", "pads", "pad_value", "pad_axes"], ["padded"], mode="constant", name="pad"),
        n("Split", ["x"], ["s0", "s1", "s2"], axis=3, num_outputs=3, name="split"),
    ]
    shapes = {"l1": [2, 3, 4], "squares": [2, 3, 4, 5], "same": [2, 3, 4, 5], "lse_all": [1, 1, 1, 1],
              "padded": [2, 4, 4, 10], "s0": [2, 3, 4, 2], "s1": [2, 3, 4, 2], "s2": [2, 3, 4, 1]}
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4, 5])]
    outputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v) for k, v in shapes.items()]
    return model(nodes, inputs, outputs, inits, 18), {"x": floats(rng, (2, 3, 4, 5), 1.0)}


def upsample_v9(rng):
    """Upsample, deprecated since opset 10: Kiln writes Resize."""
    inits = {"scales": np.array([1, 1, 2, 3], np.float32)}
    nodes = [helper.make_node("Upsample", ["x", "scales"], ["nearest"], mode="nearest", name="nearest"),
             helper.make_node("Upsample", ["x", "scales"], ["linear"], mode="linear", name="linear")]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3, 4])]
    outputs = [helper.make_tensor_value_info(k, TensorProto.FLOAT, ["N", 2, 6, 12])
               for k in ("nearest", "linear")]
    return model(nodes, inputs, outputs, inits, 9), {"x": floats(rng, (2, 2, 3, 4), 1.0)}


def kiln_convert(kiln, *args, expect_ok=True):
    result = subprocess.run([kiln, "convert", *args], capture_output=True, text=True)
    if expect_ok and result.returncode != 0:
        sys.exit(f"FAIL: kiln convert {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


def run_ort(path_or_model, feeds):
    source = path_or_model if isinstance(path_or_model, str) else path_or_model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def check_export(kiln, work, name, source, opset, extra=(), rtol=RTOL, atol=ATOL):
    """kiln convert SOURCE to `opset` (with `extra` options); the checker must pass the file and
    ONNX Runtime must compute the source's outputs from it."""
    path, feeds = source
    suffix = "".join("-" + a.strip("-").replace("=", "_").replace(",", "x") for a in extra)
    out = os.path.join(work, f"{name}-opset{opset}{suffix}.onnx")
    kiln_convert(kiln, path, out, "--opset", str(opset), *extra)
    exported = onnx.load(out)
    onnx.checker.check_model(exported, full_check=True)
    assert exported.producer_name == "kiln", exported.producer_name
    assert [o.version for o in exported.opset_import if o.domain in ("", "ai.onnx")] == [opset]
    want = run_ort(path, feeds)
    got = run_ort(out, feeds)
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got)):
        assert w.shape == g.shape and w.dtype == g.dtype, (name, opset, i, w.shape, g.shape, w.dtype, g.dtype)
        message = f"{name} opset {opset} {extra} output {i}"
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=message)
    print(f"ok  {name:18} opset {opset} {' '.join(extra):40} {len(exported.graph.node)} nodes")
    return exported


def check_kiln_matches_ort(kiln, work, name, source):
    """`kiln run` on the model itself gives ONNX Runtime's outputs, with the reference kernels and
    the fast ones, unoptimized and at level all (Conv+BN folded, post-ops fused)."""
    path, feeds = source
    want = run_ort(path, feeds)
    outputs = [o.name for o in onnx.load(path).graph.output]
    for kernels in ("reference", "fast"):
        for level in ("none", "all"):
            out_dir = os.path.join(work, f"{name}-run-{kernels}-{level}")
            args = [kiln, "run", path, "--kernels", kernels, "--opt-level", level, "--output-dir", out_dir]
            for key, value in feeds.items():
                file = os.path.join(work, f"{name}-{key}.npy")
                np.save(file, value)
                args += ["--input", f"{key}={file}"]
            result = subprocess.run(args, capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit(f"FAIL: kiln run {name} ({kernels}, {level}): {result.stderr}")
            for output, w in zip(outputs, want):
                g = np.load(os.path.join(out_dir, output.replace("/", "_") + ".npy"))
                np.testing.assert_allclose(g, w, rtol=RTOL_SIMPLIFIED, atol=ATOL_SIMPLIFIED,
                                           err_msg=f"kiln run {name} ({kernels}, {level}) output {output}")
    print(f"ok  {name:18} kiln run matches ONNX Runtime (reference and fast kernels, opt levels none and all)")


def main():
    kiln, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    rng = np.random.default_rng(0)
    builders = [conv_net, transformer_block, yolo_block, opset18_forms, upsample_v9]
    sources = {}  # name: (path, feeds)
    for build in builders:
        m, feeds = build(rng)
        sources[build.__name__] = (os.path.join(work, build.__name__ + ".onnx"), feeds)
        onnx.save(m, sources[build.__name__][0])

    # The same op patterns as the real models (ResNet/MobileNet, BERT, YOLOv5), run by Kiln.
    for name in ("conv_net", "transformer_block", "yolo_block"):
        check_kiln_matches_ort(kiln, work, name, sources[name])

    # conv_net: ReduceMean's axes go back to an attribute below 18.
    newest = min(KILN_NEWEST_OPSET, onnx.defs.onnx_opset_version())
    for opset in (13, 17, 18, 21, newest):
        exported = check_export(kiln, work, "conv_net", sources["conv_net"], opset)
        reduce = next(node for node in exported.graph.node if node.op_type == "ReduceMean")
        has_axes_attr = any(a.name == "axes" for a in reduce.attribute)
        assert has_axes_attr == (opset < 18) and len(reduce.input) == (1 if opset < 18 else 2), reduce
        dims = exported.graph.input[0].type.tensor_type.shape.dim
        assert dims[0].dim_param == "N" and [d.dim_value for d in dims[1:]] == [3, 16, 16], dims
    check_export(kiln, work, "conv_net", sources["conv_net"], 17, ["--simplify"],
                 RTOL_SIMPLIFIED, ATOL_SIMPLIFIED)

    # transformer_block: Gelu needs opset 20; free batch and sequence.
    transformer = sources["transformer_block"]
    for opset in (20, 22):
        check_export(kiln, work, "transformer_block", transformer, opset)
    free = check_export(kiln, work, "transformer_block", transformer, 20, ["--simplify"])
    fixed = check_export(kiln, work, "transformer_block", transformer, 20,
                         ["--simplify", "--shape", "x=2,6,16", "--shape", "mask=2,1,1,6"])
    shape_ops = {"Shape", "Gather", "Unsqueeze", "Concat"}
    assert shape_ops & {node.op_type for node in free.graph.node}, "free dims: the shape arithmetic must stay"
    assert not shape_ops & {node.op_type for node in fixed.graph.node}, "fixed shapes: shape arithmetic folds"
    refused = kiln_convert(kiln, transformer[0], os.path.join(work, "refused.onnx"), "--opset", "17",
                           expect_ok=False)
    assert refused.returncode == 1, refused
    assert "Gelu 'gelu'" in refused.stderr and "opset 20" in refused.stderr, refused.stderr

    # yolo_block: Split's num_outputs (an uneven one too) has no place below 18.
    for opset in (13, 17, 18):
        exported = check_export(kiln, work, "yolo_block", sources["yolo_block"], opset)
        splits = {node.name: node for node in exported.graph.node if node.op_type == "Split"}
        if opset < 18:
            attrs = {a.name for node in splits.values() for a in node.attribute}
            assert "num_outputs" not in attrs, splits
            uneven = splits["split_uneven"]
            sizes = next(i for i in exported.graph.initializer if i.name == uneven.input[1])
            assert list(numpy_helper.to_array(sizes)) == [6, 6, 4], sizes

    # Reduce* without axes but noop_with_empty_axes: ReduceSumSquare squares, ReduceMax copies.
    for opset in (13, 17, 18):
        exported = check_export(kiln, work, "opset18_forms", sources["opset18_forms"], opset)
        if opset < 18:
            ops = {node.name: node.op_type for node in exported.graph.node}
            assert ops["squares"] == "Mul" and ops["same"] == "Identity", ops
    for opset in (13, 17):
        exported = check_export(kiln, work, "upsample_v9", sources["upsample_v9"], opset)
        assert {node.op_type for node in exported.graph.node} == {"Resize"}, exported.graph.node
    print("onnx export: all checks passed")


if __name__ == "__main__":
    main()
