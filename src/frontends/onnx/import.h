// Imports an ONNX model (.onnx, with external data files beside it) into a Kiln Graph.
//
//   graph::Graph g = onnx::import_model("resnet50.onnx");
//
// Kiln's ops are the ONNX ops of the newest opset. A model written for an older opset (7 and
// up) is normalized while it is read: attributes that later became inputs (Split's `split`,
// Slice's `starts`, Squeeze's `axes`, Reduce*'s `axes`, Clip's `min`/`max`, Pad's `pads`, ...)
// become constant inputs, and ops whose meaning changed (Softmax before 13, Resize 10, Upsample
// 7) are rewritten to the same computation in the newest form. See opset_upgrade.h.
//
// Initializers (also those listed among the graph inputs) and Constant nodes become graph
// constants; a symbolic dimension ("batch") is a free dimension (-1) bound at run time;
// value_info shapes are kept as hints for values whose shapes depend on data.
//
// If, Loop and Scan (opset 9 and up) come with their subgraphs (graph::Node::subgraphs): the
// values of the graphs around a subgraph that it reads become its node's last inputs.
//
// Everything in the model that Kiln cannot run (an op it lacks, another domain, an attribute
// or attribute value it does not support, a tensor type it does not have) is
// listed in one kiln::Error(kUnsupported) before anything runs, each line naming the op, the
// node, the domain and the opset. A malformed file (bad protobuf, a value used before any node
// produces it, a cycle, a tensor whose bytes do not match its shape) gives kiln::Error(kIo).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "graph/graph.h"
#include "kiln/shape.hpp"

// The header keeps protobuf out of its includers (the runtime's Predictor, the CLI): only the
// importer's own files see the generated ONNX classes.

namespace kiln::onnx {

// The opsets of the default domain this importer reads.
inline constexpr int kOldestOpset = 1;
inline constexpr int kNewestOpset = 28;

struct ImportOptions {
  // Overrides the declared shapes of graph inputs (e.g. to fix a free batch dimension).
  std::map<std::string, Shape> input_shapes;
};

graph::Graph import_model(const std::string& path, const ImportOptions& options = {});
// `base_dir` is where external data files are looked up (empty: external data is refused);
// `name` names the graph in errors.
graph::Graph import_model_bytes(std::string_view bytes, const std::string& base_dir, const std::string& name,
                                const ImportOptions& options = {});

}  // namespace kiln::onnx
