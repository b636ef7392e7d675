// Bad input to SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss: each must throw a
// kiln::Error with the right code whose message names the op, the input or attribute, and the
// expected and actual values. Plus inference on partly unknown shapes, which the case files
// cannot express, and the thread-count independence of the reduced loss.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "op_test_util.h"

namespace kiln::ops {
namespace {

const char* const kLossOps[] = {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"};

Tensor labels(const std::vector<int64_t>& values, const Shape& shape) {
  return Tensor::from_vector<int64_t>(values, shape);
}

TEST(LossErrors, ScoresMustBeFloatOfRankAtLeastTwo) {
  expect_error("SoftmaxCrossEntropyLoss", {}, {floats(Shape{3}), labels({0, 1, 2}, Shape{3})},
               ErrorCode::kShapeMismatch,
               {"SoftmaxCrossEntropyLoss", "input 0 (scores)", "expected rank >= 2", "got shape (3,)"});
  expect_error("NegativeLogLikelihoodLoss", {}, {floats(Shape{3}), labels({0, 1, 2}, Shape{3})},
               ErrorCode::kShapeMismatch,
               {"NegativeLogLikelihoodLoss", "input 0 (input)", "expected rank >= 2"});
  expect_error("SoftmaxCrossEntropyLoss", {},
               {Tensor::zeros(Shape{2, 3}, DType::kInt32), labels({0, 1}, Shape{2})},
               ErrorCode::kTypeMismatch,
               {"input 0 (scores)", "expected one of {float32, float64, float16, bfloat16}", "got int32"});
}

TEST(LossErrors, LabelsMustBeIntegerWithTheScoresShapeLessAxisOne) {
  expect_error(
      "NegativeLogLikelihoodLoss", {}, {floats(Shape{2, 3}), floats(Shape{2})}, ErrorCode::kTypeMismatch,
      {"NegativeLogLikelihoodLoss", "input 1 (target)", "expected one of {int32, int64}", "got float32"});
  expect_error("SoftmaxCrossEntropyLoss", {}, {floats(Shape{2, 3, 4}), labels({0, 1}, Shape{2})},
               ErrorCode::kShapeMismatch,
               {"input 1 (labels)", "expected 2-D (N, d1, ..., dk)", "(2, 3, 4)", "got shape (2,)"});
  expect_error("SoftmaxCrossEntropyLoss", {},
               {floats(Shape{2, 3, 4}), labels({0, 0, 0, 0, 0, 0}, Shape{2, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (labels)", "matching scores of shape (2, 3, 4) without axis 1", "got shape (2, 3)"});
  expect_error("NegativeLogLikelihoodLoss", {}, {floats(Shape{2, 3}), labels({0, 1, 2}, Shape{3})},
               ErrorCode::kShapeMismatch, {"input 1 (target)", "(2, 3)", "got shape (3,)"});
}

TEST(LossErrors, WeightsAreOnePerClassInTheScoresDtype) {
  for (const char* op : kLossOps) {
    SCOPED_TRACE(op);
    const std::string weight =
        std::string(op) == "SoftmaxCrossEntropyLoss" ? "input 2 (weights)" : "input 2 (weight)";
    expect_error(op, {}, {floats(Shape{2, 3}), labels({0, 1}, Shape{2}), floats(Shape{4})},
                 ErrorCode::kShapeMismatch, {op, weight, "expected shape (3,)", "got shape (4,)"});
    expect_error(op, {}, {floats(Shape{2, 3}), labels({0, 1}, Shape{2}), floats(Shape{1, 3})},
                 ErrorCode::kShapeMismatch, {op, weight, "got shape (1, 3)"});
    expect_error(op, {}, {floats(Shape{2, 3}), labels({0, 1}, Shape{2}), floats(Shape{3}, DType::kFloat64)},
                 ErrorCode::kTypeMismatch, {op, "input 2", "float64", "float32"});
  }
}

TEST(LossErrors, LabelOutOfRangeNamesTheLabelAndTheClassCount) {
  expect_error("SoftmaxCrossEntropyLoss", {}, {floats(Shape{2, 3}), labels({0, 3}, Shape{2})},
               ErrorCode::kOutOfRange,
               {"SoftmaxCrossEntropyLoss", "input 1 (labels)", "label 3 is out of range [0, 3)"});
  expect_error("NegativeLogLikelihoodLoss", {{"ignore_index", -100}},
               {floats(Shape{2, 3}), labels({-1, 0}, Shape{2})}, ErrorCode::kOutOfRange,
               {"NegativeLogLikelihoodLoss", "input 1 (target)", "label -1 is out of range [0, 3)",
                "not ignore_index -100"});
  // Out of range but ignored: no error, and no loss.
  const auto out = run("NegativeLogLikelihoodLoss", {{"ignore_index", -100}, {"reduction", "none"}},
                       {floats(Shape{2, 3}), labels({-100, 0}, Shape{2})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{0.0f, -0.0f}));
}

TEST(LossErrors, ReductionAndOutputCount) {
  for (const char* op : kLossOps) {
    SCOPED_TRACE(op);
    expect_bad_attr(op, {{"reduction", "avg"}},
                    {op, "reduction", "expected one of {none, sum, mean}", "got 'avg'"});
  }
  expect_error("NegativeLogLikelihoodLoss", {}, {floats(Shape{2, 3}), labels({0, 1}, Shape{2})},
               ErrorCode::kInvalidArgument, {"NegativeLogLikelihoodLoss", "expected 1 output, got 2"}, 2);
  expect_error("SoftmaxCrossEntropyLoss", {}, {floats(Shape{2, 3}), labels({0, 1}, Shape{2})},
               ErrorCode::kInvalidArgument, {"SoftmaxCrossEntropyLoss", "expected 1 to 2 outputs, got 3"}, 3);
}

TEST(LossInference, UnknownDimsAndOutputShapes) {
  const OpSchema& schema = OpRegistry::global().get("SoftmaxCrossEntropyLoss");
  const std::vector<std::optional<TensorInfo>> inputs = {TensorInfo{DType::kFloat16, Shape{-1, 5, 7}},
                                                         TensorInfo{DType::kInt32, Shape{4, -1}},
                                                         TensorInfo{DType::kFloat16, Shape{-1}}};
  const auto none = schema.infer_types(schema.bind({{"reduction", "none"}}), inputs, {}, 2);
  ASSERT_EQ(none.size(), 2u);
  EXPECT_EQ(none[0].shape, (Shape{4, -1}));
  EXPECT_EQ(none[0].dtype, DType::kFloat16);
  EXPECT_EQ(none[1].shape, (Shape{-1, 5, 7}));
  const auto mean = schema.infer_types(schema.bind({}), inputs, {});
  ASSERT_EQ(mean.size(), 1u);
  EXPECT_EQ(mean[0].shape, Shape{});
}

TEST(LossKernel, ReducedLossDoesNotDependOnTheThreadCount) {
  // Enough samples that the kernel splits them across tasks.
  const int64_t n = 4, c = 5, d = 40000;
  std::vector<float> x(static_cast<size_t>(n * c * d));
  std::vector<int64_t> y(static_cast<size_t>(n * d));
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i) * 0.37f) * 4.0f;
  for (size_t i = 0; i < y.size(); ++i) y[i] = static_cast<int64_t>((i * 7) % 6) - 1;  // -1 is ignored
  const std::vector<Tensor> inputs = {Tensor::from_vector(x, Shape{n, c, d}),
                                      Tensor::from_vector(y, Shape{n, d})};
  for (const char* op : kLossOps) {
    SCOPED_TRACE(op);
    const float parallel = run(op, {{"ignore_index", -1}}, inputs)[0].to_vector<float>()[0];
    float serial = 0.0f;
    // Inside a parallel region nested regions run on the caller alone.
    parallel_for(0, 2, 1, [&](int64_t b, int64_t) {
      if (b == 0) serial = run(op, {{"ignore_index", -1}}, inputs)[0].to_vector<float>()[0];
    });
    EXPECT_TRUE(std::isfinite(parallel));
    EXPECT_EQ(parallel, serial);
  }
}

}  // namespace
}  // namespace kiln::ops
