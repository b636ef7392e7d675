// Trainer: one step equals the optimizer's own update with rescale_grad = 1 / batch_size,
// parameters with grad_req null are left alone, lr_mult applies, the allreduce hook runs first.
#include <gtest/gtest.h>

#include "kiln/autograd.hpp"
#include "kiln/nn/gluon.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

TEST(GluonTrainer, StepEqualsManualOptimizerUpdate) {
  nn::Dense dense(3, {.in_units = 4});
  dense.initialize(std::make_shared<nn::Uniform>(0.5));
  dense.weight().set_lr_mult(0.5);
  const NDArray x = nd::arange(0, 20).reshape({5, 4}) / 10.0;
  const std::vector<double> w0 = values(dense.weight().data()), b0 = values(dense.bias().data());

  nn::Trainer trainer(dense.collect_params(), "adam", {{"learning_rate", 0.01}, {"wd", 0.001}});
  int hook_calls = 0;
  trainer.set_allreduce_hook([&](const auto& params) {
    ++hook_calls;
    EXPECT_EQ(params.size(), 2u);
  });
  for (int step = 0; step < 2; ++step) {
    NDArray loss;
    {
      auto rec = autograd::record();
      loss = nd::sum(dense(x) * dense(x));
    }
    loss.backward();
    const NDArray gw = dense.weight().grad().copy(), gb = dense.bias().grad().copy();
    // The same update by hand, from the same weights: rescale_grad = 1 / 5, lr_mult 0.5 on W.
    nn::AdamOptions options;
    options.learning_rate = 0.01;
    options.wd = 0.001;
    options.rescale_grad = 1.0 / 5;
    static nn::Adam manual(options);
    static nn::OptimizerState sw, sb;
    const NDArray w = dense.weight().data().copy(), b = dense.bias().data().copy();
    if (step == 0) {
      manual.set_lr_mult(0, 0.5);
      sw = manual.create_state(0, w);
      sb = manual.create_state(1, b);
    }
    manual.update(0, w, gw, sw);
    manual.update(1, b, gb, sb);
    trainer.step(5);
    expect_all_near(values(dense.weight().data()), values(w), 1e-6, "weight");
    expect_all_near(values(dense.bias().data()), values(b), 1e-6, "bias");
    // The gradient buffers are left as backward wrote them.
    expect_all_near(values(dense.weight().grad()), values(gw), 0, "grad untouched");
  }
  EXPECT_EQ(hook_calls, 2);
  EXPECT_NE(values(dense.weight().data()), w0);
  EXPECT_NE(values(dense.bias().data()), b0);
  trainer.set_learning_rate(0.1);
  EXPECT_DOUBLE_EQ(trainer.learning_rate(), 0.1);
}

TEST(GluonTrainer, NullGradReqIsSkippedAndUninitializedIsAnError) {
  nn::BatchNorm bn;
  nn::Trainer trainer(bn.collect_params(), "sgd", {{"learning_rate", 1.0}});
  bn.initialize();
  expect_error([&] { trainer.step(1); }, ErrorCode::kInvalidArgument, {"gamma", "not initialized"});
  const NDArray x = nd::arange(0, 8).reshape({4, 2});
  NDArray loss;
  {
    auto rec = autograd::record();
    loss = nd::sum(bn(x) * x);
  }
  loss.backward();
  const std::vector<double> running = values(bn.running_mean().data());
  const std::vector<double> gamma = values(bn.gamma().data()), ggamma = values(bn.gamma().grad());
  trainer.step(4);
  expect_all_near(values(bn.running_mean().data()), running, 0, "running mean untouched");
  const std::vector<double> updated = values(bn.gamma().data());
  for (size_t i = 0; i < gamma.size(); ++i) EXPECT_NEAR(updated[i], gamma[i] - ggamma[i] / 4, 1e-6);
}

}  // namespace
}  // namespace kiln::testing
