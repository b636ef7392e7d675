// Gluon losses against values computed here by hand (per sample, as Gluon returns them), sample
// weights, gradients of the classification loss, and label shape errors.
#include <cmath>

#include <gtest/gtest.h>

#include "kiln/autograd.hpp"
#include "kiln/nn/loss.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

const std::vector<double> kPred = {0.5, -1.0, 2.0, 0.0, 1.5, -0.5};  // (2, 3)
const std::vector<double> kLabel = {1.0, -1.5, 0.0, 0.5, 1.0, 1.0};

// The per-sample mean of f(pred, label) over rows of 3.
std::vector<double> row_means(double (*f)(double, double)) {
  std::vector<double> out;
  for (size_t r = 0; r < 2; ++r) {
    double s = 0;
    for (size_t k = 0; k < 3; ++k) s += f(kPred[r * 3 + k], kLabel[r * 3 + k]);
    out.push_back(s / 3);
  }
  return out;
}

TEST(GluonLoss, Regression) {
  const NDArray pred = floats(kPred, {2, 3}), label = floats(kLabel, {2, 3});
  nn::L1Loss l1;
  nn::L2Loss l2;
  nn::HuberLoss huber(1.0);
  expect_all_near(values(l1(pred, label)), row_means([](double p, double y) { return std::abs(y - p); }),
                  1e-6, "l1");
  expect_all_near(values(l2(pred, label)),
                  row_means([](double p, double y) { return 0.5 * (y - p) * (y - p); }), 1e-6, "l2");
  expect_all_near(values(huber(pred, label)), row_means([](double p, double y) {
                    const double d = std::abs(y - p);
                    return d > 1 ? d - 0.5 : 0.5 * d * d;
                  }),
                  1e-6, "huber");
  // Scalar weight and per-sample weight (2, 1).
  nn::L2Loss weighted({.weight = 4});
  const std::vector<double> base = values(l2(pred, label));
  const std::vector<double> got = values(weighted(pred, label, floats({1, 0.5}, {2, 1})));
  EXPECT_NEAR(got[0], 4 * base[0], 1e-5);
  EXPECT_NEAR(got[1], 2 * base[1], 1e-5);
  // A label of another shape but the same size is reshaped (Gluon's reshape_like).
  expect_all_near(values(l1(pred, floats(kLabel, {6}))), values(l1(pred, label)), 0, "reshaped label");
  expect_error(
      [&] {
        l1(pred, nd::ones({2, 2}));
      },
      ErrorCode::kShapeMismatch, {"l1loss", "(2, 2)", "(2, 3)"});
}

TEST(GluonLoss, SoftmaxCrossEntropySparseDenseLogits) {
  const NDArray pred = floats(kPred, {2, 3});
  const std::vector<int64_t> classes = {2, 0};
  std::vector<double> want;
  for (size_t r = 0; r < 2; ++r) {
    double z = 0;
    for (size_t k = 0; k < 3; ++k) z += std::exp(kPred[r * 3 + k]);
    want.push_back(std::log(z) - kPred[r * 3 + static_cast<size_t>(classes[r])]);
  }
  nn::SoftmaxCrossEntropyLoss sce;
  expect_all_near(values(sce(pred, nd::array(classes, {2}))), want, 1e-5, "sparse int64");
  expect_all_near(values(sce(pred, floats({2, 0}, {2, 1}))), want, 1e-5, "sparse float (N, 1)");
  // Dense one-hot labels give the same; from_logits takes log-probabilities as they are.
  nn::SoftmaxCrossEntropyLoss dense({{}, -1, false});
  expect_all_near(values(dense(pred, floats({0, 0, 1, 1, 0, 0}, {2, 3}))), want, 1e-5, "dense");
  nn::SoftmaxCrossEntropyLoss logits({{}, -1, true, true});
  expect_all_near(values(logits(pred, nd::array(classes, {2}))), {-2.0, -0.0}, 1e-6, "from_logits");
  // d loss / d pred = softmax - onehot.
  NDArray p = pred.copy();
  p.attach_grad();
  NDArray loss;
  {
    auto rec = autograd::record();
    loss = sce(p, nd::array(classes, {2}));
  }
  loss.backward();
  const std::vector<double> grad = values(p.grad());
  for (size_t r = 0; r < 2; ++r) {
    double z = 0;
    for (size_t k = 0; k < 3; ++k) z += std::exp(kPred[r * 3 + k]);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_NEAR(grad[r * 3 + k], std::exp(kPred[r * 3 + k]) / z - (static_cast<int64_t>(k) == classes[r]),
                  1e-5);
  }
  expect_error(
      [&] {
        sce(pred, nd::array(std::vector<int64_t>{1, 2, 0}, {3}));
      },
      ErrorCode::kShapeMismatch, {"softmaxcrossentropyloss", "(3,)", "(2, 3)"});
}

