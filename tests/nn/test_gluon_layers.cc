// Gluon layers: forward values against closed forms computed here element by element, parameter
// names (Gluon 1.x prefixes), shapes and deferred initialization, training vs predict mode.
#include <cmath>
#include <numeric>

#include <gtest/gtest.h>

#include "kiln/autograd.hpp"
#include "kiln/nn/gluon.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

std::vector<double> iota_values(size_t n, double scale, double offset) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<double>(i) * scale + offset;
  return v;
}

TEST(GluonNames, PrefixesFollowGluon) {
  nn::NameManager names;
  nn::HybridSequential net;
  net.add<nn::Dense>(4);
  net.add<nn::Dense>(3);
  net.add<nn::Activation>("relu");
  nn::Dense outside(2);
  EXPECT_EQ(net.prefix(), "hybridsequential0_");
  EXPECT_EQ(net[1].prefix(), "hybridsequential0_dense1_");
  EXPECT_EQ(net[2].prefix(), "hybridsequential0_relu0_");
  EXPECT_EQ(outside.prefix(), "dense0_");
  EXPECT_EQ(net.collect_params().keys(),
            (std::vector<std::string>{"hybridsequential0_dense0_weight", "hybridsequential0_dense0_bias",
                                      "hybridsequential0_dense1_weight", "hybridsequential0_dense1_bias"}));
  EXPECT_EQ(net.collect_params(".*_weight").size(), 2u);
  nn::Conv2D conv(8, {3}, {.prefix = "stem_"});
  EXPECT_EQ(conv.weight().name(), "stem_weight");
}

TEST(GluonDense, ForwardAndDeferredInit) {
  nn::Dense dense(3, {.activation = "relu"});
  dense.initialize();
  EXPECT_TRUE(dense.weight().deferred());
  EXPECT_EQ(dense.weight().shape(), (Shape{3, 0}));
  expect_error([&] { dense.weight().data(); }, ErrorCode::kInvalidArgument,
               {dense.weight().name(), "deferred"});
  // (2, 2, 2) flattens to (2, 4).
  const std::vector<double> x = iota_values(8, 0.5, -1.5);
  const NDArray out = dense(floats(x, {2, 2, 2}));
  ASSERT_EQ(dense.weight().shape(), (Shape{3, 4}));
  ASSERT_EQ(out.shape(), (Shape{2, 3}));
  const std::vector<double> w = iota_values(12, 0.1, -0.5), b = {0.1, -0.2, 0.3};
  dense.weight().set_data(floats(w, {3, 4}));
  dense.bias().set_data(floats(b, {3}));
  std::vector<double> want;
  for (int n = 0; n < 2; ++n)
    for (int u = 0; u < 3; ++u) {
      double s = b[static_cast<size_t>(u)];
      for (int k = 0; k < 4; ++k) s += x[static_cast<size_t>(n * 4 + k)] * w[static_cast<size_t>(u * 4 + k)];
      want.push_back(std::max(s, 0.0));
    }
  expect_all_near(values(dense(floats(x, {2, 2, 2}))), want, 1e-5, "dense");
  // flatten=false applies to the last axis.
  nn::Dense last(3, {.use_bias = false, .flatten = false, .in_units = 2});
  last.initialize();
  EXPECT_EQ(last(nd::ones({4, 5, 2})).shape(), (Shape{4, 5, 3}));
  expect_error([&] { dense(nd::ones({2, 5})); }, ErrorCode::kShapeMismatch, {dense.name(), "(2, 5)"});
}

TEST(GluonDense, GradientsReachParameters) {
  nn::Dense dense(2, {.in_units = 3});
  dense.initialize(std::make_shared<nn::One>());
  const NDArray x = floats({1, 2, 3, 4, 5, 6}, {2, 3});
  NDArray y;
  {
    auto rec = autograd::record();
    y = nd::sum(dense(x));
  }
  y.backward();
  // d sum(x W^T + b) / dW[u, k] = sum_n x[n, k]; / db = N.
  expect_all_near(values(dense.weight().grad()), {5, 7, 9, 5, 7, 9}, 1e-6, "dW");
  expect_all_near(values(dense.bias().grad()), {2, 2}, 1e-6, "db");
}

