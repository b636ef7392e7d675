// Helpers the pruning tools share (weights.h).
#include "tools/prune/weights.h"

#include <algorithm>
#include <set>

#include "graph/pass.h"
#include "kiln/error.hpp"

namespace kiln::pruning::detail {

std::vector<graph::Node*> weighted_layers(const graph::Graph& g, const std::vector<std::string>& ops) {
  std::vector<graph::Node*> layers;
  for (graph::Node* n : g.topological_order()) {
    if (std::find(ops.begin(), ops.end(), n->op) == ops.end() || n->inputs.size() < 2) continue;
    const graph::Value* w = n->inputs[1];
    if (w && graph::is_fixed_constant(g, w) && w->constant.dtype() == DType::kFloat32) layers.push_back(n);
  }
  return layers;
}

void check_ratio(double ratio, const std::string& where) {
  KILN_CHECK(ratio >= 0 && ratio < 1, ErrorCode::kInvalidArgument, where, ": ratio must be in [0, 1), got ",
             ratio);
}

void check_layer_names(const std::vector<graph::Node*>& layers, const std::vector<std::string>& names,
                       const std::string& where) {
  std::set<std::string> known;
  for (const graph::Node* n : layers) known.insert(n->name);
  for (const std::string& name : names)
    KILN_CHECK(known.count(name), ErrorCode::kNotFound, where, ": layer '", name,
               "' is not a prunable layer of the graph");
}

void replace_constant(graph::Graph& g, graph::Node* node, int slot, Tensor data) {
  graph::Value* old = node->inputs[slot];
  if (old->users.size() == 1 && !graph::is_graph_output(g, old)) {
    old->info = graph::TensorInfo{data.dtype(), data.shape()};
    old->constant = data.contiguous();
    return;
  }
  g.set_input(node, slot, g.add_initializer(g.fresh_name(old->name + "_pruned"), std::move(data)));
}

}  // namespace kiln::pruning::detail
