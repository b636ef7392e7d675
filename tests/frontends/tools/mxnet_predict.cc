// Kiln's half of the model check (tests/frontends/mxnet_models.py drives it):
//   mxnet_predict SYMBOL.json PARAMS INPUT.npy OUTPUT.npy [--as-saved]
// imports an MXNet symbol and its parameters, binds the one graph input to the shape of
// INPUT.npy, compiles the graph with the runtime, runs it and saves the first output. With
// --as-saved the symbol is imported as it was saved, told no input shape, and run by a
// kiln::Predictor, as Predictor::load and `kiln run` run it.
#include <iostream>
#include <map>
#include <string>

#include "data_variables.h"
#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"

int main(int argc, char** argv) {
  const bool as_saved = argc == 6 && std::string(argv[5]) == "--as-saved";
  if (argc != 5 && !as_saved) {
    std::cerr << "usage: mxnet_predict SYMBOL.json PARAMS INPUT.npy OUTPUT.npy [--as-saved]\n";
    return 2;
  }
  try {
    const kiln::mxnet::MxnetSymbol symbol = kiln::mxnet::load_symbol_json(argv[1]);
    const kiln::mxnet::NamedTensors params = kiln::mxnet::load_params(argv[2]);
    const kiln::Tensor input = kiln::npy::load(argv[3]);
    if (as_saved) {
      const kiln::Predictor predictor(kiln::mxnet::import_symbol(symbol, params, argv[1]));
      kiln::npy::save(argv[4], predictor.predict({input}).at(0));
      return 0;
    }
    const std::map<std::string, kiln::Shape> shapes =
        kiln::mxnet::testing::data_variable_shapes(symbol, params, input.shape());
    if (shapes.size() != 1) {
      std::cerr << "mxnet_predict: expected one input variable, found " << shapes.size() << "\n";
      return 1;
    }
    kiln::graph::Graph graph = kiln::mxnet::import_symbol(symbol, params, argv[1], shapes);
    graph.infer_shapes();
    kiln::runtime::Executor exec(kiln::runtime::compile(graph));
    const std::vector<kiln::Tensor> outputs = exec.run({input});
    kiln::npy::save(argv[4], outputs.at(0));
  } catch (const kiln::Error& e) {
    std::cerr << "mxnet_predict: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