TEST(GluonConv, Conv2DMatchesDirectSum) {
  nn::Conv2D conv(2, {2, 2}, {.strides = {1}, .padding = {1}});
  conv.initialize();
  const std::vector<double> x = iota_values(18, 0.25, -2);  // (1, 2, 3, 3)
  (void)conv(floats(x, {1, 2, 3, 3}));
  ASSERT_EQ(conv.weight().shape(), (Shape{2, 2, 2, 2}));
  const std::vector<double> w = iota_values(16, 0.1, -0.8), b = {0.5, -0.5};
  conv.weight().set_data(floats(w, {2, 2, 2, 2}));
  conv.bias().set_data(floats(b, {2}));
  const NDArray out = conv(floats(x, {1, 2, 3, 3}));
  ASSERT_EQ(out.shape(), (Shape{1, 2, 4, 4}));
  std::vector<double> want;
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        double s = b[static_cast<size_t>(o)];
        for (int c = 0; c < 2; ++c)
          for (int ki = 0; ki < 2; ++ki)
            for (int kj = 0; kj < 2; ++kj) {
              const int r = i + ki - 1, q = j + kj - 1;
              if (r < 0 || r >= 3 || q < 0 || q >= 3) continue;
              s += x[static_cast<size_t>(c * 9 + r * 3 + q)] *
                   w[static_cast<size_t>(((o * 2 + c) * 2 + ki) * 2 + kj)];
            }
        want.push_back(s);
      }
  expect_all_near(values(out), want, 1e-5, "conv2d");
}

TEST(GluonConv, ShapesOfTheFamily) {
  nn::Conv1D c1(4, {3}, {.groups = 2});
  nn::Conv3D c3(4, {1, 2, 2});
  nn::Conv2DTranspose ct(3, {2}, {.strides = {2}});
  for (nn::HybridBlock* b : std::vector<nn::HybridBlock*>{&c1, &c3, &ct}) b->initialize();
  EXPECT_EQ(c1(nd::ones({2, 6, 10})).shape(), (Shape{2, 4, 8}));
  EXPECT_EQ(c1.weight().shape(), (Shape{4, 3, 3}));
  EXPECT_EQ(c3(nd::ones({1, 2, 3, 4, 4})).shape(), (Shape{1, 4, 3, 3, 3}));
  EXPECT_EQ(ct(nd::ones({1, 5, 3, 3})).shape(), (Shape{1, 3, 6, 6}));
  EXPECT_EQ(ct.weight().shape(), (Shape{5, 3, 2, 2}));
  // A transposed convolution of ones with stride = kernel tiles the weight sums: each output
  // pixel sees exactly one kernel tap per input channel.
  ct.weight().set_data(nd::ones({5, 3, 2, 2}));
  expect_all_near(values(ct(nd::ones({1, 5, 3, 3}))), std::vector<double>(108, 5.0), 1e-5,
                  "conv2d transpose");
  expect_error([&] { c1(nd::ones({2, 6})); }, ErrorCode::kShapeMismatch, {c1.name(), "3-D"});
}

TEST(GluonPool, MaxAvgGlobal) {
  const std::vector<double> x = {1, 5, 2, 0, 3, 4, 8, 6, 7, 9, 2, 1, 0, 3, 4, 2};  // (1, 1, 4, 4)
  const NDArray in = floats(x, {1, 1, 4, 4});
  nn::MaxPool2D max_pool;
  nn::AvgPool2D avg_pool({.pool_size = {2}, .strides = {2}});
  nn::GlobalAvgPool2D gap;
  nn::GlobalMaxPool2D gmp;
  expect_all_near(values(max_pool(in)), {5, 8, 9, 4}, 0, "max");
  expect_all_near(values(avg_pool(in)), {13 / 4.0, 16 / 4.0, 19 / 4.0, 9 / 4.0}, 1e-6, "avg");
  expect_all_near(values(gap(in)), {std::accumulate(x.begin(), x.end(), 0.0) / 16}, 1e-6, "global avg");
  EXPECT_EQ(gap(in).shape(), (Shape{1, 1, 1, 1}));
  expect_all_near(values(gmp(in)), {9}, 0, "global max");
  // Padding counts in the average (count_include_pad, Gluon's default): corner = 1 / 4.
  nn::AvgPool1D padded({.pool_size = {2}, .strides = {2}, .padding = {1}});
  expect_all_near(values(padded(floats({1, 2, 3}, {1, 1, 3}))), {0.5, 2.5}, 1e-6, "avg pad");
  nn::MaxPool1D ceil({.pool_size = {2}, .ceil_mode = true});
  EXPECT_EQ(ceil(nd::ones({1, 1, 5})).shape(), (Shape{1, 1, 3}));
}

