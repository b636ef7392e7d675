// The optimizers against closed forms: one step worked by hand, several steps against the
// formulas of MXNet 1.x (written out here per element, in float64), the learning rate from a
// schedule and per-parameter multipliers, multi-precision 16-bit weights, the factory, bad
// input, and clip_global_norm.
#include <algorithm>
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "kiln/nn/optimizer.hpp"
#include "nn/optimizer_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

using nn::create_optimizer;
using nn::Optimizer;
using nn::OptimizerState;

const Vec kW0 = {0.5, -1.2, 2.0, 0.03, -0.7, 1.1};
const Shape kShape{2, 3};
constexpr int kSteps = 6;
constexpr double kLr = 0.1, kWd = 0.01, kRescale = 0.5, kClip = 0.8;

double clip(double x, double bound) {
  return bound > 0 ? std::clamp(x, -bound, bound) : x;
}

// Runs kSteps updates of parameter 0 from kW0 and returns the weight after each.
std::vector<Vec> run_steps(Optimizer& opt, DType dtype = DType::kFloat64) {
  const NDArray w = array_of(kW0, kShape, dtype);
  OptimizerState state = opt.create_state(0, w);
  std::vector<Vec> out;
  for (int t = 1; t <= kSteps; ++t) {
    opt.update(0, w, array_of(gradient_at(t, kW0.size()), kShape, dtype), state);
    out.push_back(values_of(w));
  }
  return out;
}

// A reference: the weight after each step, computed per element by `step(w, g, t, states)`.
std::vector<Vec> reference(int num_states, const std::function<void(double&, double, int, Vec&)>& step) {
  Vec w = kW0;
  std::vector<Vec> states(kW0.size(), Vec(static_cast<size_t>(num_states), 0.0));
  std::vector<Vec> out;
  for (int t = 1; t <= kSteps; ++t) {
    const Vec g = gradient_at(t, kW0.size());
    for (size_t i = 0; i < w.size(); ++i) step(w[i], g[i], t, states[i]);
    out.push_back(w);
  }
  return out;
}

void expect_trajectory(const std::vector<Vec>& actual, const std::vector<Vec>& expected, double tol) {
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t t = 0; t < actual.size(); ++t)
    expect_all_near(actual[t], expected[t], tol, "step " + std::to_string(t + 1));
}

AttrMap common_options(double lr = kLr) {
  return {{"learning_rate", lr}, {"wd", kWd}, {"rescale_grad", kRescale}, {"clip_gradient", kClip}};
}

AttrMap with(AttrMap options, const AttrMap& more) {
  for (const auto& [k, v] : more) options.insert_or_assign(k, v);
  return options;
}

const char* const kNames[] = {"sgd", "nag", "adam", "adamw", "rmsprop", "adagrad"};

// The common options, with momentum for the optimizers that take it.
AttrMap options_for(const std::string& name) {
  AttrMap o = common_options();
  if (name == "sgd" || name == "nag") o.emplace("momentum", 0.9);
  return o;
}

// One element, worked out by hand: w = 1, g = 0.5 each step.
double one_element(const std::string& name, const AttrMap& options, int steps) {
  auto opt = create_optimizer(name, options);
  const NDArray w = nd::array(Vec{1.0}, Shape{1});
  OptimizerState state = opt->create_state(0, w);
  for (int i = 0; i < steps; ++i) opt->update(0, w, nd::array(Vec{0.5}, Shape{1}), state);
  return values_of(w)[0];
}

