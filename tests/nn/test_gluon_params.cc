// Parameters and blocks: initialization rules, save_parameters / load_parameters round trips in
// MXNet's .params format (Gluon's structural names, and full names), the load errors, and a
// hybridized block against the same block run op by op.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "kiln/autograd.hpp"
#include "kiln/mxnet_format.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/predictor.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

// Adds Dense(4) - BatchNorm - Dense(2), the layers of small_net, with their shapes still deferred.
void add_small_layers(nn::HybridSequential& net) {
  net.add<nn::Dense>(4, nn::DenseOptions{.activation = "tanh"});
  net.add<nn::BatchNorm>();
  net.add<nn::Dense>(2);
}

// Dense(4) - BatchNorm - Dense(2) on (N, 3) inputs, initialized.
std::unique_ptr<nn::HybridSequential> small_net() {
  auto net = std::make_unique<nn::HybridSequential>();
  add_small_layers(*net);
  net->initialize(std::make_shared<nn::Xavier>());
  (void)(*net)(nd::ones({2, 3}));
  return net;
}

// A small_net saved with save_parameters (Gluon's structural names) in a folder of its own.
struct SavedSmallNet {
  TempDir dir;
  std::unique_ptr<nn::HybridSequential> net = small_net();
  std::string path = (dir.path() / "net.params").string();
  SavedSmallNet() { net->save_parameters(path); }
};

// The gradients of every parameter that has one, in collect_params order.
std::vector<double> parameter_grads(nn::Block& net) {
  std::vector<double> grads;
  for (const auto& p : net.collect_params())
    if (p->grad_req() != GradReq::kNull)
      for (double g : values(p->grad())) grads.push_back(g);
  return grads;
}

TEST(GluonParameter, InitializationRules) {
  nn::Parameter w("w_weight", {.shape = {2, 3}});
  w.initialize(std::make_shared<nn::Constant>(0.5));
  expect_all_near(values(w.data()), std::vector<double>(6, 0.5), 0, "by name: weight");
  nn::Parameter b("b_bias", {.shape = {3}});
  b.initialize(std::make_shared<nn::Constant>(0.5));
  expect_all_near(values(b.data()), std::vector<double>(3, 0), 0, "by name: bias is zero");
  nn::Parameter own("x_alpha", {.shape = {2}, .init = std::make_shared<nn::Constant>(0.25)});
  own.initialize(std::make_shared<nn::Constant>(0.5));
  expect_all_near(values(own.data()), {0.25, 0.25}, 0, "own initializer wins");
  // Initialized parameters are kept unless force_reinit.
  w.initialize(std::make_shared<nn::Constant>(1.0));
  EXPECT_EQ(values(w.data())[0], 0.5);
  w.initialize(std::make_shared<nn::Constant>(1.0), cpu(), true);
  EXPECT_EQ(values(w.data())[0], 1.0);
  expect_error([&] { w.set_shape({3, 3}); }, ErrorCode::kShapeMismatch, {"w_weight", "(3, 3)", "(2, 3)"});
  nn::Parameter fixed("f_weight", {.shape = {0, 2}, .allow_deferred_init = false});
  expect_error([&] { fixed.initialize(); }, ErrorCode::kInvalidArgument, {"f_weight", "allow_deferred_init"});
  nn::Parameter untouched("u_weight", {.shape = {2}});
  expect_error([&] { untouched.data(); }, ErrorCode::kInvalidArgument, {"u_weight", "not been initialized"});
  // zero_grad, grad_req null.
  nn::Parameter g("g_weight", {.shape = {2}, .grad_req = GradReq::kNull});
  g.initialize();
  expect_error([&] { g.grad(); }, ErrorCode::kInvalidArgument, {"g_weight", "null"});
}

TEST(GluonParameter, SaveLoadRoundTripWithGluonNames) {
  const SavedSmallNet saved;
  const auto& [dir, net, path] = saved;
  const mxnet::NamedTensors file = mxnet::load_params(path);
  EXPECT_EQ(file.names, (std::vector<std::string>{"0.weight", "0.bias", "1.gamma", "1.beta", "1.running_mean",
                                                  "1.running_var", "2.weight", "2.bias"}));
  auto other = small_net();
  const NDArray x = nd::arange(0, 6).reshape({2, 3});
  EXPECT_NE(values((*other)(x)), values((*net)(x)));
  other->load_parameters(path);
  expect_all_near(values((*other)(x)), values((*net)(x)), 0, "same outputs after load");
  // Full names (ParameterDict::save) load too, into a net whose shapes are still deferred.
  const std::string full = (dir.path() / "full.params").string();
  net->collect_params().save(full, net->prefix());
  nn::HybridSequential fresh;
  add_small_layers(fresh);
  fresh.collect_params().load(full, cpu(), false, false, fresh.prefix());
  expect_all_near(values(fresh(x)), values((*net)(x)), 0, "full names");
}

