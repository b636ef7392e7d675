// Writes the command-line test's fixtures into DIR: an MXNet MLP (mlp-symbol.json,
// mlp-0001.params), an input x.npy of batch 3, and reference.npy, the Predictor's output for it.
#include <iostream>
#include <random>

#include "apps/tools/mxnet_mlp.h"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_mlp_model DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  kiln::testing::write_mlp_model(dir + "/mlp", {20, 32, 10}, 5, 1);
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> x(3 * 20);
  for (float& v : x) v = dist(rng);
  const kiln::Tensor input = kiln::Tensor::from_vector(x, kiln::Shape{3, 20});
  kiln::npy::save(dir + "/x.npy", input);
  const kiln::Predictor predictor = kiln::Predictor::load(dir + "/mlp-symbol.json");
  kiln::npy::save(dir + "/reference.npy", predictor.predict({input})[0]);
  return 0;
}
