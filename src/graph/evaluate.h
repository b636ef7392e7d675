// A plain interpreter for graphs: runs every node's reference kernel in topological order. It is
// the oracle that passes and compiled plans are checked against, not a fast path.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// Computes the graph outputs, in order, from `inputs` (keyed by graph input name). Every graph
// input that is not also an initializer must be given; an initializer that is also a graph input
// may be overridden. Throws kiln::Error naming the input or node at fault.
std::vector<Tensor> evaluate(const Graph& graph, const std::map<std::string, Tensor>& inputs);

}  // namespace kiln::graph
