// Kiln's half of the model check (tests/frontends/mxnet_models.py drives it):
//   mxnet_predict SYMBOL.json PARAMS INPUT.npy OUTPUT.npy
// imports an MXNet symbol and its parameters, binds the one graph input to the shape of
// INPUT.npy, compiles the graph with the runtime, runs it and saves the first output.
#include <iostream>
#include <map>

#include "data_variables.h"
#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"
#include "kiln/npy.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: mxnet_predict SYMBOL.json PARAMS INPUT.npy OUTPUT.npy\n";
    return 2;
  }
  try {
    const kiln::mxnet::MxnetSymbol symbol = kiln::mxnet::load_symbol_json(argv[1]);
    const kiln::mxnet::NamedTensors params = kiln::mxnet::load_params(argv[2]);
    const kiln::Tensor input = kiln::npy::load(argv[3]);
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