// Per-channel statistics of (N, C, S) data, biased variance.
struct ChannelStats {
  std::vector<double> mean, var;
};
ChannelStats channel_stats(const std::vector<double>& x, int n, int c, int s) {
  ChannelStats st{std::vector<double>(static_cast<size_t>(c)), std::vector<double>(static_cast<size_t>(c))};
  for (int ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0;
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < s; ++k) {
        const double v = x[static_cast<size_t>((i * c + ch) * s + k)];
        sum += v;
        sq += v * v;
      }
    const double count = n * s;
    st.mean[static_cast<size_t>(ch)] = sum / count;
    st.var[static_cast<size_t>(ch)] = sq / count - (sum / count) * (sum / count);
  }
  return st;
}

TEST(GluonBatchNorm, TrainingUpdatesRunningStatsPredictUsesThem) {
  nn::BatchNorm bn({.epsilon = 1e-5});
  bn.initialize();
  std::vector<double> x(24);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(static_cast<double>(i)) * 3 + static_cast<double>(i % 5);
  const NDArray in = floats(x, {3, 2, 4});
  const ChannelStats st = channel_stats(x, 3, 2, 4);
  NDArray y;
  {
    auto rec = autograd::record();
    y = bn(in);
  }
  EXPECT_EQ(bn.gamma().shape(), (Shape{2}));
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int ch = 0; ch < 2; ++ch)
      for (int k = 0; k < 4; ++k)
        want.push_back((x[static_cast<size_t>((i * 2 + ch) * 4 + k)] - st.mean[static_cast<size_t>(ch)]) /
                       std::sqrt(st.var[static_cast<size_t>(ch)] + 1e-5));
  expect_all_near(values(y), want, 1e-4, "batch statistics");
  // running = running * 0.9 + batch * 0.1 from (0, 1).
  expect_all_near(values(bn.running_mean().data()), {0.1 * st.mean[0], 0.1 * st.mean[1]}, 1e-5,
                  "running mean");
  expect_all_near(values(bn.running_var().data()), {0.9 + 0.1 * st.var[0], 0.9 + 0.1 * st.var[1]}, 1e-5,
                  "running var");
  // Predict mode normalizes with the running statistics and leaves them alone.
  const std::vector<double> rm = values(bn.running_mean().data()), rv = values(bn.running_var().data());
  const std::vector<double> pred = values(bn(in));
  for (size_t i = 0; i < x.size(); ++i) {
    const size_t ch = (i / 4) % 2;
    EXPECT_NEAR(pred[i], (x[i] - rm[ch]) / std::sqrt(rv[ch] + 1e-5), 1e-4) << i;
  }
  expect_all_near(values(bn.running_mean().data()), rm, 0, "unchanged in predict mode");
  EXPECT_EQ(bn.running_mean().grad_req(), GradReq::kNull);
}

