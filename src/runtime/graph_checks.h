// Checks and naming shared by compile(), bind_inputs() and StagedProgram.
#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln::runtime {

// "graph 'mlp'", or "graph" when it has no name: how errors name the model.
std::string graph_label(const graph::Graph& g);

// Lists every node whose op Kiln does not know in one kiln::Error (kUnsupported), so that a
// model's missing ops are all reported before anything else is tried.
void check_ops_known(const graph::Graph& g);

// The node's attributes bound by its op's schema (defaults filled, values checked); an error
// names the graph and the node: "graph 'g': Conv 'conv1': ...".
Attrs bind_node_attrs(const graph::Graph& g, const graph::Node& node);

// Whether a plan can hold the value: a tensor always there (no sequence, no optional) of numbers
// (strings are objects, which an arena does not construct); unknown values are decided later.
bool fits_in_plan(const graph::Value& value);
// Whether a plan can hold the node: it runs no subgraph (control flow runs its subgraphs per
// call) and every value it reads or gives fits in a plan.
bool fits_in_plan(const graph::Node& node);

}  // namespace kiln::runtime