TEST(Optimizer, StepsWorkedByHand) {
  EXPECT_NEAR(one_element("sgd", {{"learning_rate", 0.1}}, 1), 0.95, 1e-15);
  // mom = -0.05, then 0.9 * -0.05 - 0.05 = -0.095: w = 0.95, then 0.855.
  EXPECT_NEAR(one_element("sgd", {{"learning_rate", 0.1}, {"momentum", 0.9}}, 2), 0.855, 1e-15);
  // mom = -0.05; w = 1 + 0.9 * -0.05 - 0.05.
  EXPECT_NEAR(one_element("nag", {{"learning_rate", 0.1}, {"momentum", 0.9}}, 1), 0.905, 1e-15);
  // Bias-corrected first Adam step: lr * m / sqrt(v) = lr * sign(g), up to epsilon.
  EXPECT_NEAR(one_element("adam", {{"learning_rate", 0.1}}, 1), 0.9, 1e-6);
  // AdamW: the Adam step plus lr * wd * w = 0.1 * 0.1 * 1.
  EXPECT_NEAR(one_element("adamw", {{"learning_rate", 0.1}, {"wd", 0.1}}, 1), 0.89, 1e-6);
  // n = 0.1 * 0.25; w = 1 - 0.01 * 0.5 / sqrt(0.025).
  EXPECT_NEAR(one_element("rmsprop", {{"learning_rate", 0.01}, {"epsilon", 0.0}}, 1), 0.968377223398316,
              1e-12);
  // history = 0.25, then 0.5: w = 1 - 0.1 * (0.5 / 0.5) - 0.1 * (0.5 / sqrt(0.5)).
  EXPECT_NEAR(one_element("adagrad", {{"learning_rate", 0.1}, {"eps", 0.0}}, 2), 0.829289321881345, 1e-12);
}

TEST(Optimizer, SGD) {
  auto opt = create_optimizer("sgd", common_options());
  expect_trajectory(run_steps(*opt),
                    reference(0, [](double& w, double g, int,
                                    Vec&) { w = (1 - kLr * kWd) * w - kLr * clip(kRescale * g, kClip); }),
                    1e-13);
}

TEST(Optimizer, SGDMomentum) {
  auto opt = create_optimizer("sgd", with(common_options(), {{"momentum", 0.9}}));
  expect_trajectory(run_steps(*opt),
                    reference(1,
                              [](double& w, double g, int, Vec& s) {
                                s[0] = 0.9 * s[0] - kLr * kWd * w - kLr * clip(kRescale * g, kClip);
                                w += s[0];
                              }),
                    1e-13);
}

TEST(Optimizer, NesterovMomentum) {
  auto opt = create_optimizer("nag", with(common_options(), {{"momentum", 0.8}}));
  expect_trajectory(run_steps(*opt),
                    reference(1,
                              [](double& w, double g, int, Vec& s) {
                                const double d = clip(kRescale * g, kClip) + kWd * w;
                                s[0] = 0.8 * s[0] - kLr * d;
                                w += 0.8 * s[0] - kLr * d;
                              }),
                    1e-13);
}

TEST(Optimizer, NesterovWithoutMomentumIsSGD) {
  auto nag = create_optimizer("nag", common_options());
  auto sgd = create_optimizer("sgd", common_options());
  expect_trajectory(run_steps(*nag), run_steps(*sgd), 0);
}

TEST(Optimizer, AdamWithBiasCorrection) {
  auto opt =
      create_optimizer("adam", with(common_options(), {{"beta1", 0.8}, {"beta2", 0.99}, {"epsilon", 1e-6}}));
  expect_trajectory(run_steps(*opt),
                    reference(2,
                              [](double& w, double g, int t, Vec& s) {
                                const double d = clip(kRescale * g + kWd * w, kClip);
                                s[0] = 0.8 * s[0] + 0.2 * d;
                                s[1] = 0.99 * s[1] + 0.01 * d * d;
                                const double lr_t =
                                    kLr * std::sqrt(1 - std::pow(0.99, t)) / (1 - std::pow(0.8, t));
                                w -= lr_t * s[0] / (std::sqrt(s[1]) + 1e-6);
                              }),
                    1e-13);
}

TEST(Optimizer, AdamWDecouplesWeightDecay) {
  auto opt = create_optimizer("adamw", with(common_options(), {{"wd", 0.2}}));
  expect_trajectory(run_steps(*opt),
                    reference(2,
                              [](double& w, double g, int t, Vec& s) {
                                const double d = clip(kRescale * g, kClip);
                                s[0] = 0.9 * s[0] + 0.1 * d;
                                s[1] = 0.999 * s[1] + 0.001 * d * d;
                                const double c_t = std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
                                w -= kLr * (c_t * s[0] / (std::sqrt(s[1]) + 1e-8) + 0.2 * w);
                              }),
                    1e-13);
  auto uncorrected = create_optimizer("adamw", with(common_options(), {{"correct_bias", false}}));
  expect_trajectory(run_steps(*uncorrected),
                    reference(2,
                              [](double& w, double g, int, Vec& s) {
                                const double d = clip(kRescale * g, kClip);
                                s[0] = 0.9 * s[0] + 0.1 * d;
                                s[1] = 0.999 * s[1] + 0.001 * d * d;
                                w -= kLr * (s[0] / (std::sqrt(s[1]) + 1e-8) + kWd * w);
                              }),
                    1e-13);
}