TEST(GluonNorm, LayerInstanceGroup) {
  std::vector<double> x(16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::cos(static_cast<double>(i) * 0.7) * 2 + static_cast<double>(i) / 8;
  const NDArray in = floats(x, {2, 2, 4});  // (N, C, S)
  const auto normalized = [&](const std::vector<size_t>& idx, double eps) {
    double mean = 0, var = 0;
    for (size_t i : idx) mean += x[i];
    mean /= static_cast<double>(idx.size());
    for (size_t i : idx) var += (x[i] - mean) * (x[i] - mean);
    var /= static_cast<double>(idx.size());
    std::vector<double> out;
    for (size_t i : idx) out.push_back((x[i] - mean) / std::sqrt(var + eps));
    return out;
  };
  // LayerNorm over the last axis and InstanceNorm per (n, c): both normalize rows of 4.
  nn::LayerNorm ln;
  nn::InstanceNorm inorm;
  ln.initialize();
  inorm.initialize();
  const std::vector<double> got_ln = values(ln(in)), got_in = values(inorm(in));
  EXPECT_EQ(ln.gamma().shape(), (Shape{4}));
  EXPECT_EQ(inorm.gamma().shape(), (Shape{2}));
  for (size_t row = 0; row < 4; ++row) {
    const std::vector<double> want = normalized({row * 4, row * 4 + 1, row * 4 + 2, row * 4 + 3}, 1e-5);
    for (size_t k = 0; k < 4; ++k) {
      EXPECT_NEAR(got_ln[row * 4 + k], want[k], 1e-4);
      EXPECT_NEAR(got_in[row * 4 + k], want[k], 1e-4);
    }
  }
  // LayerNorm on axis 1 normalizes over the channels.
  nn::LayerNorm ln1({}, 1);
  ln1.initialize();
  const std::vector<double> got_ln1 = values(ln1(in));
  EXPECT_EQ(ln1.gamma().shape(), (Shape{2}));
  const std::vector<double> col = normalized({0, 4}, 1e-5);
  EXPECT_NEAR(got_ln1[0], col[0], 1e-4);
  EXPECT_NEAR(got_ln1[4], col[1], 1e-4);
  // GroupNorm with 1 group normalizes each sample; gamma / beta per group (MXNet 1.x).
  nn::GroupNorm gn(1);
  gn.initialize();
  gn.gamma().set_data(floats({2}, {1}));
  gn.beta().set_data(floats({0.5}, {1}));
  const std::vector<double> got_gn = values(gn(in));
  const std::vector<double> sample0 = normalized({0, 1, 2, 3, 4, 5, 6, 7}, 1e-5);
  for (size_t k = 0; k < 8; ++k) EXPECT_NEAR(got_gn[k], 2 * sample0[k] + 0.5, 1e-4) << k;
  nn::GroupNorm bad(3);
  bad.initialize();
  expect_error([&] { bad(in); }, ErrorCode::kShapeMismatch, {bad.name(), "num_groups 3"});
}

TEST(GluonDropout, OnlyInTrainingMode) {
  nn::Dropout drop(0.5);
  const NDArray x = nd::ones({100, 100});
  expect_all_near(values(drop(x)), std::vector<double>(10000, 1.0), 0, "predict mode");
  std::vector<double> trained;
  {
    auto rec = autograd::record();
    trained = values(drop(x));
  }
  size_t kept = 0;
  for (double v : trained) {
    EXPECT_TRUE(v == 0 || v == 2.0) << v;
    kept += v != 0;
  }
  // Binomial(10000, 0.5): 5 standard deviations are 250.
  EXPECT_NEAR(static_cast<double>(kept), 5000, 250);
}

// nn::seed fixes the masks: the same calls after the same seed draw the same masks, op by op and
// hybridized alike (tracing draws none), while consecutive calls draw new ones.
TEST(GluonDropout, SeedMakesMasksReproducible) {
  const NDArray x = nd::ones({64, 64});
  const auto masks = [&](bool hybrid) {
    nn::HybridSequential net;
    net.add<nn::Dropout>(0.3);
    if (hybrid) net.hybridize();
    nn::seed(11);
    auto rec = autograd::record();
    std::vector<std::vector<double>> out;
    for (int i = 0; i < 3; ++i) out.push_back(values(net(x)));
    return out;
  };
  const auto first = masks(false);
  EXPECT_EQ(masks(false), first);
  EXPECT_EQ(masks(true), first);
  EXPECT_NE(first[1], first[2]);
}

TEST(GluonEmbeddingFlatten, PickRowsAndFlatten) {
  nn::Embedding emb(4, 3);
  emb.initialize();
  const std::vector<double> w = iota_values(12, 1, 0);
  emb.weight().set_data(floats(w, {4, 3}));
  const NDArray out = emb(floats({3, 0, 1, 3}, {2, 2}));
  EXPECT_EQ(out.shape(), (Shape{2, 2, 3}));
  expect_all_near(values(out), {9, 10, 11, 0, 1, 2, 3, 4, 5, 9, 10, 11}, 0, "embedding");
  nn::Flatten flat;
  EXPECT_EQ(flat(nd::ones({2, 3, 4})).shape(), (Shape{2, 12}));
}

// The argument checks the layer families share name the block: one input only, and 1 or one per
// spatial axis of each convolution size.
TEST(GluonLayers, ArgumentErrorsNameTheBlock) {
  nn::NameManager names;
  const NDArray x = nd::ones({2, 3});
  nn::Activation relu("relu");
  expect_error([&] { relu({x, x}); }, ErrorCode::kInvalidArgument, {"relu0", "expected 1 input, got 2"});
  nn::Flatten flatten;
  expect_error([&] { flatten(std::vector<NDArray>{}); }, ErrorCode::kInvalidArgument,
               {"flatten0", "expected 1 input, got 0"});
  nn::InstanceNorm norm;
  expect_error(
      [&] {
        norm({x, x});
      },
      ErrorCode::kInvalidArgument, {"instancenorm0", "expected 1 input, got 2"});
  expect_error(
      [&] {
        nn::Conv2D(4, {3, 3, 3});
      },
      ErrorCode::kInvalidArgument, {"conv0", "kernel_size needs 1 or 2 values, got 3"});
  expect_error(
      [&] {
        nn::MaxPool2D(nn::PoolOptions{.pool_size = {2, 2, 2}});
      },
      ErrorCode::kInvalidArgument, {"pool", "needs 1 or 2 values, got 3"});
}

TEST(GluonActivations, ClosedForms) {
  const std::vector<double> x = {-2, -0.5, 0, 0.5, 2};
  const NDArray in = floats(x, {5});
  const auto check = [&](nn::HybridBlock& block, double (*f)(double), const char* what) {
    block.initialize();
    std::vector<double> want;
    for (double v : x) want.push_back(f(v));
    expect_all_near(values(block(in)), want, 1e-5, what);
  };
  nn::Activation relu("relu"), sigmoid("sigmoid"), tanh_("tanh"), softrelu("softrelu"), softsign("softsign");
  check(
      relu, [](double v) { return std::max(v, 0.0); }, "relu");
  check(
      sigmoid, [](double v) { return 1 / (1 + std::exp(-v)); }, "sigmoid");
  check(
      tanh_, [](double v) { return std::tanh(v); }, "tanh");
  check(
      softrelu, [](double v) { return std::log1p(std::exp(v)); }, "softrelu");
  check(
      softsign, [](double v) { return v / (1 + std::abs(v)); }, "softsign");
  nn::LeakyReLU leaky(0.1);
  check(
      leaky, [](double v) { return v >= 0 ? v : 0.1 * v; }, "leaky");
  nn::PReLU prelu;
  check(
      prelu, [](double v) { return v >= 0 ? v : 0.25 * v; }, "prelu");
  EXPECT_EQ(prelu.alpha().shape(), (Shape{1}));
  nn::ELU elu;
  check(
      elu, [](double v) { return v > 0 ? v : std::expm1(v); }, "elu");
  nn::SELU selu;
  check(
      selu, [](double v) { return 1.0507009873554805 * (v > 0 ? v : 1.6732632423543772 * std::expm1(v)); },
      "selu");
  nn::SiLU silu;
  check(
      silu, [](double v) { return v / (1 + std::exp(-v)); }, "silu");
  nn::Swish swish(2.0);
  check(
      swish, [](double v) { return v / (1 + std::exp(-2 * v)); }, "swish");
  nn::GELU gelu;
  check(
      gelu, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }, "gelu");
  expect_error([] { nn::Activation("swishy"); }, ErrorCode::kInvalidArgument, {"swishy", "relu"});
  // PReLU with a slope per channel.
  nn::PReLU per_channel({.in_channels = 2});
  per_channel.initialize();
  per_channel.alpha().set_data(floats({0.5, 0.1}, {2}));
  expect_all_near(values(per_channel(floats({-1, -1, -2, 3}, {1, 2, 2}))), {-0.5, -0.5, -0.2, 3}, 1e-6,
                  "prelu per channel");
}

}  // namespace
}  // namespace kiln::testing
