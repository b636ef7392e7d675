// A graph pass: a named rewrite of a Graph that declares which graph properties it needs and
// which hold after it (the nnvm / relax idea), plus the small rewriting helpers passes share.
//
// Properties are plain strings. The pass manager knows how to establish "shapes" (it runs
// Graph::infer_shapes, allowing values whose shapes are known only at run time to stay unknown,
// so passes check Value::info before using it); any other need must be provided by an earlier pass.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

struct Pass {
  std::string name;
  // Properties that must hold before the pass runs. (Not `requires`: a C++20 keyword.)
  std::vector<std::string> needs;
  // Properties that hold after the pass runs. Once a pass changes the graph, every property it
  // does not list here is considered stale.
  std::vector<std::string> provides;
  std::function<bool(Graph&)> run;  // returns whether the graph changed
};

// The property "every value's dtype and shape are as inference computes them, where it can".
inline constexpr const char* kShapesProperty = "shapes";

// ---- helpers shared by passes ------------------------------------------------------------

bool is_graph_input(const Graph& graph, const Value* value);
bool is_graph_output(const Graph& graph, const Value* value);
// An initializer the caller cannot override: a constant that is not also a graph input.
bool is_fixed_constant(const Graph& graph, const Value* value);
// Ops whose result differs from run to run (random draws, Dropout in training mode): they are
// neither folded nor merged.
bool is_nondeterministic(const Graph& graph, const Node& node);
// Whether every element of a fixed constant equals `scalar`.
bool is_constant_filled_with(const Graph& graph, const Value* value, double scalar);
// The value of a fixed constant of one element, as a double; nullopt for anything else.
std::optional<double> constant_scalar(const Graph& graph, const Value* value);
// The node that alone reads `value`, when `value` is not also a graph output; else null.
Node* sole_reader(const Graph& graph, const Value* value);
// For a node of two inputs reading `value`: its other input; else null.
Value* other_input(const Node& binary, const Value* value);

// Removes `node`, redirecting every reader of output i to replacements[i] (nullptr: output i
// must be unused). A graph output keeps its name: the replacement value is renamed to it. That
// is impossible when the replacement is itself part of the graph's interface (a graph input, an
// initializer or another graph output); then nothing changes and the call returns false.
bool remove_node_replacing(Graph& graph, Node* node, const std::vector<Value*>& replacements);

}  // namespace kiln::graph
