// prune_model_file (include/kiln/prune.hpp): a model file in, a pruned ONNX model out.
#include "frontends/model_files.h"
#include "frontends/mxnet/import.h"
#include "frontends/onnx/export.h"
#include "frontends/onnx/import.h"
#include "kiln/prune.hpp"

namespace kiln::pruning {

PruneReport prune_model_file(const std::string& model_path, const std::string& output_path, bool structured,
                             const ChannelPruneOptions& options) {
  const frontends::ModelFiles files = frontends::resolve_model_files(model_path);
  graph::Graph model;
  if (files.format == frontends::ModelFiles::Format::kOnnx) {
    model = onnx::import_model(files.symbol_path);
  } else {
    const frontends::MxnetCheckpoint checkpoint = frontends::read_mxnet_checkpoint(files);
    model = mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name);
  }
  PruneReport report;
  const graph::Graph pruned =
      structured ? prune_channels(std::move(model), options, &report)
                 : prune_l1_unstructured(std::move(model), options.ratio, options.layers, &report);
  onnx::export_model(pruned, output_path);
  return report;
}

}  // namespace kiln::pruning
