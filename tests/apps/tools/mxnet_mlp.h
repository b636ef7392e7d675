// A small MLP written in Apache MXNet's file format (FullyConnected and relu Activation layers,
// data declared as (0, in) so the batch is free), shared by the Predictor tests and the model
// maker of the command-line test.
#pragma once

#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "kiln/mxnet_format.hpp"

namespace kiln::testing {

// data -> fc1 -> relu1 -> fc2 -> ... -> fcN (no activation after the last layer).
inline mxnet::MxnetSymbol mlp_symbol(const std::vector<int64_t>& dims) {
  using Node = mxnet::MxnetSymbol::Node;
  mxnet::MxnetSymbol s;
  s.attrs["mxnet_version"] = "10901";
  const auto add = [&](Node node, bool variable) {
    s.nodes.push_back(std::move(node));
    const int index = static_cast<int>(s.nodes.size()) - 1;
    if (variable) s.arg_nodes.push_back(index);
    return index;
  };
  int h = add(Node{"null", "data", {{"__shape__", "(0, " + std::to_string(dims[0]) + ")"}}, {}}, true);
  for (size_t i = 1; i < dims.size(); ++i) {
    const std::string l = "fc" + std::to_string(i);
    const int w = add(Node{"null", l + "_weight", {}, {}}, true);
    const int b = add(Node{"null", l + "_bias", {}, {}}, true);
    h = add(Node{"FullyConnected",
                 l,
                 {{"num_hidden", std::to_string(dims[i])}},
                 {{h, 0, 0}, {w, 0, 0}, {b, 0, 0}}},
            false);
    if (i + 1 < dims.size())
      h = add(Node{"Activation", "relu" + std::to_string(i), {{"act_type", "relu"}}, {{h, 0, 0}}}, false);
  }
  s.heads = {{h, 0, 0}};
  return s;
}

inline mxnet::NamedTensors mlp_params(const std::vector<int64_t>& dims, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-0.2f, 0.2f);
  const auto random = [&](const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(shape.numel()));
    for (float& x : v) x = dist(rng);
    return Tensor::from_vector(v, shape);
  };
  mxnet::NamedTensors p;
  for (size_t i = 1; i < dims.size(); ++i) {
    const std::string l = "fc" + std::to_string(i);
    p.names.push_back("arg:" + l + "_weight");
    p.tensors.push_back(random(Shape{dims[i], dims[i - 1]}));
    p.names.push_back("arg:" + l + "_bias");
    p.tensors.push_back(random(Shape{dims[i]}));
  }
  return p;
}

// Writes PREFIX-symbol.json and PREFIX-EPOCH.params (epoch with four digits, as MXNet does).
inline void write_mlp_model(const std::string& prefix, const std::vector<int64_t>& dims, unsigned seed,
                            int epoch = 0) {
  std::ofstream(prefix + "-symbol.json") << mxnet::to_symbol_json(mlp_symbol(dims));
  char name[32];
  std::snprintf(name, sizeof name, "-%04d.params", epoch);
  mxnet::save_params(prefix + name, mlp_params(dims, seed));
}

}  // namespace kiln::testing
