// Predictor::load: resolve the model's files, read them, import them into a Graph; and MXNet's
// form, a symbol file, a parameter file and the data shape.
#include <set>

#include "deploy/model_loading.h"
#include "frontends/model_files.h"
#include "frontends/mxnet/import.h"
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

}  // namespace

Predictor Predictor::load(const std::string& model_path, const PredictorOptions& options) {
  return Predictor(deploy::load_graph(model_path, options.epoch, options.input_shapes), options);
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
  deploy::check_mxnet_parameters(checkpoint.symbol, checkpoint.params, files, with_shape.input_shapes);
  return Predictor(
      mxnet::import_symbol(checkpoint.symbol, checkpoint.params, files.name, with_shape.input_shapes),
      with_shape);
}

}  // namespace

Predictor::Predictor(const std::string& symbol_file, const std::string& params_file, const Shape& data_shape,
                     const PredictorOptions& options)
    : Predictor(load_with_data_shape(symbol_file, params_file, data_shape, options)) {}

}  // namespace kiln
