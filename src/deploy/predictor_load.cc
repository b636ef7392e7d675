// Predictor::load: resolve the model's files, read them, import them into a Graph; and MXNet's
// form, a symbol file, a parameter file and the data shape.
#include <algorithm>
#include <map>
#include <set>

#include "frontends/model_files.h"
#include "frontends/mxnet/import.h"
#include "frontends/onnx/import.h"
#include "graph/graph.h"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"

namespace kiln {

namespace {

// The data variable of an MXNet symbol: the variable without a stored parameter, leaving out
// labels ("softmax_label": read by the training outputs only); "data" when there are several.
std::string data_variable(const mxnet::MxnetSymbol& symbol, const mxnet::NamedTensors& params,
                          const std::string& where) {
  std::set<std::string> stored;
  for (const std::string& name : params.names) stored.insert(name.substr(name.find(':') + 1));
  std::vector<std::string> candidates;
  for (const auto& node : symbol.nodes) {
    const bool label = node.name.size() >= 6 && node.name.compare(node.name.size() - 6, 6, "_label") == 0;
    if (node.op == "null" && !stored.count(node.name) && !label) candidates.push_back(node.name);
  }
  if (candidates.size() == 1) return candidates[0];
  std::string names;
  for (const std::string& c : candidates) {
    if (c == "data") return c;
    names += (names.empty() ? "'" : ", '") + c + "'";
  }
  raise(ErrorCode::kInvalidArgument, where,
        ": expected one data variable (a variable without a parameter), found ",
        candidates.empty() ? std::string("none") : names, "; name the input's shape in options.input_shapes");
}

// The ops whose inputs after the first are learned parameters (MXNet's argument lists: weight,
// bias, gamma, beta, moving statistics, PReLU's slope, the bilinear UpSampling kernel, RNN's
// packed parameters).
bool reads_parameters(const std::string& op) {
  static const std::set<std::string> ops = {"Convolution", "Deconvolution", "FullyConnected", "BatchNorm",
                                            "LayerNorm",   "InstanceNorm",  "GroupNorm",      "Embedding",
                                            "LeakyReLU",   "UpSampling",    "RNN"};
  return ops.count(op) > 0;
}

// A parameter the symbol reads that the parameter file lacks would otherwise become a graph
// input and fail at the first call ("input 'fc1_weight' is missing"): the file is checked when it
// is read, naming what it holds, since the usual cause is the parameters of another model.
void check_parameters(const mxnet::MxnetSymbol& symbol, const mxnet::NamedTensors& params,
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
        first_reader, ")", missing.size() > 1 ? " and " + std::to_string(missing.size() - 1) + " more are" : " is",
        " not in '", files.params_path, "', which holds ", params.names.size(), " arrays (", held,
        "): are these the parameters of another model?");
}

}  // namespace

Predictor Predictor::load(const std::string& model_path, const PredictorOptions& options) {
  const frontends::ModelFiles files = frontends::resolve_model_files(model_path, options.epoch);
  if (files.format == frontends::ModelFiles::Format::kOnnx) {
    return Predictor(onnx::import_model(files.symbol_path), options);
  }
  const frontends::MxnetCheckpoint checkpoint = frontends::read_mxnet_checkpoint(files);
  check_parameters(checkpoint.symbol, checkpoint.params, files, options.input_shapes);
  return Predictor(
      mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name, options.input_shapes), options);
}

namespace {

// The seed form's Predictor: the checkpoint read, its data variable given `data_shape`.
Predictor load_with_data_shape(const std::string& symbol_file, const std::string& params_file,
                               const Shape& data_shape, const PredictorOptions& options) {
  frontends::ModelFiles files;
  files.symbol_path = symbol_file;
  files.params_path = params_file;
  files.name = frontends::model_name(symbol_file);
  const frontends::MxnetCheckpoint checkpoint = frontends::read_mxnet_checkpoint(files);
  PredictorOptions with_shape = options;
  with_shape.input_shapes[data_variable(checkpoint.symbol, checkpoint.params, "model '" + files.name + "'")] =
      data_shape;
  check_parameters(checkpoint.symbol, checkpoint.params, files, with_shape.input_shapes);
  return Predictor(
      mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name, with_shape.input_shapes),
      with_shape);
}

}  // namespace

Predictor::Predictor(const std::string& symbol_file, const std::string& params_file, const Shape& data_shape,
                     const PredictorOptions& options)
    : Predictor(load_with_data_shape(symbol_file, params_file, data_shape, options)) {}

}  // namespace kiln
