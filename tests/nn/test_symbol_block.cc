// SymbolBlock against the Gluon network it was exported from: the same outputs in predict mode,
// the same gradients and running statistics in training mode, Dropout dropping only in training,
// hybridize and export; an ONNX model against the Predictor; errors for graphs it cannot run.
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "frontends/onnx/export.h"
#include "graph/graph.h"
#include "kiln/kiln.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/nn/symbol_block.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

// Conv-BatchNorm-Relu-Pool-Dense-LayerNorm-PReLU-Dense on (N, 3, 6, 6): every kind of parameter a
// graph holds (weights, biases, normalization scales, running statistics, a PReLU slope).
std::unique_ptr<nn::HybridSequential> small_net() {
  auto net = std::make_unique<nn::HybridSequential>();
  net->add<nn::Conv2D>(4, std::vector<int64_t>{3, 3}, nn::ConvOptions{.padding = {1}});
  net->add<nn::BatchNorm>();
  net->add<nn::Activation>("relu");
  net->add<nn::MaxPool2D>();
  net->add<nn::Dense>(8);
  net->add<nn::LayerNorm>();
  net->add<nn::PReLU>();
  net->add<nn::Dense>(3);
  net->initialize(std::make_shared<nn::Xavier>());
  return net;
}

NDArray random_input(int64_t batch, uint32_t seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(batch * 3 * 6 * 6));
  for (float& e : v) e = normal(gen);
  return nd::array(v, {batch, 3, 6, 6});
}

// The exported files of `net` after one predict-mode call on `x`, as a SymbolBlock.
std::shared_ptr<nn::SymbolBlock> exported(nn::HybridSequential& net, const NDArray& x, const TempDir& dir) {
  net(x);
  const std::string prefix = (dir.path() / "net").string();
  net.export_model(prefix, 3);
  return nn::SymbolBlock::imports(prefix + "-symbol.json", {"data"}, prefix + "-0003.params");
}

TEST(SymbolBlock, ImportsAnExportedNetWithItsParametersByName) {
  nn::seed(1);
  auto net = small_net();
  TempDir dir;
  const NDArray x = random_input(2, 5);
  auto block = exported(*net, x, dir);
  std::vector<std::string> want = net->collect_params().keys(), got = block->collect_params().keys();
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);
  for (const auto& p : block->collect_params()) {
    const bool running = p->name().find("running_") != std::string::npos;
    EXPECT_EQ(p->grad_req(), running ? GradReq::kNull : GradReq::kWrite) << p->name();
    expect_all_near(values(p->data()), values(net->collect_params()[p->name()].data()), 0, p->name());
  }
  expect_all_near(values(block->forward({x})[0]), values((*net)(x)), 1e-5, "predict-mode output");
}

TEST(SymbolBlock, TrainingModeGivesTheNetworksGradientsAndRunningStatistics) {
  nn::seed(2);
  auto net = small_net();
  TempDir dir;
  auto block = exported(*net, random_input(2, 6), dir);
  const NDArray x = random_input(4, 7);  // another batch than the export's
  std::map<std::string, NDArray> outputs;
  for (auto [name, model] : {std::pair<std::string, nn::Block*>{"net", net.get()}, {"block", block.get()}}) {
    NDArray y;
    {
      auto recording = autograd::record();
      y = (*model)(x);
      y = nd::invoke1("ReduceSum", {nd::multiply(y, y)}, {{"keepdims", 0}});
    }
    y.backward();
    outputs[name] = y;
  }
  expect_all_near(values(outputs["block"]), values(outputs["net"]), 1e-4, "loss");
  for (const auto& p : block->collect_params()) {
    const nn::Parameter& original = net->collect_params()[p->name()];
    if (p->grad_req() == GradReq::kNull) {
      // Updated from the batch's statistics, as the BatchNorm layer updates its own.
      expect_all_near(values(p->data()), values(original.data()), 1e-5, p->name());
      continue;
    }
    expect_all_near(values(p->grad()), values(original.grad()), 1e-4, p->name() + " gradient");
  }
}

