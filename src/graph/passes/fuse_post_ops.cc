// Post-op fusion: a Conv, Gemm or MatMul and what directly follows it become one fused op
// (FusedConv, FusedGemm, FusedMatMul; see src/ops/fused.cc), which a backend computes in one pass
// over the output instead of writing it and reading it back once per following op:
//   Conv -> [Add(residual of the same shape)] -> [activation]
//   MatMul -> [Add(constant per-column bias)] -> [activation]
//   Gemm -> [activation]
// The activations are the ones fused_activation.h lists; SiLU is matched as x * Sigmoid(x).
// Each value inside the chain must be read by the next node alone and not be a graph output.
// Needs shapes (to check that the residual has the output's shape).
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

// The node that alone reads `v`, if `v` is not also a graph output.
Node* sole_reader(const Graph& graph, const Value* v) {
  if (v->users.size() != 1 || is_graph_output(graph, v)) return nullptr;
  return v->users[0];
}

Value* other_input(const Node& binary, const Value* v) {
  if (binary.inputs.size() != 2) return nullptr;
  return binary.inputs[0] == v ? binary.inputs[1] : binary.inputs[1] == v ? binary.inputs[0] : nullptr;
}

// Same dtype and same shape, free dims in the same places (a free batch dimension shared by the
// whole graph). Should two free dims turn out to differ once shapes are bound, the fused op's
// inference refuses the residual then: it never broadcasts silently.
bool same_info(const Value* a, const Value* b) {
  return a && b && a->info && b->info && a->info->dtype == b->info->dtype && a->info->shape == b->info->shape;
}

std::optional<double> constant_scalar(const Graph& graph, const Value* v) {
  if (!v || !is_fixed_constant(graph, v) || v->constant.numel() != 1) return std::nullopt;
  return v->constant.cast(DType::kFloat64).to_vector<double>()[0];
}

struct Absorbed {
  std::string activation;
  std::vector<double> params;
  std::vector<Node*> nodes;  // in chain order
  Value* output = nullptr;   // the chain's last value
};

// The activation reading `v`, if it is one a fused op can apply.
std::optional<Absorbed> match_activation(const Graph& graph, Value* v) {
  if (v->users.empty() || is_graph_output(graph, v)) return std::nullopt;
  if (v->users.size() == 2) {  // SiLU: Mul(v, Sigmoid(v))
    Node* a = v->users[0];
    Node* b = v->users[1];
    Node* sigmoid = a->op == "Sigmoid" ? a : b->op == "Sigmoid" ? b : nullptr;
    Node* mul = sigmoid == a ? b : a;
    if (!sigmoid || mul->op != "Mul" || other_input(*mul, v) != sigmoid->outputs[0]) return std::nullopt;
    if (sole_reader(graph, sigmoid->outputs[0]) != mul) return std::nullopt;
    return Absorbed{"SiLU", {}, {sigmoid, mul}, mul->outputs[0]};
  }
  Node* n = v->users[0];
  if (n->inputs.empty() || n->inputs[0] != v) return std::nullopt;
  const Attrs attrs = n->schema().bind(n->attrs);
  const std::set<std::string> plain{"Relu", "Sigmoid", "Tanh", "HardSwish"};
  if (plain.count(n->op)) return Absorbed{n->op, {}, {n}, n->outputs[0]};
  if (n->op == "LeakyRelu" || n->op == "Elu")
    return Absorbed{n->op, {attrs.get_float("alpha")}, {n}, n->outputs[0]};
  if (n->op == "HardSigmoid")
    return Absorbed{n->op, {attrs.get_float("alpha"), attrs.get_float("beta")}, {n}, n->outputs[0]};
  if (n->op == "Gelu") {
    return Absorbed{attrs.get_string("approximate") == "tanh" ? "GeluTanh" : "Gelu", {}, {n}, n->outputs[0]};
  }
  if (n->op == "Clip") {
    const Value* lo = n->inputs.size() > 1 ? n->inputs[1] : nullptr;
    const Value* hi = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
    const auto min = lo ? constant_scalar(graph, lo) : std::optional<double>(-INFINITY);
    const auto max = hi ? constant_scalar(graph, hi) : std::optional<double>(INFINITY);
    if (!min || !max) return std::nullopt;
    return Absorbed{"Clip", {*min, *max}, {n}, n->outputs[0]};
  }
  return std::nullopt;
}

// Fuses the chain starting at `anchor`; the nodes it removes are added to `removed`.
bool fuse_at(Graph& graph, Node* anchor, std::set<const Node*>& removed) {
  static const std::map<std::string, std::pair<std::string, size_t>> kFused{
      {"Conv", {"FusedConv", 3}}, {"Gemm", {"FusedGemm", 3}}, {"MatMul", {"FusedMatMul", 2}}};
  const auto fused = kFused.find(anchor->op);
  if (fused == kFused.end()) return false;
  Value* y = anchor->outputs[0];
  if (!y->info || !is_floating(y->info->dtype)) return false;

  std::vector<Value*> inputs = anchor->inputs;
  inputs.resize(fused->second.second, nullptr);
  std::vector<Node*> chain;
  Value* last = y;
  // A residual (Conv) or a constant per-column bias (MatMul), read through an Add.
  if (Node* add = sole_reader(graph, y); add && add->op == "Add" && anchor->op != "Gemm") {
    Value* other = other_input(*add, y);
    const bool residual =
        anchor->op == "Conv" && other != y && same_info(other, y) && same_info(add->outputs[0], y);
    const bool bias = anchor->op == "MatMul" && other && is_fixed_constant(graph, other) &&
                      other->constant.ndim() == 1 && y->info->shape.ndim() >= 1 &&
                      other->constant.numel() == y->info->shape[y->info->shape.ndim() - 1] &&
                      other->constant.dtype() == y->info->dtype && same_info(add->outputs[0], y);
    if (residual || bias) {
      inputs.push_back(other);
      chain.push_back(add);
      last = add->outputs[0];
    }
  }
  std::optional<Absorbed> act = match_activation(graph, last);
  if (act) {
    chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
    last = act->output;
  }
  if (chain.empty()) return false;

  AttrMap attrs = anchor->attrs;
  attrs.insert_or_assign("activation", AttrValue(act ? act->activation : std::string()));
  attrs.insert_or_assign("activation_params", AttrValue(act ? act->params : std::vector<double>{}));
  Node* node = graph.add_node(fused->second.first, inputs, attrs, graph.fresh_name(anchor->name + "_fused"));
  node->outputs[0]->info = last->info;
  if (!remove_node_replacing(graph, last->producer, {node->outputs[0]})) {
    graph.remove_node(node);
    return false;
  }
  // The rest of the chain, last first, now that nothing reads it.
  removed.insert(chain.begin(), chain.end());
  removed.insert(anchor);
  chain.pop_back();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.remove_node(*it);
  graph.remove_node(anchor);
  return true;
}

bool fuse_post_ops(Graph& graph) {
  bool changed = false;
  std::set<const Node*> removed;  // nodes of the order below that a fusion took away
  for (Node* n : graph.topological_order())
    if (!removed.count(n)) changed |= fuse_at(graph, n, removed);
  return changed;
}

}  // namespace

Pass fuse_post_ops_pass() {
  return Pass{"fuse_post_ops", {kShapesProperty}, {kShapesProperty}, fuse_post_ops};
}

}  // namespace kiln::graph
