// The symbolic Executor's training state (symbol.hpp): for one signature of array shapes, the
// compiled training forward graph (which also outputs the auxiliary updates and the values the
// backward reads) and gradient graph, and what the last forward(true) computed.
#pragma once

#include <string>
#include <vector>

#include "autograd/graph_gradient.h"
#include "kiln/symbol.hpp"
#include "runtime/executor.h"

namespace kiln {

struct Executor::Training {
  std::string signature;
  std::vector<std::string> inputs;       // the array feeding each forward graph input
  int num_outputs = 0;                   // the symbol's outputs
  std::vector<std::string> aux_updates;  // the auxiliary array each following forward output updates
  std::vector<int> head_outputs;         // the symbol output each head of the gradient is
  std::vector<std::string> wrt;          // the argument each backward output is the gradient of
  autograd::GradientGraphs graphs;
  runtime::Executor forward;
  runtime::Executor backward;
  std::vector<Tensor> feed, results;  // the last training forward's inputs and outputs
  bool ran = false;

  Training(std::string sig, std::vector<std::string> input_arrays, int outputs,
           std::vector<std::string> updates, std::vector<int> heads, std::vector<std::string> arguments,
           autograd::GradientGraphs gradient);
};

}  // namespace kiln