TEST(Optimizer, RMSProp) {
  auto opt = create_optimizer("rmsprop", with(common_options(), {{"gamma1", 0.8}, {"epsilon", 1e-4}}));
  expect_trajectory(run_steps(*opt),
                    reference(1,
                              [](double& w, double g, int, Vec& s) {
                                const double d = clip(kRescale * g + kWd * w, kClip);
                                s[0] = 0.2 * d * d + 0.8 * s[0];
                                w -= kLr * d / std::sqrt(s[0] + 1e-4);
                              }),
                    1e-13);
}

TEST(Optimizer, CenteredRMSPropWithWeightClipping) {
  auto opt = create_optimizer(
      "rmsprop",
      with(common_options(),
           {{"centered", true}, {"gamma1", 0.8}, {"gamma2", 0.7}, {"epsilon", 1e-4}, {"clip_weights", 1.5}}));
  expect_trajectory(run_steps(*opt),
                    reference(3,
                              [](double& w, double g, int, Vec& s) {
                                const double d = clip(kRescale * g + kWd * w, kClip);
                                s[0] = 0.2 * d * d + 0.8 * s[0];
                                s[1] = 0.2 * d + 0.8 * s[1];
                                s[2] = 0.7 * s[2] - kLr * d / std::sqrt(s[0] - s[1] * s[1] + 1e-4);
                                w = std::clamp(w + s[2], -1.5, 1.5);
                              }),
                    1e-13);
}

TEST(Optimizer, AdaGrad) {
  auto opt = create_optimizer("adagrad", common_options());
  expect_trajectory(run_steps(*opt),
                    reference(1,
                              [](double& w, double g, int, Vec& s) {
                                const double d = clip(kRescale * g, kClip);
                                s[0] += d * d;
                                w -= kLr * (d / std::sqrt(s[0] + 1e-7) + kWd * w);
                              }),
                    1e-13);
}

TEST(Optimizer, Float32AgreesWithFloat64) {
  for (const char* name : kNames) {
    auto a = create_optimizer(name, options_for(name));
    auto b = create_optimizer(name, options_for(name));
    expect_trajectory(run_steps(*a, DType::kFloat32), run_steps(*b, DType::kFloat64), 2e-6);
  }
}

TEST(Optimizer, LearningRateFromScheduleAndMultipliers) {
  auto schedule = std::make_shared<nn::FactorScheduler>(2, 0.5, 1e-8, 0.1);
  auto opt = create_optimizer("sgd", {}, schedule);
  const NDArray w0 = nd::zeros(Shape{1}, DType::kFloat64), w1 = nd::zeros(Shape{1}, DType::kFloat64);
  const NDArray g = nd::ones(Shape{1}, DType::kFloat64);
  OptimizerState s0 = opt->create_state(0, w0), s1 = opt->create_state(1, w1);
  opt->set_lr_mult(1, 2.0);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.1);
  // Update numbers 1 and 2 run at 0.1, 3 and 4 at 0.05, 5 at 0.025.
  for (int i = 0; i < 5; ++i) opt->update(0, w0, g, s0);
  EXPECT_NEAR(values_of(w0)[0], -(0.1 + 0.1 + 0.05 + 0.05 + 0.025), 1e-15);
  EXPECT_EQ(opt->num_update(), 5);
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 0.025);
  // Parameter 1's first update is its t = 1, but num_update stays 5: the rate is 0.025 * 2.
  opt->update(1, w1, g, s1);
  EXPECT_NEAR(values_of(w1)[0], -0.05, 1e-15);
  EXPECT_EQ(opt->update_count(1), 1);
  EXPECT_EQ(opt->num_update(), 5);
  expect_error([&] { opt->set_learning_rate(0.2); }, ErrorCode::kInvalidArgument, {"schedule"});
}

