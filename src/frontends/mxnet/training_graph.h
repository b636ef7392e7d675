// The training form of an imported MXNet symbol, for Executor::forward(is_train=true) and
// backward. The importer builds inference graphs; this rewrites the nodes MXNet runs differently
// when training:
//   - BatchNorm (unless use_global_stats) normalizes with the batch's statistics and updates its
//     moving_mean/moving_var (running = running * momentum + batch * (1 - momentum)): the new
//     values are extra graph outputs, which the executor writes into the auxiliary arrays;
//   - Dropout drops with probability p;
//   - SoftmaxOutput is a loss layer: its gradient is (softmax(data) - onehot(label)) * grad_scale
//     (divided by the batch size for normalization='batch') whatever gradient reaches its output.
//     That is the gradient of a SoftmaxCrossEntropyLoss with sum reduction, which is added as the
//     value backward differentiates in its place.
#pragma once

#include <string>
#include <vector>

#include <map>

#include "graph/graph.h"
#include "kiln/mxnet_format.hpp"
#include "kiln/ndarray.hpp"

namespace kiln::mxnet {

// What the symbolic Executor runs: `symbol` imported with every array (arguments and auxiliary
// states) the outputs read as a graph input of the array's shape and dtype, shapes inferred; with
// `every_array`, the arrays nothing reads at inference (SoftmaxOutput's label) too. `input_arrays`
// gets the array name feeding each graph input, in order.
graph::Graph import_with_arrays(const MxnetSymbol& symbol, const std::map<std::string, NDArray>& args,
                                const std::map<std::string, NDArray>& aux,
                                std::vector<std::string>& input_arrays, bool every_array = false);

struct TrainingGraph {
  graph::Graph graph;  // outputs: the symbol's, then one per auxiliary update
  int num_outputs = 0;
  std::vector<std::string> aux_updates;  // per extra output: the auxiliary array (graph input) it updates
  // Per symbol output: the value backward seeds with ones (a loss layer's), or empty when the
  // output's head gradient is given.
  std::vector<std::string> losses;
};

// `inference` is import_symbol's graph of `symbol`, with shapes inferred and every variable an
// input. Throws kiln::Error(kUnsupported) naming the node for a training-time attribute Kiln does
// not implement (SoftmaxOutput normalization='valid', ...).
TrainingGraph make_training_graph(graph::Graph inference, const MxnetSymbol& symbol);

// Puts back the Dropout of each MXNet Dropout node (p > 0) in place of the Identity the importer
// made of it: ONNX Dropout with ratio p and training_mode `training` (Gluon's SymbolBlock switches
// it by mode).
void restore_dropouts(graph::Graph& g, const MxnetSymbol& symbol, bool training);

}  // namespace kiln::mxnet
