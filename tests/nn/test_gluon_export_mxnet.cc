// Files written by HybridBlock::export_model load and run in Apache MXNet 1.9.1
// (tests/nn/tools/mxnet_run_export.py imports them as a Gluon SymbolBlock) with the outputs Kiln
// gives, for a network that uses every exportable layer family. Fails, naming the missing
// environment, when .venv-mxnet is not there (the test command makes it).
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/nn/gluon.hpp"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

// Convolutions, normalizations, pooling, every activation layer, Dropout, Flatten and Dense on
// (N, 3, 8, 8) images (random initial weights).
std::unique_ptr<nn::HybridSequential> every_layer_net() {
  auto net = std::make_unique<nn::HybridSequential>();
  net->add<nn::Conv2D>(8, std::vector<int64_t>{3, 3}, nn::ConvOptions{.padding = {1}});
  net->add<nn::BatchNorm>();
  net->add<nn::Activation>("relu");
  net->add<nn::Conv2D>(8, std::vector<int64_t>{3, 3}, nn::ConvOptions{.strides = {2}, .groups = 2});
  net->add<nn::LeakyReLU>(0.1);
  net->add<nn::Conv2DTranspose>(6, std::vector<int64_t>{2, 2}, nn::ConvOptions{.strides = {2}});
  net->add<nn::InstanceNorm>();
  net->add<nn::ELU>(0.5);
  net->add<nn::MaxPool2D>(nn::PoolOptions{.pool_size = {2}});
  net->add<nn::GroupNorm>(2);
  net->add<nn::PReLU>();
  net->add<nn::AvgPool2D>(nn::PoolOptions{.pool_size = {2}, .strides = {1}});
  net->add<nn::SELU>();
  net->add<nn::Dropout>(0.5);
  net->add<nn::Flatten>();
  net->add<nn::Dense>(12, nn::DenseOptions{.activation = "tanh"});
  net->add<nn::LayerNorm>();
  net->add<nn::GELU>();
  net->add<nn::Dense>(10);
  net->add<nn::SiLU>();
  net->add<nn::Swish>(1.5);
  net->initialize(std::make_shared<nn::Xavier>());
  return net;
}

// Exports `net` as traced on `traced`, runs the files in MXNet on `x` and compares with Kiln's
// output on `x`; the Predictor runs the files on `x` too when `x` has another shape.
void expect_mxnet_runs_export(nn::HybridSequential& net, const NDArray& traced, const NDArray& x) {
  const std::filesystem::path root = KILN_SOURCE_DIR;
  const std::filesystem::path python = root / ".venv-mxnet/bin/python";
  ASSERT_TRUE(std::filesystem::exists(python))
      << "no .venv-mxnet environment: " << python << " is missing (scripts/setup-mxnet.sh)";
  TempDir dir;
  net.hybridize();
  net(traced);
  const std::string prefix = (dir.path() / "net").string();
  net.export_model(prefix, 7);
  const NDArray want = net(x);
  if (traced.shape() != x.shape()) {
    Predictor predictor = Predictor::load(prefix + "-symbol.json");
    const std::vector<Tensor> out = predictor.predict({x.tensor().contiguous()});
    ASSERT_EQ(out.size(), 1u);
    ASSERT_EQ(out[0].shape(), want.shape());
    expect_all_near(values(NDArray(out[0])), values(want), 1e-4, "the Predictor's output");
  }
  npy::save((dir.path() / "x.npy").string(), x.tensor().contiguous());
  const std::string out_path = (dir.path() / "out.npy").string();
  int status = 0;
  const std::string command = python.string() + " " + (root / "tests/nn/tools/mxnet_run_export.py").string() +
                              " " + prefix + " 7 " + (dir.path() / "x.npy").string() + " " + out_path +
                              " 2>&1";
  const std::string log = run_command(command, status);
  ASSERT_EQ(status, 0) << command << " failed:\n" << log;
  const NDArray got(npy::load(out_path));
  ASSERT_EQ(got.shape(), want.shape());
  expect_all_near(values(got), values(want), 1e-4, "MXNet's output");
}

TEST(GluonExport, ImageLayersRunInMXNet) {
  std::vector<float> pixels(2 * 3 * 8 * 8);
  for (size_t i = 0; i < pixels.size(); ++i)
    pixels[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i)));
  const NDArray x = nd::array(pixels, {2, 3, 8, 8});
  expect_mxnet_runs_export(*every_layer_net(), x, x);
}

// Flatten and Dense's flattening are exported batch-free (MXNet's Flatten), so files traced at
// batch 2 run at batch 5 in MXNet and in the Predictor.
TEST(GluonExport, ExportedModelRunsAtAnotherBatchSize) {
  auto image = [](int64_t batch) {
    std::vector<float> pixels(static_cast<size_t>(batch * 3 * 8 * 8));
    for (size_t i = 0; i < pixels.size(); ++i)
      pixels[i] = static_cast<float>(std::cos(0.23 * static_cast<double>(i)));
    return nd::array(pixels, {batch, 3, 8, 8});
  };
  nn::HybridSequential net;
  net.add<nn::Conv2D>(4, std::vector<int64_t>{3, 3});
  net.add<nn::MaxPool2D>(nn::PoolOptions{.pool_size = {2}});
  net.add<nn::Dense>(6, nn::DenseOptions{.activation = "relu"});  // flattens its 4-d input
  net.add<nn::Dense>(5);
  net.initialize(std::make_shared<nn::Xavier>());
  expect_mxnet_runs_export(net, image(2), image(5));

  nn::HybridSequential with_flatten;
  with_flatten.add<nn::Conv2D>(4, std::vector<int64_t>{3, 3});
  with_flatten.add<nn::Flatten>();
  with_flatten.add<nn::Dense>(3);
  with_flatten.initialize(std::make_shared<nn::Xavier>());
  expect_mxnet_runs_export(with_flatten, image(2), image(5));
}

TEST(GluonExport, EmbeddingRunsInMXNet) {
  nn::HybridSequential net;
  net.add<nn::Embedding>(20, 4);
  net.add<nn::Dense>(3);
  net.initialize(std::make_shared<nn::Xavier>());
  const NDArray x = nd::array(std::vector<float>{0, 3, 19, 7, 7, 1, 2, 11, 5, 4}, {2, 5});
  expect_mxnet_runs_export(net, x, x);
}

}  // namespace
}  // namespace kiln::testing
