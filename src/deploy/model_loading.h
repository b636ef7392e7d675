// Reading a model file into a Graph, for every face that takes a model path (Predictor::load, the
// quantize, prune and optimize tools): an ONNX file, or an MXNet symbol with its parameter file,
// whose parameters are checked against what the symbol reads.
#pragma once

#include <map>
#include <string>

#include "frontends/model_files.h"
#include "graph/graph.h"

namespace kiln::deploy {

// `model_path` as frontends::resolve_model_files resolves it (epoch -1: the newest parameter
// file), imported with `input_shapes` for the inputs named there.
graph::Graph load_graph(const std::string& model_path, int epoch = -1,
                        const std::map<std::string, Shape>& input_shapes = {});

// Throws kiln::Error(kInvalidArgument) when the symbol reads a parameter (a weight, bias, gamma,
// moving statistic...) that `params` lacks and `given` does not name as an input: naming the first
// missing one, its reader, the parameter file and what it holds (usually another model's file).
void check_mxnet_parameters(const mxnet::MxnetSymbol& symbol, const mxnet::NamedTensors& params,
                            const frontends::ModelFiles& files, const std::map<std::string, Shape>& given);

}  // namespace kiln::deploy
