// Identity elimination: removes nodes whose output equals one of their inputs, connecting the
// readers to that input directly.
//
// A node whose output is a graph output is removed only when the input taking its place can be
// renamed to the output's name (see remove_node_replacing); x -> Identity -> y with x a graph
// input keeps its Identity, since both names belong to the graph's interface.
//
// Shapes are only trusted when they are provably equal: an unknown dimension (-1) on both sides
// could still differ at run time unless the element counts pin it down.
#include <algorithm>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

// Whether `a` and `b` are certainly the same shape at run time, given that the op keeps the
// element count: every known dim matches, and one unknown dim in the same place on both sides
// is fixed by the equal counts (unless a known dim is 0, which makes any count work).
bool provably_same_shape_same_count(const Shape& a, const Shape& b) {
  if (a != b) return false;
  const auto unknown = std::count(a.begin(), a.end(), Shape::kUnknown);
  return unknown == 0 || (unknown == 1 && std::find(a.begin(), a.end(), 0) == a.end());
}

// Whether broadcasting a constant of shape `c` against x leaves x's shape as it is: every
// dimension of c is 1 or equal to a known dimension of x.
bool broadcasts_into(const Shape& c, const Shape& x) {
  if (c.ndim() > x.ndim()) return false;
  for (int i = 1; i <= c.ndim(); ++i) {
    const int64_t cd = c[c.ndim() - i], xd = x[x.ndim() - i];
    if (cd != 1 && (xd == Shape::kUnknown || cd != xd)) return false;
  }
  return true;
}

// x (op) c with c a constant filled with `neutral`, broadcasting into x: returns x.
Value* neutral_operand(const Graph& graph, const Node& n, double neutral, bool either_side) {
  for (int side = 1; side >= (either_side ? 0 : 1); --side) {
    Value* c = n.inputs[static_cast<size_t>(side)];
    Value* x = n.inputs[static_cast<size_t>(1 - side)];
    if (!x->info || !is_constant_filled_with(graph, c, neutral)) continue;
    if (x->info->dtype == c->info->dtype && broadcasts_into(c->info->shape, x->info->shape)) return x;
  }
  return nullptr;
}

bool is_identity_perm(const Node& n) {
  const Attrs attrs = n.schema().bind(n.attrs);
  if (!attrs.has("perm")) return n.inputs[0]->info && n.inputs[0]->info->shape.ndim() <= 1;  // reversed axes
  const auto& perm = attrs.get_ints("perm");
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return true;
}

// The value node n's output 0 always equals, or nullptr.
Value* identity_source(const Graph& graph, const Node& n) {
  Value* x = n.inputs.empty() ? nullptr : n.inputs[0];
  if (!x) return nullptr;
  const auto& out_info = n.outputs[0]->info;
  if (n.op == "Identity") return x;
  if (n.op == "Dropout") return is_nondeterministic(graph, n) ? nullptr : x;
  if (n.op == "Cast" || n.op == "CastLike")
    return x->info && out_info && x->info->dtype == out_info->dtype ? x : nullptr;
  if (n.op == "Reshape" || n.op == "Flatten" || n.op == "Squeeze" || n.op == "Unsqueeze") {
    const bool same = x->info && out_info && provably_same_shape_same_count(x->info->shape, out_info->shape);
    return same ? x : nullptr;
  }
  if (n.op == "Transpose") return is_identity_perm(n) ? x : nullptr;
  if (n.op == "Pad") return is_constant_filled_with(graph, n.inputs[1], 0.0) ? x : nullptr;
  if (n.op == "Add") return neutral_operand(graph, n, 0.0, true);
  if (n.op == "Sub") return neutral_operand(graph, n, 0.0, false);
  if (n.op == "Mul") return neutral_operand(graph, n, 1.0, true);
  if (n.op == "Div") return neutral_operand(graph, n, 1.0, false);
  return nullptr;
}

bool eliminate_identities(Graph& graph) {
  bool changed = false;
  for (Node* n : graph.topological_order()) {
    Value* source = identity_source(graph, *n);
    if (!source) continue;
    // Only output 0 has a source; any other output (Dropout's mask) must be unused.
    std::vector<Value*> replacements(n->outputs.size(), nullptr);
    replacements[0] = source;
    changed |= remove_node_replacing(graph, n, replacements);
  }
  return changed;
}

}  // namespace

Pass identity_elimination_pass() {
  // Every removed node passes its input through unchanged, so inferred shapes stay exact.
  return Pass{"identity_elimination", {kShapesProperty}, {kShapesProperty}, eliminate_identities};
}

}  // namespace kiln::graph
