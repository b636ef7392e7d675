// FLOP counting from the inferred shapes of each node's inputs and outputs.
#include "runtime/flops.h"

#include <optional>
#include <string>
#include <variant>

namespace kiln::runtime {

namespace {

// The concrete shape of a value, if inference left one.
std::optional<Shape> concrete(const graph::Value* v) {
  if (v == nullptr || !v->info) return std::nullopt;
  for (int64_t d : v->info->shape.dims())
    if (d < 0) return std::nullopt;
  return v->info->shape;
}

// The matrix-like op a node computes: its own, or the base op of a fused one.
std::string base_op(const std::string& op) {
  if (op == "FusedConv") return "Conv";
  if (op == "FusedGemm") return "Gemm";
  if (op == "FusedMatMul") return "MatMul";
  if (op == "FusedQLinearConv") return "Conv";
  if (op == "FusedQLinearMatMul" || op == "FusedDynamicQLinearMatMul") return "MatMul";
  return op;
}

// Multiply-adds of a matrix-like node, or nullopt when its shapes are unknown.
std::optional<int64_t> multiply_adds(const graph::Node& node, const std::string& op) {
  // The int8 ops (FusedQLinearConv, FusedQLinearMatMul) take the weight after x's scale and zero
  // point.
  const size_t weight = node.op.rfind("FusedQLinear", 0) == 0 ? 3 : 1;
  if (node.inputs.size() <= weight) return std::nullopt;
  const auto a = concrete(node.inputs[0]), b = concrete(node.inputs[weight]), y = concrete(node.outputs[0]);
  if (!a || !b || !y || a->ndim() == 0 || b->ndim() == 0) return std::nullopt;
  if (op == "Conv") return y->numel() * (b->numel() / (*b)[0]);           // W: (M, C/group, k...)
  if (op == "ConvTranspose") return a->numel() * (b->numel() / (*b)[0]);  // W: (C, M/group, k...)
  if (op == "MatMul") return y->numel() * (*a)[a->ndim() - 1];
  // Gemm: A is (M, K), or (K, M) with transA.
  const auto it = node.attrs.find("transA");
  const int64_t* trans = it == node.attrs.end() ? nullptr : std::get_if<int64_t>(&it->second.variant());
  const bool trans_a = trans != nullptr && *trans != 0;
  return y->numel() * (trans_a ? (*a)[0] : (*a)[a->ndim() - 1]);
}

}  // namespace

FlopCount count_flops(const graph::Graph& graph) {
  FlopCount count;
  for (const graph::Node* node : graph.nodes()) {
    std::optional<int64_t> flops;
    const std::string op = base_op(node->op);
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") {
      // A fused op's residual, bias and activation are a few FLOPs per output: not counted.
      if (const auto macs = multiply_adds(*node, op)) flops = 2 * *macs;
    } else if (node->schema().is_elementwise()) {
      if (const auto y = concrete(node->outputs[0])) flops = y->numel();
    } else {
      continue;
    }
    if (!flops) {
      ++count.unknown_nodes;
      continue;
    }
    count.total += *flops;
    count.by_op[node->op] += *flops;
  }
  return count;
}

}  // namespace kiln::runtime
