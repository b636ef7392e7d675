// Initializers: exact draws against numpy's legacy generator, statistics of 100k-sample fills
// (mean and variance within tolerance, bounds for uniform draws), MXNet's fan rules, the name
// rules, seeding, and bad input.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "kiln/nn/initializer.hpp"
#include "test_support.h"

namespace kiln::testing {
namespace {

using Vec = std::vector<double>;

Vec values_of(const NDArray& a) {
  return a.astype(DType::kFloat64).to_vector<double>();
}

struct Stats {
  double mean, var, min, max;
};

Stats stats_of(const Vec& v) {
  const double n = static_cast<double>(v.size());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  return {mean, var / n, *std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end())};
}

// The sample mean is within 5 standard errors of 0 and the variance within 3% of `var`
// (the variance's standard error at 100k samples is under 0.5%).
void expect_stats(const Vec& v, double var, const std::string& what) {
  ASSERT_GE(v.size(), 100000u) << what;
  const Stats s = stats_of(v);
  EXPECT_NEAR(s.mean, 0, 5 * std::sqrt(var / static_cast<double>(v.size()))) << what;
  EXPECT_NEAR(s.var, var, 0.03 * var) << what;
}

TEST(Initializer, UniformAndNormalDrawAsNumpy) {
  // np.random.seed(42); np.random.uniform(-0.07, 0.07, 6) and np.random.normal(0, 0.01, 6)
  const Vec uniform = {-0.01756438336136925, 0.06310000289738826,  0.03247915185359672,
                       0.01381218778758513,  -0.04815739033805889, -0.04816076715293163};
  const Vec normal = {0.00496714153011233, -0.00138264301171185, 0.00647688538100692,
                      0.01523029856408025, -0.00234153374723336, -0.00234136956949181};
  const NDArray a = nd::zeros(Shape{2, 3}, DType::kFloat64);
  std::mt19937 gen(42);
  nn::Uniform(0.07).init_weight("w", a, gen);
  const Vec got_uniform = values_of(a);
  for (size_t i = 0; i < uniform.size(); ++i) EXPECT_NEAR(got_uniform[i], uniform[i], 1e-17) << i;
  gen.seed(42);
  nn::Normal(0.01).init_weight("w", a, gen);
  const Vec got_normal = values_of(a);
  for (size_t i = 0; i < normal.size(); ++i) EXPECT_NEAR(got_normal[i], normal[i], 1e-17) << i;
}

TEST(Initializer, ConstantsFillAnyDtype) {
  const NDArray f16 = nd::zeros(Shape{3}, DType::kFloat16), i32 = nd::zeros(Shape{2}, DType::kInt32);
  std::mt19937 gen;
  nn::Constant(2.5).init_weight("c", f16, gen);
  nn::Constant(7).init_weight("c", i32, gen);
  EXPECT_EQ(values_of(f16), (Vec{2.5, 2.5, 2.5}));
  EXPECT_EQ(values_of(i32), (Vec{7, 7}));
  nn::One().init_weight("c", f16, gen);
  EXPECT_EQ(values_of(f16), (Vec{1, 1, 1}));
  nn::Zero().init_weight("c", f16, gen);
  EXPECT_EQ(values_of(f16), (Vec{0, 0, 0}));
}

TEST(Initializer, FillsAViewOnly) {
  const NDArray table = nd::zeros(Shape{2, 3});
  std::mt19937 gen;
  nn::One().init_weight("c", table.slice(1, 2, 3), gen);
  EXPECT_EQ(values_of(table), (Vec{0, 0, 1, 0, 0, 1}));
}

TEST(Initializer, UniformStatistics) {
  const NDArray a = nd::zeros(Shape{100000});
  std::mt19937 gen(1);
  nn::Uniform(0.5).init_weight("w", a, gen);
  const Vec v = values_of(a);
  const Stats s = stats_of(v);
  EXPECT_GE(s.min, -0.5);
  EXPECT_LT(s.max, 0.5);
  EXPECT_LT(s.min, -0.499);  // the draws reach out to the bounds
  EXPECT_GT(s.max, 0.499);
  expect_stats(v, 0.25 / 3, "Uniform(0.5)");
}

TEST(Initializer, NormalStatistics) {
  const NDArray a = nd::zeros(Shape{100000});
  std::mt19937 gen(2);
  nn::Normal(0.2).init_weight("w", a, gen);
  expect_stats(values_of(a), 0.04, "Normal(0.2)");
}

TEST(Initializer, FanRules) {
  const nn::Fans dense = nn::compute_fans(Shape{10, 20}, "fc_weight");
  EXPECT_EQ(dense.in, 20);
  EXPECT_EQ(dense.out, 10);
  const nn::Fans conv = nn::compute_fans(Shape{16, 8, 3, 5}, "conv_weight");
  EXPECT_EQ(conv.in, 8 * 15);
  EXPECT_EQ(conv.out, 16 * 15);
  expect_error([] { nn::compute_fans(Shape{7}, "fc_bias"); }, ErrorCode::kShapeMismatch,
               {"'fc_bias'", "(7,)", "at least 2 dimensions"});
}

TEST(Initializer, XavierUniformOnAConvWeight) {
  // fan_in = 128 * 9, fan_out = 256 * 9; avg: scale = sqrt(3 / ((1152 + 2304) / 2)).
  const NDArray w = nd::zeros(Shape{256, 128, 3, 3});
  std::mt19937 gen(3);
  nn::Xavier().init_weight("conv_weight", w, gen);
  const double scale = std::sqrt(3.0 / 1728);
  const Vec v = values_of(w);
  const Stats s = stats_of(v);
  EXPECT_GE(s.min, -scale);
  EXPECT_LT(s.max, scale);
  EXPECT_GT(s.max, 0.999 * scale);
  expect_stats(v, scale * scale / 3, "Xavier uniform avg");
}

TEST(Initializer, XavierGaussianFanInAndOut) {
  const NDArray w = nd::zeros(Shape{1000, 100});
  std::mt19937 gen(4);
  nn::Xavier(nn::RandomType::kGaussian, nn::FactorType::kIn, 2).init_weight("fc_weight", w, gen);
  expect_stats(values_of(w), 2.0 / 100, "Xavier gaussian in");
  nn::Xavier(nn::RandomType::kGaussian, nn::FactorType::kOut, 2).init_weight("fc_weight", w, gen);
  expect_stats(values_of(w), 2.0 / 1000, "Xavier gaussian out");
}

TEST(Initializer, MSRAPreluIsKaiming) {
  const NDArray w = nd::zeros(Shape{400, 250});
  std::mt19937 gen(5);
  nn::Kaiming(nn::FactorType::kIn, 0).init_weight("fc_weight", w, gen);
  expect_stats(values_of(w), 2.0 / 250, "Kaiming fan_in, ReLU");
  nn::MSRAPrelu().init_weight("fc_weight", w, gen);  // avg, slope 0.25
  expect_stats(values_of(w), 2.0 / (1 + 0.0625) / 325, "MSRAPrelu defaults");
}

TEST(Initializer, FloatSixteenWeights) {
  const NDArray w = nd::zeros(Shape{100000}, DType::kBFloat16);
  std::mt19937 gen(6);
  nn::Uniform(1).init_weight("w", w, gen);
  const Vec v = values_of(w);
  EXPECT_LE(*std::max_element(v.begin(), v.end()), 1.0);  // rounding may reach the bound
  expect_stats(v, 1.0 / 3, "Uniform bfloat16");
}

TEST(Initializer, NameRules) {
  std::mt19937 gen(7);
  const nn::Uniform init(1);
  const NDArray weight = nd::zeros(Shape{4}), bias = nd::ones(Shape{4}), gamma = nd::zeros(Shape{4});
  const NDArray beta = nd::ones(Shape{4}), running = nd::zeros(Shape{4});
  init("dense0_weight", weight, gen);
  init("dense0_bias", bias, gen);
  init("bn_gamma", gamma, gen);
  init("bn_beta", beta, gen);
  EXPECT_NE(values_of(weight), Vec(4, 0.0));
  EXPECT_EQ(values_of(bias), Vec(4, 0.0));
  EXPECT_EQ(values_of(gamma), Vec(4, 1.0));
  EXPECT_EQ(values_of(beta), Vec(4, 0.0));
  expect_error([&] { init("bn_running_mean", running, gen); }, ErrorCode::kInvalidArgument,
               {"'bn_running_mean'", "init_weight"});
}

TEST(Initializer, DefaultGeneratorIsSeedable) {
  const NDArray a = nd::zeros(Shape{8}), b = nd::zeros(Shape{8}), c = nd::zeros(Shape{8});
  nn::seed(11);
  nn::Normal(1).init_weight("w", a);
  nn::seed(11);
  nn::Normal(1)("w_weight", b);
  std::mt19937 gen(11);
  nn::Normal(1).init_weight("w", c, gen);
  EXPECT_EQ(values_of(a), values_of(b));
  EXPECT_EQ(values_of(a), values_of(c));
  nn::Normal(1).init_weight("w", b);  // the stream moves on
  EXPECT_NE(values_of(a), values_of(b));
}

TEST(Initializer, BadInput) {
  std::mt19937 gen;
  expect_error([&] { nn::Uniform().init_weight("idx_weight", nd::zeros(Shape{3}, DType::kInt64), gen); },
               ErrorCode::kTypeMismatch, {"'idx_weight'", "int64"});
  expect_error([&] { nn::Xavier().init_weight("fc_weight", nd::zeros(Shape{5}), gen); },
               ErrorCode::kShapeMismatch, {"'fc_weight'", "at least 2 dimensions"});
  expect_error(
      [&] {
        nn::Xavier(nn::RandomType::kUniform, nn::FactorType::kOut)
            .init_weight("fc_weight", nd::zeros(Shape{0, 5}), gen);
      },
      ErrorCode::kShapeMismatch, {"'fc_weight'", "fan is 0"});
  expect_error([] { nn::Normal(-1); }, ErrorCode::kInvalidArgument, {"sigma"});
  expect_error([&] { nn::One().init_weight("p", NDArray(), gen); }, ErrorCode::kInvalidArgument, {"'p'"});
}

}  // namespace
}  // namespace kiln::testing
