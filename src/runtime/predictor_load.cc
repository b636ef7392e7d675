// Predictor::load: resolve the model's files, read them, import them into a Graph.
#include "frontends/mxnet/import.h"
#include "frontends/onnx/import.h"
#include "graph/graph.h"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"
#include "runtime/model_files.h"

namespace kiln {

Predictor Predictor::load(const std::string& model_path, const PredictorOptions& options) {
  const runtime::ModelFiles files = runtime::resolve_model_files(model_path, options.epoch);
  if (files.format == runtime::ModelFiles::Format::kOnnx) {
    return Predictor(onnx::import_model(files.symbol_path), options);
  }
  const runtime::MxnetCheckpoint checkpoint = runtime::read_mxnet_checkpoint(files);
  return Predictor(mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name), options);
}

}  // namespace kiln
