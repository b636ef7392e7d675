// MatMul -> [Mul or Div by a constant scalar] -> [Add of a tensor that broadcasts to the product]
// becomes one FusedMatMul with `alpha` and that addend, which a backend computes as post-ops of the
// matrix product (oneDNN: eltwise linear, then binary add with broadcast) instead of writing the
// product and reading it back once per following op. What it matches in transformers:
//   attention scores   MatMul(Q, K^T) -> Div(sqrt(d)) -> Add(mask (N, 1, 1, S)) -> Softmax
//   residuals          MatMul(h, W_o) -> Add(x)     (x of the product's shape)
// Runs after fuse_post_ops, which takes a constant per-column bias and an activation first (the
// form FusedMatMul's activation needs); this pass takes the MatMuls it left. Each value inside the
// chain must be read by the next node alone and not be a graph output. Needs shapes (the addend
// must broadcast to the product without changing its shape).
#include <optional>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

// The factor a Mul or Div by a constant scalar applies to `v` (Div only as the dividend).
std::optional<double> scale_of(const Graph& graph, const Node& n, const Value* v) {
  if (n.inputs.size() != 2 || (n.op != "Mul" && n.op != "Div")) return std::nullopt;
  if (n.op == "Div") {
    const auto divisor = n.inputs[0] == v ? constant_scalar(graph, n.inputs[1]) : std::nullopt;
    if (!divisor || *divisor == 0.0) return std::nullopt;
    return 1.0 / *divisor;
  }
  return constant_scalar(graph, n.inputs[0] == v ? n.inputs[1] : n.inputs[0]);
}

// The other input of an Add reading `v` when it broadcasts to `v`'s shape (which the sum keeps).
Value* broadcast_addend(const Node& add, const Value* v) {
  if (add.op != "Add" || add.inputs.size() != 2 || add.inputs[0] == add.inputs[1]) return nullptr;
  Value* other = add.inputs[0] == v ? add.inputs[1] : add.inputs[0];
  if (!other->info || !v->info || !add.outputs[0]->info || other->info->dtype != v->info->dtype)
    return nullptr;
  const Shape& y = v->info->shape;
  const Shape& e = other->info->shape;
  if (add.outputs[0]->info->shape != y) return nullptr;
  // A free dimension must face a free dimension (a batch size the whole graph shares), as
  // fuse_post_ops requires of residuals: should they differ once shapes are bound, FusedMatMul's
  // inference refuses the addend rather than broadcast it.
  if (e.ndim() > y.ndim()) return nullptr;
  for (int a = 0; a < e.ndim(); ++a) {
    const int64_t d = e[a];
    if (d != 1 && d != y[y.ndim() - e.ndim() + a]) return nullptr;
  }
  return other;
}

bool fuse_at(Graph& graph, Node* matmul) {
  if (matmul->op != "MatMul") return false;
  Value* y = matmul->outputs[0];
  if (!y->info || !is_floating(y->info->dtype)) return false;
  std::vector<Node*> chain;
  Value* last = y;
  double alpha = 1.0;
  if (Node* n = sole_reader(graph, last)) {
    if (const auto scale = scale_of(graph, *n, last)) {
      alpha = *scale;
      chain.push_back(n);
      last = n->outputs[0];
    }
  }
  Value* addend = nullptr;
  if (Node* n = sole_reader(graph, last)) {
    addend = broadcast_addend(*n, last);
    if (addend != nullptr) {
      chain.push_back(n);
      last = n->outputs[0];
    }
  }
  if (chain.empty() || !last->info || last->info->dtype != y->info->dtype) return false;
  std::vector<Value*> inputs = matmul->inputs;
  if (addend != nullptr) inputs.push_back(addend);
  AttrMap attrs = matmul->attrs;
  attrs.insert_or_assign("alpha", AttrValue(alpha));
  attrs.insert_or_assign("activation", AttrValue(std::string()));
  attrs.insert_or_assign("activation_params", AttrValue(std::vector<double>{}));
  Node* fused = graph.add_node("FusedMatMul", inputs, attrs, graph.fresh_name(matmul->name + "_fused"));
  fused->outputs[0]->info = last->info;
  if (!remove_node_replacing(graph, last->producer, {fused->outputs[0]})) {
    graph.remove_node(fused);
    return false;
  }
  // The rest of the chain, last first, now that nothing reads it.
  chain.pop_back();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.remove_node(*it);
  graph.remove_node(matmul);
  return true;
}

bool fuse_matmul_scale_add(Graph& graph) {
  bool changed = false;
  // A fusion removes only its own MatMul and the nodes after it, which no later MatMul of this
  // list is; the list is taken before any change.
  std::vector<Node*> matmuls;
  for (Node* n : graph.topological_order())
    if (n->op == "MatMul") matmuls.push_back(n);
  for (Node* n : matmuls) changed |= fuse_at(graph, n);
  return changed;
}

}  // namespace

Pass fuse_matmul_scale_add_pass() {
  return Pass{"fuse_matmul_scale_add", {kShapesProperty}, {kShapesProperty}, fuse_matmul_scale_add};
}

}  // namespace kiln::graph
