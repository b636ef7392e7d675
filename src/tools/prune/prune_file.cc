// prune_model_file (include/kiln/prune.hpp): a model file in, a pruned ONNX model out.
#include "deploy/model_loading.h"
#include "frontends/onnx/export.h"
#include "kiln/prune.hpp"

namespace kiln::pruning {

PruneReport prune_model_file(const std::string& model_path, const std::string& output_path, bool structured,
                             const ChannelPruneOptions& options) {
  graph::Graph model = deploy::load_graph(model_path);
  PruneReport report;
  const graph::Graph pruned =
      structured ? prune_channels(std::move(model), options, &report)
                 : prune_l1_unstructured(std::move(model), options.ratio, options.layers, &report);
  onnx::export_model(pruned, output_path);
  return report;
}

}  // namespace kiln::pruning
