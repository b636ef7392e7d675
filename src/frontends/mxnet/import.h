// Imports an MXNet symbol (-symbol.json) with its parameters (.params) into a Kiln Graph. MXNet
// ops map onto Kiln's ONNX-semantics ops (Convolution -> Conv, FullyConnected -> Flatten + Gemm,
// BatchNorm -> BatchNormalization in inference form, ...); the graph always has inference
// semantics (Dropout is the identity, SoftmaxOutput a softmax whose label is never read).
//
//   MxnetSymbol symbol = load_symbol_json("resnet18_v1-symbol.json");
//   NamedTensors params = load_params("resnet18_v1-0000.params");
//   graph::Graph g = import_symbol(symbol, params, "resnet18_v1", {{"data", Shape{1, 3, 224, 224}}});
//
// Variables found in `params` (named `arg:NAME`, `aux:NAME` or plain `NAME`) become initializers;
// the other variables the outputs depend on become graph inputs, with the shape from
// `input_shapes`, else from the variable's `__shape__` attribute, else unknown (bound later with
// runtime::bind_input_shapes, which then takes float32; a `__dtype__` other than float32 is only
// kept for an input whose shape is given). Nodes written by Kiln's exporter as `_kiln_<Op>` come
// back as the Kiln op (see export.h). Graph outputs carry MXNet's names: `NAME_output`, or
// `NAME_output0`, `NAME_output1`, ... for nodes with several outputs.
//
// Every node that cannot be imported (an op Kiln does not have, an attribute value it does not
// support, a Reshape whose input shape is unknown) is listed in one kiln::Error(kUnsupported),
// thrown before anything runs: "mxnet model 'net': 2 nodes cannot be imported:\n  LRN 'lrn0':
// ...".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet {

graph::Graph import_symbol(const MxnetSymbol& symbol, const NamedTensors& params,
                           const std::string& model_name);
graph::Graph import_symbol(const MxnetSymbol& symbol, const NamedTensors& params,
                           const std::string& model_name, const std::map<std::string, Shape>& input_shapes);

// MXNet's Reshape `shape` with its special values resolved against the input shape: 0 copies a
// dimension, -1 is inferred, -2 copies the rest, -3 merges two dimensions, -4 splits one into
// the next two values (one may be -1); `reverse` matches from the right. Throws kiln::Error
// (kShapeMismatch) naming `what` when the shape does not fit the input.
std::vector<int64_t> resolve_reshape(const Shape& input, const std::vector<int64_t>& spec, bool reverse,
                                     const std::string& what);

// The number of outputs an MXNet node shows (list_outputs), e.g. num_outputs for SliceChannel.
int num_visible_outputs(const MxnetSymbol::Node& node);
// MXNet's output names of a node: "NAME_output", or "NAME_output0", ... when it shows several.
std::string output_name(const MxnetSymbol::Node& node, int index);
// The inputs of an op that are auxiliary states (BatchNorm's moving_mean and moving_var).
std::vector<int> auxiliary_inputs(const std::string& op);

}  // namespace kiln::mxnet