TEST(GluonLoss, SigmoidBinaryCrossEntropy) {
  const NDArray pred = floats(kPred, {2, 3});
  const std::vector<double> z = {1, 0, 1, 0, 1, 0};
  const auto bce = [&](bool probs) {
    std::vector<double> out;
    for (size_t r = 0; r < 2; ++r) {
      double s = 0;
      for (size_t k = 0; k < 3; ++k) {
        const double x = kPred[r * 3 + k], y = z[r * 3 + k];
        const double p = probs ? std::clamp(x, 0.1, 0.9) : 1 / (1 + std::exp(-x));
        s += -(y * std::log(p) + (1 - y) * std::log(1 - p));
      }
      out.push_back(s / 3);
    }
    return out;
  };
  nn::SigmoidBinaryCrossEntropyLoss logits;
  expect_all_near(values(logits(pred, floats(z, {2, 3}))), bce(false), 1e-5, "from logits");
  std::vector<double> clamped;
  for (double x : kPred) clamped.push_back(std::clamp(x, 0.1, 0.9));
  nn::SigmoidBinaryCrossEntropyLoss probs({{}, true});
  expect_all_near(values(probs(floats(clamped, {2, 3}), floats(z, {2, 3}))), bce(true), 1e-5, "from sigmoid");
  expect_error([&] { logits(pred, nd::ones({5})); }, ErrorCode::kShapeMismatch,
               {"sigmoidbinarycrossentropyloss"});
}

TEST(GluonLoss, KLDivergence) {
  const std::vector<double> logp = {std::log(0.2), std::log(0.3), std::log(0.5),
                                    std::log(0.6), std::log(0.3), std::log(0.1)};
  const std::vector<double> q = {0.1, 0.6, 0.3, 0.5, 0.25, 0.25};
  std::vector<double> want;
  for (size_t r = 0; r < 2; ++r) {
    double s = 0;
    for (size_t k = 0; k < 3; ++k) s += q[r * 3 + k] * (std::log(q[r * 3 + k]) - logp[r * 3 + k]);
    want.push_back(s);  // summed over classes (Gluon 1.x)
  }
  nn::KLDivLoss kl;
  expect_all_near(values(kl(floats(logp, {2, 3}), floats(q, {2, 3}))), want, 1e-5,
                  "kl from log-probabilities");
  // from_logits = false applies log_softmax first; log-probabilities are their own log_softmax.
  nn::KLDivLoss kl_scores({{}, false, -1});
  expect_all_near(values(kl_scores(floats(logp, {2, 3}), floats(q, {2, 3}))), want, 1e-5, "kl from scores");
  expect_error(
      [&] {
        kl(floats(logp, {2, 3}), floats(q, {3, 2}));
      },
      ErrorCode::kShapeMismatch, {"kldivloss", "(3, 2)", "(2, 3)"});
}

}  // namespace
}  // namespace kiln::testing
