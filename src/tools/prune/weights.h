// What the pruning tools share: finding the weighted layers of a graph, checking arguments, and
// replacing a layer's constant weight.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::pruning::detail {

// The Conv, Gemm and MatMul nodes (of `ops`) whose weight (input 1) is a float32 constant the
// caller cannot override, in topological order.
std::vector<graph::Node*> weighted_layers(const graph::Graph& g,
                                          const std::vector<std::string>& ops = {"Conv", "Gemm", "MatMul"});
// Raises kiln::Error(kInvalidArgument) naming `where` unless 0 <= ratio < 1.
void check_ratio(double ratio, const std::string& where);
// Raises kiln::Error(kNotFound) naming the first of `names` that is not a node of `layers`.
void check_layer_names(const std::vector<graph::Node*>& layers, const std::vector<std::string>& names,
                       const std::string& where);
// Replaces the constant read by `node` at input `slot` (its own, or a fresh one when other nodes
// read it too) with `data`, whose shape may differ.
void replace_constant(graph::Graph& g, graph::Node* node, int slot, Tensor data);

}  // namespace kiln::pruning::detail
