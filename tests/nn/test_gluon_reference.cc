// The Gluon MLP (Dense(256, relu) - Dense(128, relu) - Dense(10), softmax cross entropy, Adam)
// trained for 3 epochs here and by a float64 numpy reference with its gradients written out
// (tests/nn/tools/gluon_mlp_numpy.py, .venv) from the same initial weights, data and batch order:
// every step's loss agrees within 1e-4 (relative). Dropout is left out: its masks cannot be drawn
// alike in both. A missing .venv fails the test (scripts/setup.sh makes it).
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/autograd.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/npy.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

TEST(GluonReference, MlpLossCurveMatchesNumpy) {
  const std::string python = std::string(KILN_SOURCE_DIR) + "/.venv/bin/python";
  ASSERT_TRUE(std::filesystem::exists(python)) << python << " is missing: run scripts/setup.sh";
  int status = 0;

  TempDir dir;
  constexpr int64_t kSamples = 320, kFeatures = 64, kBatch = 64, kEpochs = 3;
  // Inputs in [0, 1) and labels from a fixed generator (the digits' sizes).
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> unit(0, 1);
  std::vector<float> xs(static_cast<size_t>(kSamples * kFeatures));
  for (float& v : xs) v = unit(gen);
  std::vector<int64_t> ys(static_cast<size_t>(kSamples));
  for (int64_t& v : ys) v = static_cast<int64_t>(gen() % 10);
  const NDArray x = nd::array(xs, {kSamples, kFeatures}), y = nd::array(ys, {kSamples});

  nn::seed(11);
  nn::HybridSequential net;
  net.add<nn::Dense>(256, nn::DenseOptions{.activation = "relu", .in_units = kFeatures});
  net.add<nn::Dense>(128, nn::DenseOptions{.activation = "relu", .in_units = 256});
  net.add<nn::Dense>(10, nn::DenseOptions{.in_units = 128});
  net.initialize(std::make_shared<nn::Xavier>());
  const std::vector<std::string> suffixes = {"0.npy", "1.npy", "2.npy"};
  for (size_t i = 0; i < net.size(); ++i) {
    auto& dense = static_cast<nn::Dense&>(net[i]);
    npy::save((dir.path() / ("w" + suffixes[i])).string(), dense.weight().data().tensor());
    npy::save((dir.path() / ("b" + suffixes[i])).string(), dense.bias().data().tensor());
  }
  npy::save((dir.path() / "x.npy").string(), x.tensor());
  npy::save((dir.path() / "y.npy").string(), y.tensor());

  nn::SoftmaxCrossEntropyLoss loss_fn;
  nn::Trainer trainer(net.collect_params(), "adam", {{"learning_rate", 0.002}});
  nn::DataLoader loader(nn::ArrayDataset({x, y}), kBatch, {.shuffle = true, .seed = 3});
  std::vector<int64_t> order;
  std::vector<double> losses;
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    for (const std::vector<int64_t>& indices : loader.next_epoch()) {
      order.insert(order.end(), indices.begin(), indices.end());
      const std::vector<NDArray> batch = loader.dataset().gather(indices);
      NDArray loss;
      {
        auto rec = autograd::record();
        loss = loss_fn(net(batch[0]), batch[1]);
      }
      loss.backward();
      trainer.step(kBatch);
      losses.push_back(values(nd::mean(loss))[0]);
    }
  }
  const auto steps = static_cast<int64_t>(losses.size());
  npy::save((dir.path() / "order.npy").string(), Tensor::from_vector(order, {steps, kBatch}));
  std::ofstream((dir.path() / "adam.json").string())
      << nlohmann::json{{"layers", 3}, {"lr", 0.002}, {"beta1", 0.9}, {"beta2", 0.999}, {"epsilon", 1e-8}}
             .dump();

  const std::string out = run_command(
      python + " " + KILN_SOURCE_DIR + "/tests/nn/tools/gluon_mlp_numpy.py " + dir.path().string(), status);
  ASSERT_EQ(status, 0) << out;
  const std::vector<double> reference = nlohmann::json::parse(out).get<std::vector<double>>();
  ASSERT_EQ(reference.size(), losses.size());
  for (size_t i = 0; i < losses.size(); ++i)
    EXPECT_NEAR(losses[i], reference[i], 1e-4 * std::abs(reference[i])) << "step " << i;
  EXPECT_LT(losses.back(), losses.front());  // it learned something
}

}  // namespace
}  // namespace kiln::testing
