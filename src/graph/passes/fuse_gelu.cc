// Gelu recognition: exporters write Gelu (erf form) as its formula,
//   y = x * (1 + Erf(x / sqrt(2))) * 0.5
// in five nodes (Div or Mul by 1/sqrt(2), Erf, Add 1, Mul by x, Mul by 0.5, the last two in
// either order and every commutative operand either way round). The chain becomes one Gelu node,
// which fuse_post_ops can then fold into the MatMul before it, and which the fast kernels compute
// in one pass. Every value inside the chain must be read by the next node alone and not be a
// graph output.
#include <cmath>
#include <optional>
#include <set>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

bool near(std::optional<double> value, double want) {
  return value && std::fabs(*value - want) <= 1e-4 * std::fabs(want);
}

// x / sqrt(2), or x * (1 / sqrt(2)): the node scaling x that feeds Erf.
bool scales_by_inverse_sqrt2(const Graph& graph, const Node& n, const Value* x) {
  if (n.inputs.size() != 2 || n.inputs[0] != x) {
    return n.op == "Mul" && n.inputs.size() == 2 && n.inputs[1] == x &&
           near(constant_scalar(graph, n.inputs[0]), M_SQRT1_2);
  }
  if (n.op == "Div") return near(constant_scalar(graph, n.inputs[1]), M_SQRT2);
  return n.op == "Mul" && near(constant_scalar(graph, n.inputs[1]), M_SQRT1_2);
}

struct GeluChain {
  Value* x;
  std::vector<Node*> nodes;  // the last one's output is Gelu(x)
};

// The chain reading x through `scale`, the node that divides it by sqrt(2), if there is one.
std::optional<GeluChain> match(const Graph& graph, Node* scale) {
  if (scale->inputs.size() != 2) return std::nullopt;
  for (Value* x : scale->inputs) {
    if (!x->info || !is_floating(x->info->dtype) || !scales_by_inverse_sqrt2(graph, *scale, x)) continue;
    Node* erf = sole_reader(graph, scale->outputs[0]);
    if (!erf || erf->op != "Erf") continue;
    Node* plus_one = sole_reader(graph, erf->outputs[0]);
    if (!plus_one || plus_one->op != "Add" ||
        !near(constant_scalar(graph, other_input(*plus_one, erf->outputs[0])), 1))
      continue;
    Node* first = sole_reader(graph, plus_one->outputs[0]);
    if (!first || first->op != "Mul") continue;
    Value* other = other_input(*first, plus_one->outputs[0]);
    // x * (1 + erf) * 0.5, or (x * 0.5) * (1 + erf).
    if (other == x) {
      Node* half = sole_reader(graph, first->outputs[0]);
      if (!half || half->op != "Mul" ||
          !near(constant_scalar(graph, other_input(*half, first->outputs[0])), 0.5))
        continue;
      return GeluChain{x, {scale, erf, plus_one, first, half}};
    }
    const Node* halving = other ? other->producer : nullptr;
    if (halving && halving->op == "Mul" && sole_reader(graph, other) == first && other_input(*halving, x) &&
        near(constant_scalar(graph, other_input(*halving, x)), 0.5))
      return GeluChain{x, {const_cast<Node*>(halving), scale, erf, plus_one, first}};
  }
  return std::nullopt;
}

bool fuse_gelu(Graph& graph) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* n : graph.topological_order()) {
    if (removed.count(n) || (n->op != "Div" && n->op != "Mul")) continue;
    const std::optional<GeluChain> chain = match(graph, n);
    if (!chain) continue;
    Node* last = chain->nodes.back();
    Node* gelu = graph.add_node("Gelu", {chain->x}, {}, graph.fresh_name(last->name + "_gelu"));
    gelu->outputs[0]->info = last->outputs[0]->info;
    if (!remove_node_replacing(graph, last, {gelu->outputs[0]})) {
      graph.remove_node(gelu);
      continue;
    }
    removed.insert(chain->nodes.begin(), chain->nodes.end());
    // Nothing reads the rest of the chain now: remove it from the end.
    for (auto it = chain->nodes.rbegin() + 1; it != chain->nodes.rend(); ++it) graph.remove_node(*it);
    changed = true;
  }
  return changed;
}

}  // namespace

Pass fuse_gelu_pass() {
  return Pass{"fuse_gelu", {}, {}, fuse_gelu};
}

}  // namespace kiln::graph
