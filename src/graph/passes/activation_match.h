// The activation that reads a value, when it is one a fused op can apply (the list in
// src/ops/fused_activation.h): a single node, or SiLU written as Mul(v, Sigmoid(v)). The float
// fusion (fuse_post_ops) and the int8 one (fuse_quantized_ops) take the same activations, so
// both ask here.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

struct MatchedActivation {
  std::string name;            // the fused op's `activation`
  std::vector<double> params;  // its `activation_params`
  std::vector<Node*> nodes;    // the nodes it stands for, in chain order
  Value* output = nullptr;     // the last one's output
};

// The activation reading `v`, if `v` is read by it alone (SiLU: by its Sigmoid and Mul) and is
// not a graph output; constant Clip bounds only.
std::optional<MatchedActivation> match_activation(const Graph& graph, Value* v);

}  // namespace kiln::graph