TEST(Optimizer, WeightDecayMultiplier) {
  auto opt = create_optimizer("sgd", {{"learning_rate", 0.1}, {"wd", 0.5}});
  opt->set_wd_mult(3, 0.0);
  const NDArray w = nd::ones(Shape{2}, DType::kFloat64), v = nd::ones(Shape{2}, DType::kFloat64);
  const NDArray g = nd::zeros(Shape{2}, DType::kFloat64);
  OptimizerState sw = opt->create_state(0, w), sv = opt->create_state(3, v);
  opt->update(0, w, g, sw);
  opt->update(3, v, g, sv);
  EXPECT_NEAR(values_of(w)[0], 1 - 0.1 * 0.5, 1e-15);  // decayed
  EXPECT_EQ(values_of(v)[0], 1.0);                     // wd_mult 0: untouched
}

TEST(Optimizer, AdamCountsStepsPerParameter) {
  // Index 1's first update is its own t = 1 (a full bias correction) even after index 0 ran three
  // times; with begin_num_update 10 the first t is 11.
  auto adam_first_step = [](int64_t begin, int warmup_updates_of_other) {
    auto opt = create_optimizer("adam", {{"learning_rate", 0.1}, {"begin_num_update", begin}});
    const NDArray other = nd::zeros(Shape{1}, DType::kFloat64), w = nd::zeros(Shape{1}, DType::kFloat64);
    const NDArray g = nd::ones(Shape{1}, DType::kFloat64);
    OptimizerState so = opt->create_state(0, other), sw = opt->create_state(1, w);
    for (int i = 0; i < warmup_updates_of_other; ++i) opt->update(0, other, g, so);
    opt->update(1, w, g, sw);
    EXPECT_EQ(opt->update_count(1), begin + 1);
    return values_of(w)[0];
  };
  EXPECT_NEAR(adam_first_step(0, 3), -0.1, 1e-6);
  // m = 0.1 and v = 0.001 after one step of g = 1; lr_t = 0.1 * sqrt(1 - 0.999^11) / (1 - 0.9^11).
  const double t = 11, lr_t = 0.1 * std::sqrt(1 - std::pow(0.999, t)) / (1 - std::pow(0.9, t));
  const double expected = -lr_t * 0.1 / (std::sqrt(0.001) + 1e-8);
  EXPECT_NEAR(adam_first_step(10, 0), expected, 1e-15);
}

TEST(Optimizer, MultiPrecisionKeepsSmallUpdates) {
  // lr * g = 1e-4 is under half a float16 ulp at 1 (2^-11): a float16 weight never moves, the
  // float32 master copy accumulates the ten steps.
  for (const bool multi_precision : {false, true}) {
    auto opt = create_optimizer("sgd", {{"learning_rate", 1.0}, {"multi_precision", multi_precision}});
    const NDArray w = nd::ones(Shape{3}, DType::kFloat16);
    const NDArray g = nd::full(Shape{3}, 1e-4, DType::kFloat16);
    OptimizerState state = opt->create_state(0, w);
    EXPECT_EQ(state.weight32.defined(), multi_precision);
    for (int i = 0; i < 10; ++i) opt->update(0, w, g, state);
    const double g16 = values_of(g)[0];  // 1e-4 rounded to float16
    if (multi_precision) {
      EXPECT_NEAR(values_of(state.weight32)[0], 1 - 10 * g16, 1e-6);
      EXPECT_EQ(values_of(w)[0], values_of(state.weight32.astype(DType::kFloat16))[0]);
      EXPECT_LT(values_of(w)[0], 1.0);
    } else {
      EXPECT_EQ(values_of(w)[0], 1.0);
    }
  }
}

