// Exports a Kiln Graph as an ONNX model (.onnx).
//
//   onnx::export_model(graph, "model.onnx", {.opset = 17});
//
// Kiln's ops are the ONNX ops of the newest opset, so most nodes are written as they are. For an
// older opset (13 and up) each node is rewritten into that opset's form (see opset_downgrade.h):
// Reduce*'s constant axes go back to an attribute before 18, Split loses num_outputs, Upsample
// becomes Resize. A node the chosen opset cannot express (an op added later, an attribute value
// it lacks, axes computed at run time where it needs an attribute) is refused: every such node is
// listed in one kiln::Error(kUnsupported) before anything is written.
//
// The model holds the graph inputs with their dtypes and shapes (a free dimension is a dim_param:
// "INPUT_dimK", or "N" for the first axis of the only input whose first axis is free), the
// initializers (raw_data) that the nodes read, the nodes with their attributes, the outputs with
// their types and value_info for every intermediate whose type is known (see probe_types.h for
// shapes that depend on run-time values), ir_version matching the opset, and producer "kiln".
#pragma once

#include <string>

#include "frontends/onnx/import.h"
#include "graph/graph.h"

// The header keeps protobuf out of its includers (the CLI): only the exporter's own files see the
// generated ONNX classes.

namespace kiln::onnx {

// The opsets of the default domain the exporter writes: kOldestExportOpset to kNewestOpset
// (import.h).
inline constexpr int kOldestExportOpset = 13;

struct ExportOptions {
  int opset = 17;
};

void export_model(const graph::Graph& graph, const std::string& path, const ExportOptions& options = {});
// The serialized ModelProto.
std::string export_model_bytes(const graph::Graph& graph, const ExportOptions& options = {});

}  // namespace kiln::onnx
