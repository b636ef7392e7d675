// Rewrites a node from the newest opset's form, the only form Kiln's ops have, into the form of
// an older opset for export: the mirror of opset_upgrade.h. Inputs that older opsets took as
// attributes (Reduce*'s axes before 18) go back to attributes when their values are constant;
// attributes an older opset lacks are dropped when they hold the value that older opset behaved
// as; anything else the older opset cannot express is refused.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kiln/attrs.hpp"

namespace kiln::onnx {

// A node of the graph as the exporter is about to write it.
struct ExportedNode {
  std::string op;
  std::string name;
  AttrMap attrs;
  std::vector<graph::Value*> inputs;  // nullptr: an omitted optional input
  std::vector<graph::Value*> outputs;
};

class DowngradeContext {
 public:
  // `graph` is the exporter's own copy: rules may add initializers to it.
  DowngradeContext(graph::Graph& graph, ExportedNode& node, int opset)
      : graph_(graph), node_(node), opset_(opset) {}

  ExportedNode& node() { return node_; }
  int opset() const { return opset_; }
  // "ReduceMean 'head/mean'": how refusals name the node.
  std::string label() const { return node_.op + " '" + node_.name + "'"; }

  // Removes an attribute and returns its value, if the node had it.
  std::optional<AttrValue> take_attr(const std::string& name);
  const AttrValue* find_attr(const std::string& name) const;
  graph::Value* input(int i) const;  // nullptr when omitted or absent
  // Omits input `slot` (and drops trailing omitted inputs).
  void drop_input(int slot);
  void set_input(int slot, graph::Value* value);
  // The values of input i when it is a constant (an initializer), as int64.
  std::optional<std::vector<int64_t>> constant_ints(int i) const;
  std::optional<Shape> input_shape(int i) const;  // when inference knows it
  // A new initializer named after the node.
  graph::Value* constant(Tensor value, const std::string& suffix);
  graph::Value* ints(const std::vector<int64_t>& values, const std::string& suffix);

  // Throws kiln::Error(kUnsupported) naming the node, the opset and why.
  [[noreturn]] void refuse(const std::string& why) const;

 private:
  graph::Graph& graph_;
  ExportedNode& node_;
  int opset_;
};

// Applies every rule that concerns the node's op for the context's opset. Throws
// kiln::Error(kUnsupported) when the opset cannot express the node.
void downgrade_to_opset(DowngradeContext& ctx);

}  // namespace kiln::onnx
