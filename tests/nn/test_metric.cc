// Metrics against values worked out by hand, accumulation over updates, reset, and bad input.
#include <cmath>

#include <gtest/gtest.h>

#include "kiln/nn/metric.hpp"
#include "test_support.h"

namespace kiln::testing {
namespace {

using Vec = std::vector<double>;

NDArray f32(const std::vector<float>& values, const Shape& shape) {
  return nd::array(values, shape);
}

TEST(Metric, AccuracyFromScoresAndFromClasses) {
  nn::Accuracy acc;
  EXPECT_TRUE(std::isnan(acc.get().second));
  // argmax [1, 0, 2] against [1, 2, 2]: 2 of 3.
  acc.update({f32({1, 2, 2}, Shape{3})},
             {f32({0.1f, 0.7f, 0.2f, 0.6f, 0.3f, 0.1f, 0.2f, 0.2f, 0.6f}, Shape{3, 3})});
  EXPECT_EQ(acc.get().first, "accuracy");
  EXPECT_DOUBLE_EQ(acc.get().second, 2.0 / 3);
  // A tie goes to the first class: argmax [0, 1] against [0, 1].
  acc.update({f32({0, 1}, Shape{2})}, {f32({0.5f, 0.5f, 0.4f, 0.6f}, Shape{2, 2})});
  EXPECT_DOUBLE_EQ(acc.get().second, 4.0 / 5);
  EXPECT_EQ(acc.num_inst(), 5);
  acc.reset();
  EXPECT_TRUE(std::isnan(acc.get().second));
  // Predictions of the label's shape are classes; labels truncate to int (1.7 -> 1).
  acc.update({f32({1, 0, 1.7f}, Shape{3})}, {f32({1, 1, 1}, Shape{3})});
  EXPECT_DOUBLE_EQ(acc.get().second, 2.0 / 3);
}

TEST(Metric, AccuracySeveralOutputsAndOtherAxis) {
  nn::Accuracy acc(0);  // classes along axis 0: columns are samples
  acc.update({f32({1, 0}, Shape{2}), f32({0}, Shape{1})},
             {f32({0.1f, 0.9f, 0.9f, 0.1f}, Shape{2, 2}), f32({0.3f, 0.7f}, Shape{2, 1})});
  // Pair 0: argmax over axis 0 = [1, 0], both right; pair 1: argmax [1] against 0, wrong.
  EXPECT_DOUBLE_EQ(acc.get().second, 2.0 / 3);
}

TEST(Metric, TopKAccuracy) {
  nn::TopKAccuracy top2(2);
  EXPECT_EQ(top2.name(), "top_k_accuracy_2");
  const NDArray preds =
      f32({0.1f, 0.5f, 0.3f, 0.1f, 0.4f, 0.3f, 0.2f, 0.1f, 0.25f, 0.25f, 0.25f, 0.25f}, Shape{3, 4});
  // Row 0: top 2 = {1, 2} holds 2. Row 1: {0, 1} misses 3. Row 2 (all tied): {0, 1} holds 1.
  top2.update({f32({2, 3, 1}, Shape{3})}, {preds});
  EXPECT_DOUBLE_EQ(top2.get().second, 2.0 / 3);
  nn::TopKAccuracy top4(4);
  top4.update({f32({2, 3, 1}, Shape{3})}, {preds});
  EXPECT_DOUBLE_EQ(top4.get().second, 1.0);
  nn::TopKAccuracy top1(1);
  top1.update({f32({1, 0, 0}, Shape{3})}, {preds});
  EXPECT_DOUBLE_EQ(top1.get().second, 1.0);
}

TEST(Metric, CrossEntropy) {
  nn::CrossEntropy ce;
  ce.update({f32({1, 1}, Shape{2})}, {f32({0.2f, 0.8f, 0.6f, 0.4f}, Shape{2, 2})});
  EXPECT_EQ(ce.get().first, "cross-entropy");
  EXPECT_NEAR(ce.get().second, -(std::log(0.8) + std::log(0.4)) / 2, 1e-7);
  ce.update({f32({0}, Shape{1})}, {f32({1, 0}, Shape{1, 2})});  // -log(1 + eps) = 0
  EXPECT_NEAR(ce.get().second, -(std::log(0.8) + std::log(0.4)) / 3, 1e-7);
}

TEST(Metric, MeanAbsoluteAndSquaredErrorAverageBatches) {
  nn::MAE mae;
  nn::MSE mse;
  const NDArray label1 = f32({1, 2, 3}, Shape{3}), pred1 = f32({1.5f, 2, 2}, Shape{3, 1});
  const NDArray label2 = f32({0, 0}, Shape{1, 2}), pred2 = f32({1, 3}, Shape{1, 2});
  mae.update({label1}, {pred1});
  mae.update({label2}, {pred2});
  mse.update({label1, label2}, {pred1, pred2});
  // Batch means: MAE 0.5 and 2; MSE 1.25 / 3 and 5. MXNet 1.x averages them per batch.
  EXPECT_DOUBLE_EQ(mae.get().second, 1.25);
  EXPECT_DOUBLE_EQ(mse.get().second, (1.25 / 3 + 5) / 2);
  EXPECT_EQ(mae.get().first, "mae");
  EXPECT_EQ(mse.get().first, "mse");
}

// F1 scores: predicted class 1 as [0.3, 0.7], class 0 as [0.8, 0.2].
NDArray binary_scores(const std::vector<int>& classes) {
  std::vector<float> v;
  for (int c : classes) {
    v.push_back(c ? 0.3f : 0.8f);
    v.push_back(c ? 0.7f : 0.2f);
  }
  return f32(v, Shape{static_cast<int64_t>(classes.size()), 2});
}

TEST(Metric, F1MacroAndMicro) {
  nn::F1 macro, micro(nn::F1Average::kMicro);
  for (nn::F1* f1 : {&macro, &micro}) {
    // tp 2, fp 1, fn 1: precision = recall = 2/3, F1 2/3.
    f1->update({f32({1, 0, 1, 1, 0}, Shape{5})}, {binary_scores({1, 1, 0, 1, 0})});
    EXPECT_DOUBLE_EQ(f1->get().second, 2.0 / 3);
    // tp 0, fp 1, fn 1: F1 0.
    f1->update({f32({0, 1}, Shape{2})}, {binary_scores({1, 0})});
  }
  EXPECT_DOUBLE_EQ(macro.get().second, 1.0 / 3);  // mean of 2/3 and 0
  EXPECT_DOUBLE_EQ(micro.get().second, 0.5);      // tp 2, fp 2, fn 2
  EXPECT_EQ(micro.num_inst(), 7);
  micro.reset();
  micro.update({f32({0, 0}, Shape{2})}, {binary_scores({0, 0})});  // no positives at all
  EXPECT_DOUBLE_EQ(micro.get().second, 0.0);
}

TEST(Metric, BadInputNamesThePairAndChangesNothing) {
  nn::Accuracy acc;
  expect_error(
      [&] {
        acc.update({f32({1}, Shape{1}), f32({1}, Shape{1})}, {f32({0, 1}, Shape{1, 2})});
      },
      ErrorCode::kInvalidArgument, {"accuracy", "2 label arrays but 1 prediction"});
  acc.update({f32({1}, Shape{1})}, {f32({0, 1}, Shape{1, 2})});
  expect_error(
      [&] {
        acc.update({f32({1}, Shape{1}), f32({1, 0}, Shape{2})},
                   {f32({0, 1}, Shape{1, 2}), f32({0, 1, 1}, Shape{3, 1})});
      },
      ErrorCode::kShapeMismatch, {"accuracy: pair 1", "2 labels"});
  EXPECT_DOUBLE_EQ(acc.get().second, 1.0);  // the failed update added nothing, not even pair 0
  EXPECT_EQ(acc.num_inst(), 1);

  nn::CrossEntropy ce;
  expect_error(
      [&] {
        ce.update({f32({2}, Shape{1})}, {f32({0.5f, 0.5f}, Shape{1, 2})});
      },
      ErrorCode::kOutOfRange, {"cross-entropy: pair 0", "label 0 is 2", "2 classes"});
  expect_error(
      [&] {
        ce.update({f32({0, 1}, Shape{2})}, {f32({0.5f, 0.5f}, Shape{1, 2})});
      },
      ErrorCode::kShapeMismatch, {"2 labels", "1 predictions"});
  nn::MAE mae;
  expect_error(
      [&] {
        mae.update({f32({1, 2, 3, 4}, Shape{2, 2})}, {f32({1, 2, 3, 4}, Shape{4})});
      },
      ErrorCode::kShapeMismatch, {"mae: pair 0", "(2, 2)", "(4,)"});
  nn::F1 f1;
  expect_error(
      [&] {
        f1.update({f32({0, 2}, Shape{2})}, {binary_scores({0, 1})});
      },
      ErrorCode::kInvalidArgument, {"f1: pair 0", "label 1 is 2", "binary"});
  EXPECT_TRUE(std::isnan(f1.get().second));
  expect_error([] { nn::TopKAccuracy(0); }, ErrorCode::kInvalidArgument, {"top_k"});
  nn::TopKAccuracy top(2);
  expect_error([&] { top.update({f32({0}, Shape{1})}, {f32({0.5f}, Shape{1})}); }, ErrorCode::kShapeMismatch,
               {"(samples, classes)"});
}

}  // namespace
}  // namespace kiln::testing
