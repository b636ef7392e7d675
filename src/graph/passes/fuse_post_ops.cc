// Post-op fusion: a Conv, Gemm or MatMul and what directly follows it become one fused op
// (FusedConv, FusedGemm, FusedMatMul; see src/ops/fused.cc), which a backend computes in one pass
// over the output instead of writing it and reading it back once per following op:
//   Conv -> [Add(residual of the same shape)] -> [activation]
//   MatMul -> [Add(constant per-column bias)] -> [activation]
//   Gemm -> [activation]
// The activations are the ones fused_activation.h lists (activation_match.h finds them); SiLU is
// matched as x * Sigmoid(x).
// Each value inside the chain must be read by the next node alone and not be a graph output.
// Needs shapes (to check that the residual has the output's shape).
#include <map>
#include <optional>
#include <set>

#include "graph/passes/activation_match.h"
#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

// Same dtype and same shape, free dims in the same places (a free batch dimension shared by the
// whole graph). Should two free dims turn out to differ once shapes are bound, the fused op's
// inference refuses the residual then: it never broadcasts silently.
bool same_info(const Value* a, const Value* b) {
  return a && b && a->info && b->info && a->info->dtype == b->info->dtype && a->info->shape == b->info->shape;
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
  std::optional<MatchedActivation> act = match_activation(graph, last);
  if (act) {
    chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
    last = act->output;
  }
  if (chain.empty()) return false;

  AttrMap attrs = anchor->attrs;
  attrs.insert_or_assign("activation", AttrValue(act ? act->name : std::string()));
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
