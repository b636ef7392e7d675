// SymbolBlock (MXNet 1.x mx.gluon.SymbolBlock): a HybridBlock made from a model graph rather than
// from layers, so that an exported, imported, pruned or converted model trains on with the Gluon
// Trainer and exports again:
//
//   auto net = nn::SymbolBlock::imports("net-symbol.json", {"data"}, "net-0000.params");
//   nn::Trainer trainer(net->collect_params(), "sgd", {{"learning_rate", 0.01}});
//   { auto rec = autograd::record(); loss = loss_fn(net->forward({x})[0], y); }
//   loss.backward(); trainer.step(batch);
//
// Parameters keep their names. From an MXNet symbol they are its arguments and auxiliary states
// with a value (the .params file's, or the params given), as in MXNet; auxiliary states (running
// statistics) take no gradient. The symbol is imported when the block first sees its inputs'
// shapes, and again for new shapes, as MXNet binds it per shape. From a Graph (ONNX, or a pruned
// or otherwise rewritten model) they are its learnable constants: the weights of
// Conv/ConvTranspose/Gemm/MatMul, the scale, bias and running statistics of normalizations, PRelu
// slopes, Gather tables and the non-scalar constant operands of Add/Sub/Mul/Div, also through a
// Reshape or the like; other constants (shapes, scalars, Resize scales) stay constants.
//
// forward() runs the graph node by node through nd::invoke, so autograd records it and
// hybridize() traces it into one CachedOp like any other HybridBlock. In training mode
// (autograd::record(true)) BatchNormalization uses batch statistics and updates the running ones,
// and Dropout drops, as the Gluon layers do; in predict mode both are what the graph says.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/mxnet_format.hpp"
#include "kiln/nn/block.hpp"
#include "kiln/symbol.hpp"

namespace kiln {
namespace graph {
class Graph;
}

namespace nn {

class SymbolBlock : public HybridBlock {
 public:
  // `input_names` are the graph inputs the block takes, in call order (default: every graph
  // input). Every other graph input must have become a constant: throws kiln::Error naming it.
  explicit SymbolBlock(graph::Graph graph, std::vector<std::string> input_names = {});
  // An MXNet symbol with the values of its parameters by name (`arg:`/`aux:` prefixes allowed).
  // Throws kiln::Error naming an input that is not a variable of the symbol.
  SymbolBlock(mxnet::MxnetSymbol symbol, std::vector<std::string> input_names,
              const std::map<std::string, Tensor>& params);
  // mx.gluon.SymbolBlock(outputs, inputs, params).
  SymbolBlock(const Symbol& outputs, std::vector<std::string> input_names,
              const std::map<std::string, NDArray>& params);
  ~SymbolBlock() override;

  // An MXNet model (-symbol.json with its .params) or, for a path ending in ".onnx", an ONNX
  // model with its initializers.
  static std::shared_ptr<SymbolBlock> imports(const std::string& symbol_file,
                                              const std::vector<std::string>& input_names,
                                              const std::string& param_file = "");

  const std::vector<std::string>& input_names() const { return input_names_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  struct Runnable;  // a graph with its nodes in running order
  struct Source;    // the graph, or the symbol and its graphs per input signature
  const Runnable& runnable_for(const std::vector<NDArray>& inputs);

  std::unique_ptr<Source> source_;
  std::vector<std::string> input_names_;
  std::map<std::string, std::shared_ptr<Parameter>> parameters_;  // by name
};

}  // namespace nn
}  // namespace kiln
