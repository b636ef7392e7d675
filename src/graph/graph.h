// The graph IR: every model, whatever door it came in by (ONNX, MXNet files, Symbol, a traced
// Gluon block), ends up as a Graph; passes rewrite it; the runtime compiles it into a Plan.
//
// A Graph owns Nodes (one op call each, named after an OpSchema in the registry) and Values
// (what flows along edges). A Value is produced by one node output, or is a graph input, or is
// an initializer (a constant such as a weight). Values carry a TensorInfo (dtype and a shape
// whose dims may be -1, e.g. a free batch dimension) once inference has run.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/tensor.hpp"
#include "ops/control_flow.h"
#include "ops/op_schema.h"

namespace kiln::graph {

using ops::TensorInfo;

class Graph;
class Node;

struct Value {
  std::string name;
  std::optional<TensorInfo> info;  // unset until known (graph input declaration or inference)
  Node* producer = nullptr;        // null for graph inputs and initializers
  int producer_output = 0;
  std::vector<Node*> users;  // each node reading this value, once per input slot
  Tensor constant;           // defined for initializers

  bool is_constant() const { return constant.defined(); }
};

class Node {
 public:
  std::string name;
  std::string op;
  AttrMap attrs;
  std::vector<Value*> inputs;  // nullptr marks a missing optional input
  std::vector<Value*> outputs;
  // Control flow (If, Loop, Scan): the graphs the node runs, by the ONNX attribute that holds
  // each (then_branch, else_branch, body). A subgraph reads values of the graphs around it
  // through the node: those are the node's last `num_captured` inputs, and every subgraph of the
  // node takes them, in the same order, as its last inputs, after its own (Loop's iteration
  // number, condition and loop-carried values, ...). Subgraphs are immutable and shared by copies.
  std::map<std::string, std::shared_ptr<const Graph>> subgraphs;
  int num_captured = 0;
  // What each subgraph takes and gives: its outputs inferred for the types and shapes the node's
  // inputs have (where they are known and it infers), else as declared.
  std::map<std::string, ops::SubgraphSignature> subgraph_signatures() const;

  const ops::OpSchema& schema() const;
  // "Conv 'stage2/conv1'": how errors name the node.
  std::string label() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  std::string name;

  // Building. Names must be unique among values (and among nodes); empty names get fresh ones.
  Value* add_input(const std::string& name, std::optional<TensorInfo> info = std::nullopt);
  Value* add_initializer(const std::string& name, Tensor value);
  // Adds a node reading `inputs`. The number of outputs is `num_outputs`, or else the number
  // the op's schema declares as required.
  Node* add_node(const std::string& op, std::vector<Value*> inputs, AttrMap attrs = {},
                 const std::string& name = "", int num_outputs = -1);
  // The same with the outputs' names given (an empty name gets a fresh one), as importers of
  // formats that name every value need.
  Node* add_node_with_outputs(const std::string& op, std::vector<Value*> inputs, AttrMap attrs,
                              const std::string& name, const std::vector<std::string>& output_names);
  void set_outputs(std::vector<Value*> outputs) { outputs_ = std::move(outputs); }
  void add_output(Value* v) { outputs_.push_back(v); }

  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  std::vector<Value*> initializers() const;
  std::vector<Node*> nodes() const;  // in insertion order
  size_t num_nodes() const { return nodes_.size(); }
  Node* find_node(const std::string& name) const;
  Value* find_value(const std::string& name) const;

  // Editing (for passes).
  void replace_all_uses(Value* old_value, Value* new_value);  // inputs of nodes and graph outputs
  void set_input(Node* node, int slot, Value* value);
  // Removes a node; its outputs must be unused (no readers, not graph outputs).
  void remove_node(Node* node);
  // Removes initializers and graph inputs nothing reads (graph inputs only when `inputs_too`).
  void remove_unused_values(bool inputs_too = false);
  // Turns a value into an initializer in place (after constant folding): the producer is dropped.
  void make_constant(Value* value, Tensor data);
  // Gives a value a new (unused) name: a pass that removes the node producing a graph output
  // renames the value that takes its place, so the graph's interface keeps its names.
  void rename_value(Value* value, const std::string& new_name);
  std::string fresh_name(const std::string& prefix);

  // Nodes ordered so that every node comes after the producers of its inputs.
  // Throws kiln::Error(kInvalidArgument) naming a node on a cycle.
  std::vector<Node*> topological_order() const;

  // Checks structure: every input of every node is a graph input, an initializer or a node
  // output of this graph; users lists match; no cycles; ops exist and input counts fit their
  // schemas; output values exist; subgraphs verify too and fit their node (ops/control_flow.h).
  // Throws kiln::Error naming the node and the problem.
  void verify() const;

  // Whole-graph shape and dtype inference in topological order. Constant inputs (initializers)
  // give values to ops whose output shapes depend on them (Reshape, Slice, ...). Errors name
  // the node: "Conv 'conv1': input 1 (W): ...". With `allow_unknown`, what cannot be known
  // before run time is skipped instead (see infer_node) and the rest is still inferred.
  void infer_shapes(bool allow_unknown = false);
  // Infers one node's outputs from its inputs' infos and constant values; returns true when it
  // did. With `allow_unknown`, a node with an input of unknown info, or whose output shapes
  // depend on values known only at run time (kUnsupported), keeps its outputs' infos as they are
  // and false is returned; other errors still throw. Passes use this while they rewrite.
  bool infer_node(Node* node, bool allow_unknown = false);

  Graph clone() const;  // a deep copy (constants share storage: they are immutable)

 private:
  Value* new_value(const std::string& name);
  void verify_subgraphs(const Node& node) const;

  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Value*> values_by_name_;
  std::map<std::string, Node*> nodes_by_name_;
  size_t next_fresh_ = 0;
};

}  // namespace kiln::graph
