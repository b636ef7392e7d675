// FLOP counting from the inferred shapes of each node's inputs and outputs.
#include "runtime/flops.h"

#include <algorithm>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace kiln::runtime {

namespace {

// The concrete shape of a value, if inference left one.
std::optional<Shape> concrete(const graph::Value* v) {
  if (v == nullptr || !v->info) return std::nullopt;
  for (int64_t d : v->info->shape.dims())
    if (d < 0) return std::nullopt;
  return v->info->shape;
}

const graph::Value* input(const graph::Node& node, size_t i) {
  return i < node.inputs.size() ? node.inputs[i] : nullptr;
}

// The matrix-like op a node computes: its own, or the base op of a fused or integer one.
std::string base_op(const std::string& op) {
  if (op == "FusedConv" || op == "FusedQLinearConv" || op == "ConvInteger" || op == "QLinearConv")
    return "Conv";
  if (op == "FusedGemm") return "Gemm";
  if (op == "FusedMatMul" || op == "FusedQLinearMatMul" || op == "FusedDynamicQLinearMatMul" ||
      op == "MatMulInteger" || op == "QLinearMatMul")
    return "MatMul";
  return op;
}

// Multiply-adds of a matrix-like node, or nullopt when its shapes are unknown.
std::optional<int64_t> matrix_multiply_adds(const graph::Node& node, const std::string& op) {
  // The QLinear ops take the weight after x's scale and zero point.
  const bool qlinear = node.op.find("QLinear") != std::string::npos && node.op != "FusedDynamicQLinearMatMul";
  const auto a = concrete(input(node, 0)), b = concrete(input(node, qlinear ? 3 : 1)),
             y = concrete(node.outputs[0]);
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

// Attention: Q K^T and the probabilities times V, each a multiply-add per query element (or
// output element) per key position. K is (B, S_kv, H * D) or (B, H, S_kv, D); a cache adds its
// past positions.
std::optional<int64_t> attention_multiply_adds(const graph::Node& node) {
  const auto q = concrete(input(node, 0)), k = concrete(input(node, 1)), y = concrete(node.outputs[0]);
  if (!q || !k || !y || k->ndim() < 3) return std::nullopt;
  int64_t keys = (*k)[k->ndim() - 2];  // S_kv in both layouts
  if (const auto past = concrete(input(node, 4)); past && past->ndim() == 4) keys += (*past)[2];
  return (q->numel() + y->numel()) * keys;
}

// Einsum: one multiply-add (one add for a single operand) per point of the space of all its
// indices; an ellipsis spans the broadcast of the dimensions it covers.
std::optional<int64_t> einsum_operations(const graph::Node& node) {
  const auto it = node.attrs.find("equation");
  const std::string* equation =
      it == node.attrs.end() ? nullptr : std::get_if<std::string>(&it->second.variant());
  if (!equation) return std::nullopt;
  std::string lhs = equation->substr(0, equation->find("->"));
  lhs.erase(std::remove(lhs.begin(), lhs.end(), ' '), lhs.end());
  std::map<char, int64_t> extent;
  std::vector<int64_t> ellipsis;  // broadcast extents, aligned at the right
  size_t start = 0;
  for (size_t operand = 0; operand < node.inputs.size(); ++operand) {
    const size_t end = std::min(lhs.find(',', start), lhs.size());
    std::string term = lhs.substr(start, end - start);
    start = end + 1;
    const auto shape = concrete(input(node, operand));
    if (!shape) return std::nullopt;
    const size_t dots = term.find("...");
    const int letters = static_cast<int>(term.size()) - (dots == std::string::npos ? 0 : 3);
    const int covered = shape->ndim() - letters;
    if (covered < 0) return std::nullopt;
    int axis = 0;
    for (size_t c = 0; c < term.size(); ++c) {
      if (c == dots) {
        const auto n = static_cast<size_t>(covered);
        if (ellipsis.size() < n) ellipsis.insert(ellipsis.begin(), n - ellipsis.size(), 1);
        const size_t offset = ellipsis.size() - n;
        for (size_t e = 0; e < n; ++e)
          ellipsis[offset + e] = std::max(ellipsis[offset + e], (*shape)[axis++]);
        c += 2;
        continue;
      }
      extent[term[c]] = std::max(extent[term[c]], (*shape)[axis++]);
    }
  }
  int64_t points = 1;
  for (const auto& [letter, size] : extent) points *= size;
  for (int64_t size : ellipsis) points *= size;
  return points;
}

// RNN, GRU, LSTM: per time step and sequence, W x_t and R h_{t-1} for every gate and direction;
// W is (directions, gates * hidden, input) and R (directions, gates * hidden, hidden).
std::optional<int64_t> recurrent_multiply_adds(const graph::Node& node) {
  const auto x = concrete(input(node, 0)), w = concrete(input(node, 1)), r = concrete(input(node, 2));
  if (!x || !w || !r || x->ndim() != 3 || (*x)[2] == 0) return std::nullopt;
  const int64_t steps_times_batch = x->numel() / (*x)[2];
  return steps_times_batch * (w->numel() + r->numel());
}

}  // namespace

FlopCount count_flops(const graph::Graph& graph) {
  FlopCount count;
  for (const graph::Node* node : graph.nodes()) {
    std::optional<int64_t> flops;
    const std::string op = base_op(node->op);
    if (op == "Conv" || op == "ConvTranspose" || op == "Gemm" || op == "MatMul") {
      // A fused op's residual, bias and activation are a few FLOPs per output: not counted.
      if (const auto macs = matrix_multiply_adds(*node, op)) flops = 2 * *macs;
    } else if (op == "Attention") {
      if (const auto macs = attention_multiply_adds(*node)) flops = 2 * *macs;
    } else if (op == "Einsum") {
      if (const auto points = einsum_operations(*node)) flops = (node->inputs.size() > 1 ? 2 : 1) * *points;
    } else if (op == "RNN" || op == "GRU" || op == "LSTM") {
      if (const auto macs = recurrent_multiply_adds(*node)) flops = 2 * *macs;
    } else if (node->schema().is_elementwise()) {
      if (const auto y = concrete(node->outputs[0])) flops = y->numel();
    } else {
      ++count.not_counted[node->op];
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

std::string not_counted_text(const FlopCount& count) {
  std::string text;
  for (const auto& [op, nodes] : count.not_counted)
    text += (text.empty() ? "" : ", ") + op + " (" + std::to_string(nodes) + ")";
  return text;
}

}  // namespace kiln::runtime
