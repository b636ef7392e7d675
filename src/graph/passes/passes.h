// The graph passes, one per file in this folder. Each factory returns a Pass with its name, the
// properties it needs and provides, and its run function (which returns whether it changed the
// graph). Passes keep the names of graph inputs and outputs.
#pragma once

#include <cstddef>

#include "graph/pass.h"

namespace kiln::graph {

// Removes nodes that compute nothing: Identity, Dropout in inference mode, Cast to the same
// dtype, Reshape/Flatten/Squeeze/Unsqueeze that keep the shape, Transpose by the identity, Pad
// by zeros, x + 0, x - 0, x * 1, x / 1 (when the result has x's shape and dtype). Needs shapes.
Pass identity_elimination_pass();

// Removes nodes none of whose outputs reaches a graph output, then unused initializers.
Pass dead_node_elimination_pass();

struct ConstantFoldingOptions {
  // A node whose outputs together would take more bytes than this stays in the graph, so a
  // constant Expand or ConstantOfShape cannot turn into a huge initializer.
  size_t max_output_bytes = size_t{64} << 20;
};
// Evaluates nodes whose inputs are all constants with the op's reference kernel and turns their
// outputs into initializers; also folds Shape and Size of values whose shape is fully known.
// Random ops, Dropout in training mode and DequantizeLinear (whose int8 input quantized kernels
// read) are left alone. Infers shapes as it goes, so it needs none and provides them.
Pass constant_folding_pass(ConstantFoldingOptions options = {});

// Replaces an If whose condition is a constant by a copy of the branch it takes (its values keep
// their names where free), so that the branch is planned with the rest of the graph.
Pass inline_constant_if_pass();

// Rewrites a Reshape shape computed as Concat of the reshaped tensor's own dimensions (read through
// Shape -> Gather [-> Unsqueeze]) and constants into one constant, with 0 (copy) for the copied
// dimensions: shape arithmetic around a free batch dimension then dies. Needs shapes.
Pass reshape_copied_dims_pass();

// Merges nodes with the same op, inputs and attributes (compared exactly, tensors by value), and
// initializers with the same dtype, shape and bytes.
Pass common_subexpression_elimination_pass();

// Folds an inference-mode BatchNormalization into the Conv before it (constant weights, and the
// Conv's output read only by the BatchNormalization): W' = W * s, B' = (B - mean) * s + beta with
// s = scale / sqrt(var + epsilon) per output channel.
Pass fold_conv_batchnorm_pass();

// Recognizes Gelu written as its formula, x * (1 + Erf(x / sqrt(2))) * 0.5 (how exporters write
// it before opset 20), and makes it one Gelu node.
Pass fuse_gelu_pass();

// Folds what follows a Conv, Gemm or MatMul into one fused op (FusedConv, FusedGemm, FusedMatMul):
// a residual Add (Conv), a constant per-column bias Add (MatMul) and an activation (Relu,
// LeakyRelu, Elu, Sigmoid, HardSigmoid, Tanh, Clip with constant bounds, HardSwish, Gelu, and
// x * Sigmoid(x) as SiLU). Needs shapes.
Pass fuse_post_ops_pass();

// Folds a constant scalar Mul or Div and an Add of a tensor that broadcasts to the product into
// the MatMul before them: one FusedMatMul with `alpha` and that addend (attention scores scaled
// and masked before Softmax, a residual Add after a projection). Runs after fuse_post_ops, on the
// MatMuls it left. Needs shapes.
Pass fuse_matmul_scale_add_pass();

// Turns the QDQ form into int8 ops: DequantizeLinear -> Conv (+ bias) -> [Add of a dequantized
// residual] -> [Relu | Clip] -> [QuantizeLinear] becomes one FusedQLinearConv, MatMul or Gemm
// likewise (with a per-column bias) one FusedQLinearMatMul, and MaxPool,
// Reshape, Flatten, Squeeze, Unsqueeze and Transpose between a DequantizeLinear and a
// QuantizeLinear of the same parameters run on the 8-bit values. Needs shapes.
Pass fuse_quantized_ops_pass();

// The inverse: each fused op becomes its base op followed by the standard ops it stands for, for
// formats that lack Kiln's fused ops (ONNX); FusedQLinearConv and FusedQLinearMatMul become their
// QDQ form again.
Pass expand_fused_ops_pass();

// Not a pass but a short pipeline of them, for the model tools: constant folding, identity
// elimination, BatchNormalization folded into the Conv before it and dead nodes removed, then
// shape inference (unknown run-time shapes allowed). The graph as the runtime simplifies it, short
// of fusion (which would hide a Conv and its activation inside one op).
void simplify_unfused(Graph& g);

}  // namespace kiln::graph
