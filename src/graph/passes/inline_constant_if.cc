// Inlining an If whose condition is a constant: the branch it would take is copied into the graph
// in its place. Exported models test shapes this way (a rank check, the size of a free
// dimension); once the input shapes are bound those conditions fold to constants, and inlining
// lets the branch's nodes be planned, fused and run like the rest instead of as a subgraph.
//
// The branch's values keep their names where the graph has no value of that name, else take a
// fresh one; an If output that is a graph output keeps its name.
#include <set>
#include <unordered_map>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

std::string free_name(Graph& graph, const std::string& wanted) {
  return graph.find_value(wanted) == nullptr && graph.find_node(wanted) == nullptr ? wanted
                                                                                   : graph.fresh_name(wanted);
}

// Copies `branch` into `graph`, its inputs read from `captured`; returns the values standing for
// its outputs, each produced by a copied node (an Identity where the branch passes a value through),
// so that each can take the name of the If output it replaces.
std::vector<Value*> copy_branch(Graph& graph, const Graph& branch, const std::vector<Value*>& captured,
                                const std::string& prefix) {
  std::unordered_map<const Value*, Value*> in_graph;
  for (size_t k = 0; k < branch.inputs().size(); ++k) in_graph[branch.inputs()[k]] = captured.at(k);
  for (const Value* v : branch.initializers())
    in_graph[v] = graph.add_initializer(free_name(graph, v->name), v->constant);
  std::set<const Value*> made;
  for (const Node* n : branch.topological_order()) {
    std::vector<Value*> inputs;
    for (const Value* in : n->inputs) inputs.push_back(in ? in_graph.at(in) : nullptr);
    std::vector<std::string> names;
    for (const Value* out : n->outputs) names.push_back(free_name(graph, out->name));
    Node* copy = graph.add_node_with_outputs(n->op, std::move(inputs), n->attrs,
                                             free_name(graph, prefix + n->name), names);
    copy->subgraphs = n->subgraphs;
    copy->num_captured = n->num_captured;
    for (size_t i = 0; i < n->outputs.size(); ++i) {
      in_graph[n->outputs[i]] = copy->outputs[i];
      made.insert(copy->outputs[i]);
    }
  }
  std::vector<Value*> outputs;
  std::set<const Value*> taken;
  for (const Value* out : branch.outputs()) {
    Value* v = in_graph.at(out);
    if (!made.count(v) || !taken.insert(v).second)
      v = graph.add_node("Identity", {v}, {}, free_name(graph, prefix + "pass_through"))->outputs[0];
    outputs.push_back(v);
  }
  return outputs;
}

bool inline_constant_ifs(Graph& graph) {
  bool changed = false;
  for (Node* n : graph.topological_order()) {
    if (n->op != "If" || n->subgraphs.size() != 2) continue;
    const std::optional<double> cond = constant_scalar(graph, n->inputs[0]);
    if (!cond) continue;
    const Graph& branch = *n->subgraphs.at(*cond != 0 ? "then_branch" : "else_branch");
    const std::vector<Value*> captured(n->inputs.end() - n->num_captured, n->inputs.end());
    const std::vector<Value*> outputs = copy_branch(graph, branch, captured, n->name + "/");
    changed |= remove_node_replacing(graph, n, outputs);
  }
  return changed;
}

}  // namespace

Pass inline_constant_if_pass() {
  return Pass{"inline_constant_if", {}, {}, inline_constant_ifs};
}

}  // namespace kiln::graph
