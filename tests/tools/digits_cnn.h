// The model-tool tests' real model: the CNN of examples/cpp/train_cnn.cpp (Conv-BatchNorm-Relu-
// MaxPool-Conv-Relu-MaxPool-Dense-Dense) trained on scikit-learn's digits (data/digits, written by
// scripts/setup.sh), exported with Gluon's export and imported as a Graph, and its top-1 accuracy
// on the test set.
#pragma once

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "frontends/model_files.h"
#include "frontends/mxnet/import.h"
#include "graph/graph.h"
#include "kiln/kiln.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/npy.hpp"

namespace kiln::testing {

inline const std::string kDigits = std::string(KILN_SOURCE_DIR) + "/data/digits";

// The (N, 64) images of a digits file as (N, 1, 8, 8).
inline Tensor digit_images(const std::string& path) {
  const Tensor flat = npy::load(path);
  return flat.reshape(Shape{flat.shape()[0], 1, 8, 8});
}

// Trains `net` on the training set: Adam at `learning_rate`, batches of 64 shuffled with `seed`.
inline void train_on_digits(nn::HybridBlock& net, int epochs, double learning_rate = 0.002,
                            uint32_t seed = 7) {
  const NDArray train_x(digit_images(kDigits + "/train_x.npy")), train_y(npy::load(kDigits + "/train_y.npy"));
  nn::SoftmaxCrossEntropyLoss loss_fn;
  nn::Trainer trainer(net.collect_params(), "adam", {{"learning_rate", learning_rate}});
  nn::DataLoader loader(nn::ArrayDataset({train_x, train_y}), 64, {.shuffle = true, .seed = seed});
  for (int epoch = 0; epoch < epochs; ++epoch) {
    for (const std::vector<NDArray>& batch : loader) {
      NDArray loss;
      {
        auto recording = autograd::record();
        loss = loss_fn(net(batch[0]), batch[1]);
      }
      loss.backward();
      trainer.step(batch[0].shape()[0]);
    }
  }
}

// The graph Kiln imports from exported files PREFIX-symbol.json / PREFIX-0000.params, named `name`.
inline graph::Graph import_digits_cnn(const std::string& prefix, const std::string& name) {
  const frontends::MxnetCheckpoint files =
      frontends::read_mxnet_checkpoint(frontends::resolve_model_files(prefix));
  return mxnet::import_symbol(files.symbol, files.params, name);
}

// The CNN trained 10 epochs and exported (batch size free); the graph Kiln imports from the
// files, named `name`.
inline graph::Graph trained_digits_cnn(const std::string& name) {
  nn::seed(42);
  nn::HybridSequential net;
  net.add<nn::Conv2D>(16, std::vector<int64_t>{3, 3}, nn::ConvOptions{.padding = {1}});
  net.add<nn::BatchNorm>();
  net.add<nn::Activation>("relu");
  net.add<nn::MaxPool2D>();
  net.add<nn::Conv2D>(32, std::vector<int64_t>{3, 3}, nn::ConvOptions{.padding = {1}, .activation = "relu"});
  net.add<nn::MaxPool2D>();
  net.add<nn::Dense>(64, nn::DenseOptions{.activation = "relu"});
  net.add<nn::Dense>(10);
  net.initialize(std::make_shared<nn::Xavier>());
  net.hybridize();
  train_on_digits(net, 10);
  net(NDArray(digit_images(kDigits + "/test_x.npy")));
  const std::string prefix = (std::filesystem::temp_directory_path() / ("kiln_" + name)).string();
  net.export_model(prefix);
  return import_digits_cnn(prefix, name);
}

// The share of test images whose highest of the 10 `scores` per image is their label.
inline double digits_accuracy(const Tensor& scores) {
  const std::vector<int64_t> labels = npy::load(kDigits + "/test_y.npy").to_vector<int64_t>();
  const std::vector<float> s = scores.cast(DType::kFloat32).to_vector<float>();
  int correct = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    const auto row = s.begin() + static_cast<std::ptrdiff_t>(i * 10);
    correct += std::max_element(row, row + 10) - row == labels[i];
  }
  return static_cast<double>(correct) / static_cast<double>(labels.size());
}

// The accuracy of `model` run by a Predictor with `options`.
inline double digits_accuracy(const graph::Graph& model, const PredictorOptions& options = {}) {
  return digits_accuracy(
      Predictor(model.clone(), options).predict({digit_images(kDigits + "/test_x.npy")})[0]);
}

}  // namespace kiln::testing
