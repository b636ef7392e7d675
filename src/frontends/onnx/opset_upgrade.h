// Rewrites a node written for an older opset into the newest form, which is the only form Kiln's
// ops have. Most changes over the opsets moved an attribute to an input (so that it can be
// computed); those become constant inputs. A few ops changed meaning and are rewritten into the
// same computation: Softmax/LogSoftmax/Hardmax before 13 worked on the input coerced to 2-D,
// Resize 10 had no coordinate modes, Scatter became ScatterElements, GroupNormalization before 21
// scaled per group instead of per channel.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kiln/attrs.hpp"

namespace kiln::onnx {

// A node of the model as the importer is about to add it to the Graph.
struct ImportedNode {
  std::string op;
  std::string name;
  AttrMap attrs;
  std::vector<graph::Value*> inputs;  // nullptr: an omitted optional input
  int num_outputs = 1;
};

class UpgradeContext {
 public:
  UpgradeContext(graph::Graph& graph, ImportedNode& node, int opset)
      : graph_(graph), node_(node), opset_(opset) {}

  ImportedNode& node() { return node_; }
  int opset() const { return opset_; }

  // Removes an attribute and returns its value, if the node had it.
  std::optional<AttrValue> take_attr(const std::string& name);
  void set_input(int slot, graph::Value* value);  // grows the input list with omitted inputs
  std::optional<int> input_rank(int i) const;     // when inference already knows it
  DType input_dtype(int i, DType fallback) const;

  graph::Value* constant(Tensor value, const std::string& suffix);
  graph::Value* ints(const std::vector<int64_t>& values, const std::string& suffix);
  // Adds a helper node ("NODE/suffix") and returns its first output.
  graph::Value* add(const std::string& op, std::vector<graph::Value*> inputs, AttrMap attrs,
                    const std::string& suffix);
  // The node is computed by helper nodes instead; `outputs` take the node's output names.
  void replace_with(std::vector<graph::Value*> outputs) { replacement_ = std::move(outputs); }
  const std::optional<std::vector<graph::Value*>>& replacement() const { return replacement_; }

 private:
  graph::Graph& graph_;
  ImportedNode& node_;
  int opset_;
  std::optional<std::vector<graph::Value*>> replacement_;
};

// Applies every rule that concerns the node's op at the context's opset. Throws
// kiln::Error(kUnsupported) for an old form that has no newest equivalent.
void upgrade_to_newest(UpgradeContext& ctx);

}  // namespace kiln::onnx
