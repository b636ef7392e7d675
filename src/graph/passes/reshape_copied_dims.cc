// Reshape shapes that copy the input's own dimensions: exporters write x.view(x.size(0), -1, 12,
// 64) as Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1], [12], [64])), shape arithmetic
// that constant folding cannot remove while the batch dimension is free. But Reshape's 0 means
// "copy this dimension of the input", so an element taken from dimension j of the reshaped tensor
// itself, at position j of the shape, is 0; when every element is such a copy or a constant, the
// shape becomes one constant ([0, -1, 12, 64]) and the Shape/Gather/Concat chain is dead.
// Only for allowzero = 0 (where 0 copies) and shapes with no literal 0 and at most one -1.
#include <algorithm>
#include <optional>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

// The one int64 value of a fixed 1-element constant.
std::optional<int64_t> single_int(const Graph& graph, const Value* v) {
  if (!v || !is_fixed_constant(graph, v) || v->constant.numel() != 1) return std::nullopt;
  if (v->constant.dtype() != DType::kInt64 && v->constant.dtype() != DType::kInt32) return std::nullopt;
  return v->constant.cast(DType::kInt64).to_vector<int64_t>()[0];
}

// Whether `piece` (a 1-element int64 vector) is dimension `position` of `data`, read through
// Shape(data) -> Gather(index), possibly followed by Unsqueeze(axes = [0]).
bool copies_dimension(const Graph& graph, const Value* piece, const Value* data, int64_t position) {
  const Node* n = piece->producer;
  // One element either way: a 0-d index then Unsqueeze, or a 1-element index alone.
  const bool unsqueezed =
      n && n->op == "Unsqueeze" && n->inputs.size() == 2 && single_int(graph, n->inputs[1]) == int64_t{0};
  if (unsqueezed) n = n->inputs[0]->producer;
  if (!n || n->op != "Gather" || n->inputs.size() != 2 || !is_fixed_constant(graph, n->inputs[1]))
    return false;
  if (n->inputs[1]->constant.ndim() != (unsqueezed ? 0 : 1)) return false;
  const Node* shape = n->inputs[0]->producer;
  if (!shape || shape->op != "Shape" || shape->inputs[0] != data || shape->attrs.count("start") ||
      shape->attrs.count("end")) {
    return false;
  }
  auto index = single_int(graph, n->inputs[1]);
  if (!index) return false;
  // A negative index counts from the end: it needs the rank, which inference may not know yet
  // (shapes after a data-dependent op); a non-negative one does not.
  if (*index < 0 && data->info) *index += data->info->shape.ndim();
  return *index == position;
}

bool simplify(Graph& graph, Node* reshape) {
  if (reshape->op != "Reshape" || reshape->inputs.size() != 2) return false;
  if (reshape->schema().bind(reshape->attrs).get_int("allowzero") != 0) return false;
  Value* data = reshape->inputs[0];
  const Node* concat = reshape->inputs[1]->producer;
  if (!concat || concat->op != "Concat") return false;
  std::vector<int64_t> shape;
  bool copied_any = false;
  for (const Value* piece : concat->inputs) {
    const int64_t position = static_cast<int64_t>(shape.size());
    if (!piece) return false;
    if (const auto value = single_int(graph, piece)) {
      if (*value == 0) return false;  // a literal 0 would itself copy: keep the node's meaning simple
      shape.push_back(*value);
    } else if (copies_dimension(graph, piece, data, position)) {
      shape.push_back(0);
      copied_any = true;
    } else {
      return false;
    }
  }
  if (!copied_any || std::count(shape.begin(), shape.end(), -1) > 1) return false;
  Value* constant =
      graph.add_initializer(graph.fresh_name(reshape->name + "/shape"),
                            Tensor::from_vector<int64_t>(shape, Shape{static_cast<int64_t>(shape.size())}));
  graph.set_input(reshape, 1, constant);
  return true;
}

bool reshape_copied_dims(Graph& graph) {
  bool changed = false;
  for (Node* n : graph.nodes()) changed |= simplify(graph, n);
  return changed;
}

}  // namespace

Pass reshape_copied_dims_pass() {
  // The Reshape computes the same shape as before, so inferred shapes stay as they are.
  return Pass{"reshape_copied_dims", {kShapesProperty}, {kShapesProperty}, reshape_copied_dims};
}

}  // namespace kiln::graph