TEST(GluonParameter, LoadErrorsNameTheParameters) {
  const SavedSmallNet saved;
  const std::string& path = saved.path;
  // A wider first layer: 0.weight (5, 3) against the file's (4, 3).
  nn::HybridSequential wide;
  wide.add<nn::Dense>(5, nn::DenseOptions{.in_units = 3});
  wide.add<nn::BatchNorm>();
  wide.add<nn::Dense>(2);
  expect_error([&] { wide.load_parameters(path); }, ErrorCode::kShapeMismatch,
               {"0.weight", "(5, 3)", "(4, 3)"});
  // Missing and extra names are listed.
  nn::HybridSequential shorter;
  shorter.add<nn::Dense>(4, nn::DenseOptions{.activation = "tanh"});
  expect_error([&] { shorter.load_parameters(path); }, ErrorCode::kInvalidArgument, {"2.weight", "1.gamma"});
  shorter.load_parameters(path, cpu(), false, true);
  nn::HybridSequential longer;
  add_small_layers(longer);
  longer.add<nn::Dense>(2);
  expect_error([&] { longer.load_parameters(path); }, ErrorCode::kNotFound, {"3.weight", "3.bias"});
}

TEST(GluonHybrid, HybridizedEqualsImperativeForwardAndBackward) {
  auto net = small_net();
  const NDArray x = nd::arange(0, 12).reshape({4, 3}) / 7.0;
  // Predict mode reads the running statistics and leaves them alone: both forms see the same.
  net->hybridize(false);
  const std::vector<double> predict_imperative = values((*net)(x));
  net->hybridize(true);
  const std::vector<double> predict_hybrid = values((*net)(x));
  expect_all_near(predict_hybrid, predict_imperative, 1e-5, "predict");
  // Training mode uses the batch statistics (so the gradients do not depend on the running ones)
  // and moves the running mean once per call.
  const auto train = [&](bool hybrid) {
    net->hybridize(hybrid);
    NDArray loss;
    {
      auto rec = autograd::record();
      loss = nd::sum((*net)(x));
    }
    loss.backward();
    return parameter_grads(*net);
  };
  const auto& bn = static_cast<nn::BatchNorm&>((*net)[1]);
  const std::vector<double> before = values(bn.running_mean().data());
  const std::vector<double> grads_imperative = train(false);
  const std::vector<double> after_imperative = values(bn.running_mean().data());
  const std::vector<double> grads_hybrid = train(true);
  const std::vector<double> after_hybrid = values(bn.running_mean().data());
  expect_all_near(grads_hybrid, grads_imperative, 1e-4, "gradients");
  // Both calls saw the same batch: each moved the mean by momentum toward the same batch mean,
  // so after_hybrid - after_imperative = momentum * (after_imperative - before).
  for (size_t i = 0; i < before.size(); ++i) {
    EXPECT_NE(after_imperative[i], before[i]) << i;
    EXPECT_NEAR(after_hybrid[i] - after_imperative[i], 0.9 * (after_imperative[i] - before[i]), 1e-5) << i;
  }
}

// A gradient penalty (d/dparams of sum((dy/dx)^2)) in training mode: through the hybridized
// block's CachedOp it equals the op-by-op block's, and the replay the second derivative runs on
// does not move BatchNorm's running mean again (each call moves it once, as above).
TEST(GluonHybrid, GradientPenaltyMatchesTheImperativeBlock) {
  auto net = small_net();
  const auto& bn = static_cast<nn::BatchNorm&>((*net)[1]);
  const auto penalty_grads = [&](bool hybrid) {
    net->hybridize(hybrid);
    NDArray x = nd::arange(0, 12).reshape({4, 3}) / 7.0;
    x.attach_grad();
    NDArray penalty;
    {
      auto rec = autograd::record();
      const NDArray dx = autograd::grad({nd::sum((*net)(x) * (*net)(x))}, {x}, {}, true, true).at(0);
      penalty = nd::sum(dx * dx);
    }
    penalty.backward();
    return parameter_grads(*net);
  };
  const std::vector<double> before = values(bn.running_mean().data());
  const std::vector<double> imperative = penalty_grads(false);
  const std::vector<double> after_imperative = values(bn.running_mean().data());
  const std::vector<double> hybrid = penalty_grads(true);
  const std::vector<double> after_hybrid = values(bn.running_mean().data());
  double largest = 0;  // float32 gradients in the hundreds: compared relative to the largest
  for (double g : imperative) largest = std::max(largest, std::abs(g));
  EXPECT_GT(largest, 1e-3);
  expect_all_near(hybrid, imperative, 1e-5 * largest, "penalty gradients");
  // Two calls of the net per penalty: the mean moved twice toward the same batch mean each time.
  const double kept = 0.9 * 0.9;
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_NEAR(after_hybrid[i] - after_imperative[i], kept * (after_imperative[i] - before[i]), 1e-5) << i;
}

TEST(GluonHybrid, ExportLoadsInThePredictor) {
  TempDir dir;
  auto net = small_net();
  const NDArray x = nd::arange(0, 12).reshape({4, 3}) / 7.0;
  const std::vector<double> want = values((*net)(x));
  const std::string prefix = (dir.path() / "net").string();
  net->export_model(prefix, 3);
  ASSERT_TRUE(std::filesystem::exists(prefix + "-symbol.json"));
  ASSERT_TRUE(std::filesystem::exists(prefix + "-0003.params"));
  Predictor predictor = Predictor::load(prefix + "-symbol.json");
  const std::vector<Tensor> out = predictor.predict({x.tensor().contiguous()});
  ASSERT_EQ(out.size(), 1u);
  expect_all_near(values(NDArray(out[0])), want, 1e-5, "predictor");
}

}  // namespace
}  // namespace kiln::testing
