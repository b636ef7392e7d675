// Model files into Graphs; see model_loading.h.
#include "deploy/model_loading.h"

#include <algorithm>
#include <set>
#include <vector>

#include "frontends/mxnet/import.h"
#include "frontends/onnx/import.h"
#include "kiln/error.hpp"

namespace kiln::deploy {

namespace {

// The ops whose inputs after the first are learned parameters (MXNet's argument lists: weight,
// bias, gamma, beta, moving statistics, PReLU's slope, the bilinear UpSampling kernel, RNN's
// packed parameters).
bool reads_parameters(const std::string& op) {
  static const std::set<std::string> ops = {
      "Convolution", "Deconvolution", "FullyConnected", "BatchNorm",  "LayerNorm", "InstanceNorm",
      "GroupNorm",   "Embedding",     "LeakyReLU",      "UpSampling", "RNN"};
  return ops.count(op) > 0;
}

}  // namespace

// A parameter the symbol reads that the parameter file lacks would otherwise become a graph
// input and fail at the first call ("input 'fc1_weight' is missing"): the file is checked when it
// is read, naming what it holds, since the usual cause is the parameters of another model.
void check_mxnet_parameters(const mxnet::MxnetSymbol& symbol, const mxnet::NamedTensors& params,
                            const frontends::ModelFiles& files, const std::map<std::string, Shape>& given) {
  std::set<std::string> stored;
  for (const std::string& name : params.names) stored.insert(name.substr(name.find(':') + 1));
  std::vector<std::string> missing;
  std::string first_reader;
  for (const auto& node : symbol.nodes) {
    if (!reads_parameters(node.op)) continue;
    for (size_t i = 1; i < node.inputs.size(); ++i) {
      const auto& source = symbol.nodes.at(static_cast<size_t>(node.inputs[i].node));
      if (source.op != "null" || stored.count(source.name) || given.count(source.name)) continue;
      if (std::find(missing.begin(), missing.end(), source.name) != missing.end()) continue;
      if (missing.empty()) first_reader = node.op + " '" + node.name + "'";
      missing.push_back(source.name);
    }
  }
  if (missing.empty()) return;
  std::string held;
  for (size_t i = 0; i < params.names.size() && i < 8; ++i) held += (i ? ", " : "") + params.names[i];
  if (params.names.size() > 8) held += ", ...";
  raise(ErrorCode::kInvalidArgument, "mxnet model '", files.name, "': parameter '", missing[0], "' (read by ",
        first_reader, ")",
        missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more are" : " is", " not in '",
        files.params_path, "', which holds ", params.names.size(), " arrays (", held,
        "): are these the parameters of another model?");
}

graph::Graph load_graph(const std::string& model_path, int epoch,
                        const std::map<std::string, Shape>& input_shapes) {
  const frontends::ModelFiles files = frontends::resolve_model_files(model_path, epoch);
  if (files.format == frontends::ModelFiles::Format::kOnnx) return onnx::import_model(files.symbol_path);
  const frontends::MxnetCheckpoint checkpoint = frontends::read_mxnet_checkpoint(files);
  check_mxnet_parameters(checkpoint.symbol, checkpoint.params, files, input_shapes);
  return mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name, input_shapes);
}

}  // namespace kiln::deploy
