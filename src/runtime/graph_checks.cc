// Checks and naming shared by compile(), bind_inputs() and StagedProgram.
#include "runtime/graph_checks.h"

namespace kiln::runtime {

std::string graph_label(const graph::Graph& g) {
  return g.name.empty() ? std::string("graph") : "graph '" + g.name + "'";
}

void check_ops_known(const graph::Graph& g) {
  std::string unknown;
  int count = 0;
  for (const graph::Node* n : g.nodes()) {
    if (ops::OpRegistry::global().find(n->op)) continue;
    unknown += (count++ ? ", " : "") + n->label();
  }
  KILN_CHECK(count == 0, ErrorCode::kUnsupported, graph_label(g), ": ", count,
             " node(s) with ops Kiln does not support: ", unknown);
}

bool fits_in_plan(const graph::Value& value) {
  return !value.info || (value.info->is_plain() && !is_string(value.info->dtype));
}

bool fits_in_plan(const graph::Node& node) {
  if (!node.subgraphs.empty()) return false;
  for (const graph::Value* in : node.inputs)
    if (in != nullptr && !fits_in_plan(*in)) return false;
  for (const graph::Value* out : node.outputs)
    if (!fits_in_plan(*out)) return false;
  return true;
}

Attrs bind_node_attrs(const graph::Graph& g, const graph::Node& node) {
  try {
    return node.schema().bind(node.attrs);
  } catch (const Error& e) {
    throw Error(e.code(), graph_label(g) + ": " + node.label() + ": " + e.what());
  }
}

}  // namespace kiln::runtime
