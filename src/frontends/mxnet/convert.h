// What an MXNet op converter sees while the importer builds the Graph: the node, its parsed
// attributes, its inputs as graph values (with shapes where known so far) and helpers that add
// Kiln nodes and constants. Converters live in one file per op family (convert_nn.cc,
// convert_tensor.cc) and register themselves in a table keyed by MXNet op name.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontends/mxnet/attr_parse.h"
#include "graph/graph.h"
#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet {

class ConvertContext {
 public:
  using Resolver = std::function<graph::Value*(const MxnetSymbol::Entry&)>;
  ConvertContext(graph::Graph& graph, const MxnetSymbol::Node& node, Resolver resolve);

  const MxnetSymbol::Node& node() const { return node_; }
  const std::string& name() const { return node_.name; }
  const MxnetAttrs& attrs() const { return attrs_; }
  std::string label() const;  // "Convolution 'conv0'"

  int num_inputs() const { return static_cast<int>(node_.inputs.size()); }
  graph::Value* input(int i);
  // The input's shape, which the conversion needs (`why`); throws kUnsupported when it is not
  // known at import time.
  Shape input_shape(int i, const std::string& why);
  // The input's rank, known also when some of its dimensions are not (a free batch).
  int input_rank(int i, const std::string& why);
  DType input_dtype(int i);  // float32 when not known yet

  // Adds a Kiln node reading `inputs`. `suffix` names helper nodes ("NAME/suffix"); the node that
  // produces the MXNet node's result passes "" and so carries the MXNet name. Returns output 0.
  graph::Value* add(const std::string& op, std::vector<graph::Value*> inputs, AttrMap attrs = {},
                    const std::string& suffix = "");
  graph::Node* add_node(const std::string& op, std::vector<graph::Value*> inputs, AttrMap attrs,
                        const std::string& suffix, int num_outputs);
  graph::Value* ints(const std::vector<int64_t>& values, const std::string& suffix);  // an int64 1-D constant
  graph::Value* scalar(double value, DType dtype, const std::string& suffix);         // a 0-d constant
  graph::Value* constant(Tensor value, const std::string& suffix);

  // The values of the MXNet node's visible outputs, in order; they are renamed to MXNet's names.
  void set_outputs(const std::vector<graph::Value*>& outputs);
  void set_output(graph::Value* output) { set_outputs({output}); }
  const std::vector<graph::Value*>& outputs() const { return outputs_; }

  [[noreturn]] void unsupported(const std::string& reason) const;

 private:
  graph::Graph& graph_;
  const MxnetSymbol::Node& node_;
  MxnetAttrs attrs_;
  Resolver resolve_;
  std::vector<graph::Node*> created_;
  std::vector<graph::Value*> outputs_;
};

using Converter = std::function<void(ConvertContext&)>;
using ConverterTable = std::map<std::string, Converter>;

void add_nn_converters(ConverterTable& table);      // convert_nn.cc
void add_tensor_converters(ConverterTable& table);  // convert_tensor.cc
void add_vision_converters(ConverterTable& table);  // convert_vision.cc: UpSampling, Crop, ROIPooling
void add_kiln_converters(ConverterTable& table);    // convert_kiln.cc: `_kiln_<Op>` for every Kiln op

}  // namespace kiln::mxnet