TEST(SymbolBlock, HybridizedRunsTheSameAndExportsAgain) {
  nn::seed(3);
  auto net = small_net();
  TempDir dir;
  const NDArray x = random_input(2, 8);
  auto block = exported(*net, x, dir);
  const std::vector<double> want = values((*net)(x));
  block->hybridize();
  expect_all_near(values(block->forward({x})[0]), want, 1e-5, "hybridized");
  const std::string prefix = (dir.path() / "again").string();
  block->export_model(prefix);
  auto again = nn::SymbolBlock::imports(prefix + "-symbol.json", {"data"}, prefix + "-0000.params");
  expect_all_near(values(again->forward({x})[0]), want, 1e-5, "exported again");
}

TEST(SymbolBlock, DropoutDropsInTrainingModeOnly) {
  nn::seed(4);
  nn::HybridSequential net;
  net.add<nn::Dense>(200);
  net.add<nn::Dropout>(0.5);
  net.initialize(std::make_shared<nn::Xavier>());
  TempDir dir;
  const NDArray x = nd::ones({1, 10});
  net(x);
  const std::string prefix = (dir.path() / "dropout").string();
  net.export_model(prefix);
  auto block = nn::SymbolBlock::imports(prefix + "-symbol.json", {"data"}, prefix + "-0000.params");
  const std::vector<double> dense = values(net(x));
  expect_all_near(values(block->forward({x})[0]), dense, 1e-6, "predict mode");
  std::vector<double> trained;
  {
    auto recording = autograd::record();
    trained = values(block->forward({x})[0]);
  }
  int dropped = 0;
  for (size_t i = 0; i < dense.size(); ++i) {
    if (trained[i] == 0) {
      ++dropped;
      continue;
    }
    EXPECT_NEAR(trained[i], 2 * dense[i], 1e-5) << i;  // kept values scale by 1 / (1 - p)
  }
  EXPECT_GT(dropped, 60);  // of 200 at p = 0.5: 100 expected, 60 is 5.7 sigma below
  EXPECT_LT(dropped, 140);
}

TEST(SymbolBlock, RunsAnOnnxModelAsThePredictorDoes) {
  nn::seed(5);
  auto net = small_net();
  TempDir dir;
  const NDArray x = random_input(2, 9);
  net->hybridize();
  net->operator()(x);
  const std::string prefix = (dir.path() / "net").string();
  net->export_model(prefix);
  const std::string onnx_path = (dir.path() / "net.onnx").string();
  onnx::export_model(Predictor::load(prefix).graph(), onnx_path);
  auto block = nn::SymbolBlock::imports(onnx_path, {});
  ASSERT_EQ(block->input_names().size(), 1u);
  expect_all_near(values(block->forward({x})[0]),
                  values(NDArray(Predictor::load(onnx_path).predict({x.tensor()})[0])), 1e-5, "onnx");
  EXPECT_GT(block->collect_params().size(), 8u);
}

TEST(SymbolBlock, ErrorsNameWhatIsWrong) {
  nn::seed(6);
  auto net = small_net();
  TempDir dir;
  const NDArray x = random_input(2, 10);
  net->operator()(x);
  const std::string prefix = (dir.path() / "net").string();
  net->export_model(prefix);
  const std::string symbol = prefix + "-symbol.json", params = prefix + "-0000.params";
  expect_error([&] { nn::SymbolBlock::imports(symbol, {"image"}, params); }, ErrorCode::kNotFound,
               {"'image' is not an input of the graph"});
  // Without the parameters, the weights are inputs the caller did not name.
  nn::Dense dense(3);
  dense.initialize();
  dense(x);
  dense.export_model(prefix + "_dense");
  auto no_params = nn::SymbolBlock::imports(prefix + "_dense-symbol.json", {"data"});
  expect_error(
      [&] {
        no_params->forward({nd::ones({2, 108})});
      },
      ErrorCode::kInvalidArgument, {"graph input 'dense", "' is neither a data input nor a parameter"});
  auto block = nn::SymbolBlock::imports(symbol, {"data"}, params);
  expect_error([&] { block->forward({x, x}); }, ErrorCode::kInvalidArgument, {"expected 1 inputs, got 2"});
  expect_error([&] { nn::SymbolBlock::imports(prefix + ".onnx", {}, params); }, ErrorCode::kInvalidArgument,
               {"an ONNX model holds its own parameters"});
}

}  // namespace
}  // namespace kiln::testing
