// Dead-node elimination: a node none of whose outputs reaches a graph output computes nothing
// anyone sees. Such nodes are removed, then the initializers nothing reads any more. Graph inputs
// stay even when unused: they are the graph's interface.
#include <algorithm>
#include <unordered_set>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

bool eliminate_dead_nodes(Graph& graph) {
  // Walk back from the graph outputs, marking every node something seen depends on.
  std::unordered_set<const Node*> live;
  std::vector<const Node*> stack;
  for (const Value* out : graph.outputs())
    if (out->producer && live.insert(out->producer).second) stack.push_back(out->producer);
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Value* in : n->inputs)
      if (in && in->producer && live.insert(in->producer).second) stack.push_back(in->producer);
  }
  // Readers of a dead node's outputs are dead too, so removing users before producers (reverse
  // topological order) always finds the outputs unread.
  std::vector<Node*> order = graph.topological_order();
  std::reverse(order.begin(), order.end());
  bool changed = false;
  for (Node* n : order) {
    if (live.count(n)) continue;
    graph.remove_node(n);
    changed = true;
  }
  const size_t constants_before = graph.initializers().size();
  graph.remove_unused_values();
  return changed || graph.initializers().size() != constants_before;
}

}  // namespace

Pass dead_node_elimination_pass() {
  return Pass{"dead_node_elimination", {}, {}, eliminate_dead_nodes};
}

}  // namespace kiln::graph