TEST(Optimizer, MultiPrecisionMatchesFloat32) {
  // With a master copy, every optimizer's float16 / bfloat16 run follows the float32 run on the
  // same (16-bit) gradients; the states are float32.
  for (const DType dtype : {DType::kFloat16, DType::kBFloat16}) {
    for (const char* name : kNames) {
      const AttrMap plain = options_for(name);
      const AttrMap mp = with(plain, {{"multi_precision", true}});
      auto opt16 = create_optimizer(name, mp);
      auto opt32 = create_optimizer(name, plain);
      const NDArray w16 = array_of(kW0, kShape, dtype);
      const NDArray w32 = w16.astype(DType::kFloat32);
      OptimizerState s16 = opt16->create_state(0, w16), s32 = opt32->create_state(0, w32);
      for (const NDArray& a : s16.arrays) EXPECT_EQ(a.dtype(), DType::kFloat32);
      for (int t = 1; t <= kSteps; ++t) {
        const NDArray g16 = array_of(gradient_at(t, kW0.size()), kShape, dtype);
        opt16->update(0, w16, g16, s16);
        opt32->update(0, w32, g16.astype(DType::kFloat32), s32);
      }
      const std::string what = std::string(name) + " " + dtype_name(dtype);
      expect_all_near(values_of(s16.weight32), values_of(w32), 1e-6, what + " master copy");
      expect_all_near(values_of(w16), values_of(w32.astype(dtype)), 0, what + " rounded weight");
    }
  }
}

TEST(Optimizer, FactoryNamesAndOptions) {
  for (const char* name : kNames) EXPECT_EQ(create_optimizer(name)->name(), name);
  EXPECT_EQ(create_optimizer("Adam")->name(), "adam");
  EXPECT_DOUBLE_EQ(create_optimizer("adam")->learning_rate(), 0.001);  // MXNet's default
  EXPECT_DOUBLE_EQ(create_optimizer("sgd")->learning_rate(), 0.01);
  const auto opt = create_optimizer("rmsprop", {{"learning_rate", 1}, {"centered", 1}});
  EXPECT_DOUBLE_EQ(opt->learning_rate(), 1.0);
  EXPECT_EQ(opt->create_state(0, nd::zeros(Shape{2})).arrays.size(), 3u);
  EXPECT_EQ(create_optimizer("sgd", {{"momentum", 0.5}})->create_state(0, nd::zeros(Shape{2})).arrays.size(),
            1u);
  EXPECT_EQ(create_optimizer("sgd")->create_state(0, nd::zeros(Shape{2})).arrays.size(), 0u);

  expect_error([] { create_optimizer("lamb"); }, ErrorCode::kNotFound, {"unknown optimizer 'lamb'", "adamw"});
  expect_error(
      [] {
        create_optimizer("sgd", {{"beta1", 0.9}});
      },
      ErrorCode::kInvalidArgument, {"sgd optimizer", "unknown option 'beta1'", "momentum"});
  expect_error(
      [] {
        create_optimizer("adam", {{"learning_rate", "fast"}});
      },
      ErrorCode::kTypeMismatch, {"learning_rate"});
  expect_error(
      [] {
        create_optimizer("adam", {{"beta1", 1.0}});
      },
      ErrorCode::kInvalidArgument, {"adam optimizer", "beta1"});
  expect_error(
      [] {
        create_optimizer("adagrad", {{"eps", 1e-6}, {"epsilon", 1e-6}});
      },
      ErrorCode::kInvalidArgument, {"eps"});
  expect_error(
      [] {
        create_optimizer("sgd", {{"learning_rate", 0.1}}, std::make_shared<nn::FactorScheduler>(10));
      },
      ErrorCode::kInvalidArgument, {"learning_rate", "schedule"});
}

TEST(Optimizer, NegativeLearningRateIsAnError) {
  expect_error(
      [] {
        create_optimizer("sgd", {{"learning_rate", -0.1}});
      },
      ErrorCode::kInvalidArgument, {"sgd optimizer", "learning rate", "-0.1"});
  auto opt = create_optimizer("sgd");
  expect_error([&] { opt->set_learning_rate(-1); }, ErrorCode::kInvalidArgument, {"learning rate"});
  expect_error([&] { opt->set_lr_mult(4, -2); }, ErrorCode::kInvalidArgument, {"parameter 4", "lr_mult"});
  // The update op rejects a negative rate too, whoever calls it.
  const NDArray w = nd::ones(Shape{2}), g = nd::ones(Shape{2});
  expect_error(
      [&] {
        nd::invoke_into("SGDUpdate", {w, g}, {w}, {{"lr", -0.5}});
      },
      ErrorCode::kInvalidArgument, {"lr", "-0.5"});
}

