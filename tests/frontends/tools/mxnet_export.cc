// Kiln's half of the MXNet export check (tests/frontends/mxnet_export.py drives it):
//   mxnet_export reexport SYMBOL.json PARAMS INPUT.npy PREFIX
//       imports an MXNet model, its one data variable bound to INPUT.npy's shape, and writes it
//       back with Kiln's exporter as PREFIX-symbol.json and PREFIX-0000.params
//   mxnet_export graph NAME PREFIX
//       builds the graph NAME of export_test_graphs.h (conv_net, onnx_mix), runs it with Kiln on a
//       random input and writes PREFIX-symbol.json, PREFIX-0000.params, PREFIX-input.npy and
//       PREFIX-output<i>.npy for each output i
// MXNet then loads Kiln's files, runs them and compares.
#include <iostream>
#include <map>
#include <string>

#include "data_variables.h"
#include "frontends/export_test_graphs.h"
#include "frontends/mxnet/export.h"
#include "frontends/mxnet/import.h"
#include "graph/evaluate.h"
#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"
#include "kiln/npy.hpp"

namespace {

int reexport(const std::string& symbol_path, const std::string& params_path, const std::string& input_path,
             const std::string& prefix) {
  const kiln::mxnet::MxnetSymbol symbol = kiln::mxnet::load_symbol_json(symbol_path);
  const kiln::mxnet::NamedTensors params = kiln::mxnet::load_params(params_path);
  const kiln::Tensor input = kiln::npy::load(input_path);
  const std::map<std::string, kiln::Shape> shapes =
      kiln::mxnet::testing::data_variable_shapes(symbol, params, input.shape());
  if (shapes.size() != 1) {
    std::cerr << "mxnet_export: expected one input variable, found " << shapes.size() << "\n";
    return 1;
  }
  kiln::mxnet::save_checkpoint(kiln::mxnet::import_symbol(symbol, params, symbol_path, shapes), prefix, 0);
  return 0;
}

int write_graph(const std::string& name, const std::string& prefix) {
  std::mt19937 rng(11);
  kiln::graph::Graph g;
  if (name == "conv_net") {
    g = kiln::mxnet::testing::conv_net(rng, 2);
  } else if (name == "onnx_mix") {
    g = kiln::mxnet::testing::onnx_mix(rng);
  } else {
    std::cerr << "mxnet_export: unknown graph '" << name << "' (expected conv_net or onnx_mix)\n";
    return 2;
  }
  const kiln::graph::Value* in = g.inputs().at(0);
  const kiln::Tensor x = kiln::mxnet::testing::random_tensor(in->info->shape, rng);
  const std::vector<kiln::Tensor> outputs = kiln::graph::evaluate(g, {{in->name, x}});
  kiln::mxnet::save_checkpoint(g, prefix, 0);
  kiln::npy::save(prefix + "-input.npy", x);
  for (size_t i = 0; i < outputs.size(); ++i)
    kiln::npy::save(prefix + "-output" + std::to_string(i) + ".npy", outputs[i]);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  try {
    if (mode == "reexport" && argc == 6) return reexport(argv[2], argv[3], argv[4], argv[5]);
    if (mode == "graph" && argc == 4) return write_graph(argv[2], argv[3]);
  } catch (const kiln::Error& e) {
    std::cerr << "mxnet_export: " << e.what() << "\n";
    return 1;
  }
  std::cerr << "usage: mxnet_export reexport SYMBOL.json PARAMS INPUT.npy PREFIX\n"
               "       mxnet_export graph NAME PREFIX\n";
  return 2;
}
