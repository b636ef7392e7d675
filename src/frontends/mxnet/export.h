// Writes a Kiln Graph as an MXNet model: the reverse of the importer (import.h).
//
//   ExportedModel m = export_graph(g);            // MxnetSymbol + NamedTensors
//   save_checkpoint(g, "out/resnet", 0);          // out/resnet-symbol.json, out/resnet-0000.params
//
// Graph inputs become variables, with `__shape__` when the rank is known (MXNet's 0 for an unknown
// dimension) and `__dtype__` (the mshadow type flag) when the dtype is not float32. Initializers
// become variables whose data is saved as `arg:NAME`, or `aux:NAME` when they feed BatchNorm's
// moving statistics (args first, then aux, as Module.save_checkpoint writes them); so do graph
// inputs that have an initializer. Only what the graph outputs depend on is written.
//
// Each node becomes the MXNet op that MXNet 1.9.1 runs with the same results (Conv -> Convolution,
// Gemm -> FullyConnected, Relu -> Activation, ...) when its attributes, shapes and constant inputs
// allow; the table is in export_ops.cc. Any other node becomes a Kiln op that only Kiln reads back,
// named `_kiln_<Op>` (`_kiln_Resize`), encoded as:
//   - attributes: the node's own (not the schema's defaults), as strings by their schema type:
//     int "3"; float the shortest text that reads back to the same double ("0.1", "1e-05", "inf");
//     string as is; ints "(1, 2)" ("(3,)", "()"); floats "(0.5, 1.5)"; strings a JSON array
//     ("[\"a\", \"b\"]"). Tensor attributes cannot be written (kUnsupported).
//   - `__num_outputs__`: the number of outputs when it is not 1.
//   - `__missing_inputs__`: the positions (in the Kiln node's input list) of absent optional inputs,
//     e.g. "(1,)" for a Resize without roi; the node's MXNet inputs are the present ones, in order.
// The importer's `_kiln_` converter (convert_kiln.cc) reverses this, typing each attribute by the
// op's schema, so such nodes come back unchanged. A model with `_kiln_` nodes loads only in Kiln.
//
// Names: MXNet op nodes take the Kiln node names and variables the value names; where two would
// clash in MXNet (a variable named like another node's `NAME_output`), later ones get a suffix.
// After a round trip, output values carry MXNet's names (`NAME_output`).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet {

struct ExportedModel {
  MxnetSymbol symbol;
  NamedTensors params;
};

// Throws kiln::Error naming the node for a graph that does not verify (see Graph::verify) and
// kUnsupported for a Kiln-only node whose attributes cannot be written (a tensor attribute).
ExportedModel export_graph(const graph::Graph& g);

// Writes PREFIX-symbol.json and PREFIX-EPOCH.params (the epoch with at least four digits, as
// MXNet's save_checkpoint). Throws kInvalidArgument for a negative epoch and kIo when a file
// cannot be written.
void save_checkpoint(const graph::Graph& g, const std::string& prefix, int epoch);

// The `_kiln_` encoding, shared by the exporter and the importer's `_kiln_` converter.
inline constexpr const char* kKilnOpPrefix = "_kiln_";
inline constexpr const char* kNumOutputsAttr = "__num_outputs__";
inline constexpr const char* kMissingInputsAttr = "__missing_inputs__";
// An attribute value as the text described above; `what` names the attribute in errors.
std::string format_kiln_attr(const AttrValue& value, const std::string& what);
// The text back into a value of `type`; throws kInvalidArgument naming `what` when it does not parse.
AttrValue parse_kiln_attr(const std::string& text, AttrType type, const std::string& what);
// The shortest decimal text that reads back to exactly `value` ("0.1", "1e-05", "inf", "nan").
std::string format_double(double value);

// One MXNet node standing for one Kiln node (export_ops.cc makes them, export.cc writes them).
struct MxnetCall {
  struct Operand {
    const graph::Value* value = nullptr;  // a value of the graph, or else
    std::string name;                     // a parameter the exporter derives (e.g. a weight
    Tensor data;                          //   transposed for FullyConnected), named after `name`
    bool aux = false;                     // an auxiliary state (BatchNorm's moving statistics)
  };
  std::string op;
  std::map<std::string, std::string> attrs;
  std::vector<Operand> inputs;
};

// The MXNet op computing `node` exactly as Kiln does, or nothing when there is none (the node is
// then written as `_kiln_<Op>`). Kiln output i is MXNet output i; a call is only returned when
// the node's outputs that MXNet lacks are unused (`used` says whether a value is read).
using ValueUsed = std::function<bool(const graph::Value*)>;
std::optional<MxnetCall> mxnet_equivalent(const graph::Node& node, const ValueUsed& used);

}  // namespace kiln::mxnet