TEST(Optimizer, BadInputNamesTheParameter) {
  auto opt = create_optimizer("adam");
  const NDArray w = nd::ones(Shape{2, 3});
  OptimizerState state = opt->create_state(3, w);
  expect_error(
      [&] {
        opt->update(3, w, nd::ones(Shape{3, 2}), state);
      },
      ErrorCode::kShapeMismatch, {"adam optimizer, parameter 3", "(3, 2)", "(2, 3)"});
  expect_error(
      [&] {
        opt->update(3, w, nd::ones(Shape{2, 3}, DType::kFloat64), state);
      },
      ErrorCode::kTypeMismatch, {"parameter 3", "float64"});
  OptimizerState other = create_optimizer("sgd", {{"momentum", 0.9}})->create_state(5, w);
  expect_error(
      [&] {
        opt->update(5, w, nd::ones(Shape{2, 3}), other);
      },
      ErrorCode::kInvalidArgument, {"parameter 5", "expected 2 state arrays, got 1"});
  OptimizerState small = opt->create_state(6, nd::ones(Shape{4}));
  expect_error(
      [&] {
        opt->update(6, w, nd::ones(Shape{2, 3}), small);
      },
      ErrorCode::kShapeMismatch, {"parameter 6", "state array 0"});
  expect_error([&] { opt->create_state(7, nd::ones(Shape{2}, DType::kInt32)); }, ErrorCode::kTypeMismatch,
               {"parameter 7", "int32"});
  // A failed update changes nothing: neither the weight nor the parameter's update count.
  EXPECT_EQ(values_of(w), Vec(6, 1.0));
  EXPECT_EQ(opt->update_count(3), 0);
  EXPECT_EQ(opt->num_update(), 0);
}

TEST(Optimizer, UpdatesStridedViewsInPlace) {
  // The weight may be a view (a column of a bigger array): only that column changes.
  auto opt = create_optimizer("sgd", {{"learning_rate", 0.5}, {"momentum", 0.5}});
  const NDArray table = nd::ones(Shape{3, 2}, DType::kFloat64);
  const NDArray column = table.slice(1, 1, 2);
  OptimizerState state = opt->create_state(0, column);
  opt->update(0, column, nd::ones(Shape{3, 1}, DType::kFloat64), state);
  EXPECT_EQ(values_of(table), (Vec{1, 0.5, 1, 0.5, 1, 0.5}));
}

TEST(ClipGlobalNorm, ScalesOnlyWhenAboveTheLimit) {
  const NDArray a = nd::array(Vec{3, 4}, Shape{2}), b = nd::array(std::vector<float>{12}, Shape{1});
  EXPECT_DOUBLE_EQ(nn::clip_global_norm({a, b}, 20), 13);
  EXPECT_EQ(values_of(a), (Vec{3, 4}));
  EXPECT_DOUBLE_EQ(nn::clip_global_norm({a, b}, 6.5), 13);
  const double scale = 6.5 / (13 + 1e-8);
  expect_all_near(values_of(a), {3 * scale, 4 * scale}, 1e-15, "float64 array");
  expect_all_near(values_of(b), {12 * scale}, 1e-7, "float32 array");
  EXPECT_NEAR(nn::clip_global_norm({a, b}, 100), 6.5, 1e-6);
  EXPECT_EQ(nn::clip_global_norm({}, 1), 0);
}

TEST(ClipGlobalNorm, NonFiniteNormLeavesArrays) {
  const NDArray a = nd::array(Vec{3, INFINITY}, Shape{2});
  EXPECT_TRUE(std::isinf(nn::clip_global_norm({a}, 1)));
  EXPECT_EQ(values_of(a)[0], 3);
}

TEST(ClipGlobalNorm, BadInput) {
  expect_error([] { nn::clip_global_norm({nd::ones(Shape{2})}, 0); }, ErrorCode::kInvalidArgument,
               {"max_norm"});
  expect_error(
      [] {
        nn::clip_global_norm({nd::ones(Shape{2}), nd::ones(Shape{2}, DType::kInt64)}, 1);
      },
      ErrorCode::kTypeMismatch, {"array 1", "int64"});
}

}  // namespace
}  // namespace kiln::testing
