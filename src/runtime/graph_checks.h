// Checks and naming shared by compile() and bind_input_shapes().
#pragma once

#include <string>

#include "graph/graph.h"

namespace kiln::runtime {

// "graph 'mlp'", or "graph" when it has no name: how errors name the model.
std::string graph_label(const graph::Graph& g);

// Lists every node whose op Kiln does not know in one kiln::Error (kUnsupported), so that a
// model's missing ops are all reported before anything else is tried.
void check_ops_known(const graph::Graph& g);

}  // namespace kiln::runtime
