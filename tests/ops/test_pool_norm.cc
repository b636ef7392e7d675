// Bad input to the pooling, normalization, softmax and dropout ops: each must throw a kiln::Error
// with the right code whose message names the op, the input or attribute, and the expected and
// actual values. Plus behaviour the case files cannot express (unseeded Dropout).
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/random.hpp"
#include "op_test_util.h"

namespace kiln::ops {
namespace {

TEST(PoolErrors, WrongRank) {
  for (const char* op : {"MaxPool", "AveragePool", "LpPool"})
    expect_error(op, {{"kernel_shape", {2}}}, {floats({3, 4})}, ErrorCode::kShapeMismatch,
                 {op, "input 0 (X)", "rank >= 3", "got shape (3, 4)"});
  expect_error("GlobalAveragePool", {}, {floats({3, 4})}, ErrorCode::kShapeMismatch,
               {"GlobalAveragePool", "input 0 (X)", "rank >= 3", "got shape (3, 4)"});
  expect_error("MaxPool", {{"kernel_shape", {1, 1, 1, 1}}}, {floats({1, 1, 2, 2, 2, 2})},
               ErrorCode::kUnsupported, {"input 0 (X)", "at most 3 spatial axes", "(1, 1, 2, 2, 2, 2)"});
}

TEST(PoolErrors, KernelShapeLengthMismatch) {
  expect_error("MaxPool", {{"kernel_shape", {2, 2, 2}}}, {floats({1, 3, 5, 5})}, ErrorCode::kInvalidArgument,
               {"MaxPool", "attribute 'kernel_shape'", "expected 2 values",
                "input 0 (X) with shape (1, 3, 5, 5)", "got 3"});
  expect_error("AveragePool", {{"kernel_shape", {2}}, {"strides", {1, 1}}}, {floats({1, 3, 5})},
               ErrorCode::kInvalidArgument, {"attribute 'strides'", "expected 1 values", "got 2"});
  expect_error("LpPool", {{"kernel_shape", {2, 2}}, {"pads", {1, 1}}}, {floats({1, 3, 5, 5})},
               ErrorCode::kInvalidArgument, {"attribute 'pads'", "expected 4 values", "got 2"});
  expect_bad_attr("MaxPool", {}, {"required attribute 'kernel_shape'"});
}

TEST(PoolErrors, BadWindowAttributes) {
  expect_error("MaxPool", {{"kernel_shape", {0, 2}}}, {floats({1, 1, 4, 4})}, ErrorCode::kInvalidArgument,
               {"attribute 'kernel_shape'", "expected values >= 1", "got 0"});
  expect_error("MaxPool", {{"kernel_shape", {2}}, {"strides", {0}}}, {floats({1, 1, 4})},
               ErrorCode::kInvalidArgument, {"attribute 'strides'", ">= 1", "got 0"});
  expect_error("AveragePool", {{"kernel_shape", {2}}, {"pads", {-1, 0}}}, {floats({1, 1, 4})},
               ErrorCode::kInvalidArgument, {"attribute 'pads'", ">= 0", "got -1"});
  expect_error("AveragePool", {{"kernel_shape", {2}}, {"pads", {2, 0}}}, {floats({1, 1, 4})},
               ErrorCode::kInvalidArgument,
               {"attribute 'pads'", "smaller than its window extent 2", "got 2 and 0"});
  expect_error("MaxPool", {{"kernel_shape", {2}}, {"pads", {1, 1}}, {"auto_pad", "SAME_UPPER"}},
               {floats({1, 1, 4})}, ErrorCode::kInvalidArgument, {"'pads' must be zero", "SAME_UPPER"});
  expect_error("MaxPool", {{"kernel_shape", {3, 3}}}, {floats({1, 1, 2, 5})}, ErrorCode::kShapeMismatch,
               {"input 0 (X)", "axis 2 has 2 elements", "window extent 3", "(1, 1, 2, 5)"});
  expect_bad_attr("MaxPool", {{"kernel_shape", {2}}, {"auto_pad", "SAME"}},
                  {"attribute 'auto_pad'", "NOTSET, SAME_UPPER, SAME_LOWER, VALID", "got 'SAME'"});
  expect_bad_attr("AveragePool", {{"kernel_shape", {2}}, {"ceil_mode", 2}},
                  {"attribute 'ceil_mode'", "expected 0 or 1", "got 2"});
  expect_bad_attr("AveragePool", {{"kernel_shape", {2}}, {"count_include_pad", -1}},
                  {"attribute 'count_include_pad'", "got -1"});
  expect_bad_attr("MaxPool", {{"kernel_shape", {2}}, {"storage_order", 3}},
                  {"attribute 'storage_order'", "got 3"});
  expect_bad_attr("LpPool", {{"kernel_shape", {2}}, {"p", 0}}, {"attribute 'p'", ">= 1", "got 0"});
}

TEST(PoolErrors, WrongDTypeAndOutputs) {
  expect_error("AveragePool", {{"kernel_shape", {2}}}, {floats({1, 1, 4}, DType::kInt32)},
               ErrorCode::kTypeMismatch, {"input 0 (X)", "float32", "got int32"});
  expect_error("MaxPool", {{"kernel_shape", {2}}}, {floats({1, 1, 4}, DType::kBool)},
               ErrorCode::kTypeMismatch, {"input 0 (X)", "uint8", "got bool"});
  expect_error("GlobalMaxPool", {}, {floats({1, 1, 4}, DType::kInt8)}, ErrorCode::kTypeMismatch,
               {"input 0 (X)", "got int8"});
  expect_error("MaxPool", {{"kernel_shape", {2}}}, {floats({1, 1, 4})}, ErrorCode::kInvalidArgument,
               {"expected 1 to 2 outputs, got 3"}, 3);
  expect_error("AveragePool", {{"kernel_shape", {2}}}, {floats({1, 1, 4})}, ErrorCode::kInvalidArgument,
               {"expected 1 outputs, got 2"}, 2);
}

TEST(PoolShapes, OutputSizes) {
  // ceil_mode keeps a last, partial window unless it would start in the trailing padding.
  auto y = run("MaxPool", {{"kernel_shape", {2}}, {"strides", {2}}, {"ceil_mode", 1}}, {floats({1, 1, 5})});
  EXPECT_EQ(y[0].shape(), (Shape{1, 1, 3}));
  y = run("AveragePool", {{"kernel_shape", {3}}, {"strides", {2}}, {"auto_pad", "SAME_LOWER"}},
          {floats({2, 3, 7})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 3, 4}));
  y = run("MaxPool", {{"kernel_shape", {2, 2}}}, {floats({1, 2, 3, 3})}, 2);
  ASSERT_EQ(y.size(), 2u);
  EXPECT_EQ(y[1].dtype(), DType::kInt64);
  y = run("GlobalMaxPool", {}, {floats({2, 3, 4, 5, 6})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 3, 1, 1, 1}));
}

std::vector<Tensor> bn_inputs(int64_t c, const Shape& x = {2, 3, 4}) {
  return {floats(x), floats({c}), floats({c}), floats({c}), Tensor::full({c}, 1.0, DType::kFloat32)};
}

TEST(NormErrors, BatchNormalizationParameterShapes) {
  auto inputs = bn_inputs(3);
  inputs[1] = floats({4});
  expect_error("BatchNormalization", {}, inputs, ErrorCode::kShapeMismatch,
               {"BatchNormalization", "input 1 (scale)", "expected shape (3,)", "axis 1 of input 0 (X) has 3",
                "got shape (4,)"});
  inputs = bn_inputs(3);
  inputs[2] = floats({1, 3});
  expect_error("BatchNormalization", {}, inputs, ErrorCode::kShapeMismatch,
               {"input 2 (B)", "expected shape (3,)", "got shape (1, 3)"});
  inputs = bn_inputs(3);
  inputs[4] = floats({2});
  expect_error("BatchNormalization", {}, inputs, ErrorCode::kShapeMismatch,
               {"input 4 (input_var)", "expected shape (3,)", "got shape (2,)"});
  inputs = bn_inputs(3, {3});
  expect_error("BatchNormalization", {}, inputs, ErrorCode::kShapeMismatch,
               {"input 0 (X)", "rank >= 2", "got shape (3,)"});
}

TEST(NormErrors, BatchNormalizationAttributesAndDTypes) {
  expect_bad_attr("BatchNormalization", {{"epsilon", -1.0}}, {"attribute 'epsilon'", ">= 0", "got -1"});
  expect_bad_attr("BatchNormalization", {{"epsilon", std::numeric_limits<double>::quiet_NaN()}},
                  {"attribute 'epsilon'", "finite", "got nan"});
  expect_bad_attr("BatchNormalization", {{"momentum", 1.5}}, {"attribute 'momentum'", "[0, 1]", "got 1.5"});
  expect_bad_attr("BatchNormalization", {{"training_mode", 2}}, {"attribute 'training_mode'", "got 2"});
  auto inputs = bn_inputs(3);
  inputs[0] = floats({2, 3, 4}, DType::kInt32);
  expect_error("BatchNormalization", {}, inputs, ErrorCode::kTypeMismatch, {"input 0 (X)", "got int32"});
  inputs = bn_inputs(3);
  inputs[4] = floats({3}, DType::kFloat64);
  expect_error("BatchNormalization", {}, inputs, ErrorCode::kTypeMismatch,
               {"input 4 (input_var)", "expected dtype float32", "input 3 (input_mean)", "got float64"});
  expect_error("BatchNormalization", {}, bn_inputs(3), ErrorCode::kInvalidArgument,
               {"got 3", "only with training_mode=1"}, 3);
  const auto out = run("BatchNormalization", {{"training_mode", 1}}, bn_inputs(3), 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].shape(), (Shape{3}));
}

TEST(NormErrors, InstanceAndLayerNormalization) {
  expect_error("InstanceNormalization", {}, {floats({2, 3}), floats({3}), floats({3})},
               ErrorCode::kShapeMismatch,
               {"InstanceNormalization", "input 0 (input)", "rank >= 3", "got shape (2, 3)"});
  expect_error("InstanceNormalization", {}, {floats({2, 3, 4}), floats({3}), floats({5})},
               ErrorCode::kShapeMismatch, {"input 2 (B)", "expected shape (3,)", "got shape (5,)"});
  expect_error("InstanceNormalization", {}, {floats({2, 3, 4}), floats({3}, DType::kFloat64), floats({3})},
               ErrorCode::kTypeMismatch, {"input 1 (scale)", "expected dtype float32", "got float64"});
  expect_bad_attr("InstanceNormalization", {{"epsilon", -0.5}}, {"attribute 'epsilon'", "got -0.5"});

  expect_error("LayerNormalization", {{"axis", 3}}, {floats({2, 3, 4}), floats({4})}, ErrorCode::kOutOfRange,
               {"LayerNormalization", "attribute 'axis'", "axis 3", "rank 3"});
  expect_error("LayerNormalization", {{"axis", -4}}, {floats({2, 3, 4}), floats({4})}, ErrorCode::kOutOfRange,
               {"attribute 'axis'", "axis -4"});
  expect_error("LayerNormalization", {{"axis", -2}}, {floats({2, 3, 4}), floats({3})},
               ErrorCode::kShapeMismatch, {"input 1 (Scale)", "broadcasts to (3, 4)", "got shape (3,)"});
  expect_error("LayerNormalization", {}, {floats({2, 3, 4}), floats({4}), floats({2, 4})},
               ErrorCode::kShapeMismatch, {"input 2 (B)", "broadcasts to (4,)", "got shape (2, 4)"});
  expect_error("LayerNormalization", {}, {floats({2, 4}), floats({4}, DType::kFloat16)},
               ErrorCode::kTypeMismatch, {"input 1 (Scale)", "expected dtype float32", "got float16"});
  expect_bad_attr("LayerNormalization", {{"stash_type", 11}}, {"attribute 'stash_type'", "got 11"});
  const auto out = run("LayerNormalization", {{"axis", 1}}, {floats({2, 3, 4}), floats({3, 4})}, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[1].shape(), (Shape{2, 1, 1}));
  EXPECT_EQ(out[2].dtype(), DType::kFloat32);
}

TEST(NormErrors, LpAndMeanVarianceNormalization) {
  expect_bad_attr("LpNormalization", {{"p", 3}}, {"attribute 'p'", "expected 1 or 2", "got 3"});
  expect_error("LpNormalization", {{"axis", 2}}, {floats({2, 3})}, ErrorCode::kOutOfRange,
               {"LpNormalization", "attribute 'axis'", "axis 2"});
  expect_error("LpNormalization", {}, {floats({2, 3}, DType::kInt64)}, ErrorCode::kTypeMismatch,
               {"input 0 (input)", "got int64"});
  expect_error("MeanVarianceNormalization", {}, {floats({2, 3, 4})}, ErrorCode::kOutOfRange,
               {"MeanVarianceNormalization", "attribute 'axes'", "axis 3", "rank 3"});
  expect_error("MeanVarianceNormalization", {{"axes", {1, -2}}}, {floats({2, 3, 4})},
               ErrorCode::kInvalidArgument, {"attribute 'axes'", "repeated"});
}

TEST(SoftmaxErrors, AxisAndDType) {
  for (const char* op : {"Softmax", "LogSoftmax", "Hardmax"}) {
    expect_error(op, {{"axis", 2}}, {floats({2, 3})}, ErrorCode::kOutOfRange,
                 {op, "attribute 'axis'", "axis 2", "rank 2"});
    expect_error(op, {}, {floats({2, 3}, DType::kInt32)}, ErrorCode::kTypeMismatch,
                 {"input 0 (input)", "got int32"});
    expect_error(op, {}, {Tensor::scalar(1.0, DType::kFloat32)}, ErrorCode::kShapeMismatch,
                 {"input 0 (input)", "rank >= 1", "got shape ()"});
  }
}

TEST(DropoutErrors, RatioAndTrainingMode) {
  const Tensor x = floats({2, 3});
  const Tensor yes = Tensor::scalar(1, DType::kBool);
  expect_error("Dropout", {}, {x, Tensor::scalar(1.0, DType::kFloat32), yes}, ErrorCode::kInvalidArgument,
               {"Dropout", "input 1 (ratio)", "[0, 1)", "got 1"});
  expect_error("Dropout", {}, {x, Tensor::scalar(-0.1, DType::kFloat32)}, ErrorCode::kInvalidArgument,
               {"input 1 (ratio)", "got -0.1"});
  expect_error("Dropout", {}, {x, floats({2})}, ErrorCode::kShapeMismatch,
               {"input 1 (ratio)", "expected a scalar", "got shape (2,)"});
  expect_error("Dropout", {}, {x, Tensor::scalar(0.5, DType::kFloat32), Tensor::scalar(1, DType::kFloat32)},
               ErrorCode::kTypeMismatch, {"input 2 (training_mode)", "bool", "got float32"});
  expect_error("Dropout", {}, {floats({2}, DType::kInt32)}, ErrorCode::kTypeMismatch,
               {"input 0 (data)", "got int32"});
  expect_bad_attr("Dropout", {{"ratio", 0.2}}, {"attribute 'ratio'", "input 1 (ratio)"},
                  ErrorCode::kUnsupported);
}

TEST(Dropout, TrainingScalesKeptValuesAndSeedsRepeat) {
  const Tensor x = Tensor::full({256, 256}, 2.0, DType::kFloat32);
  const Tensor ratio = Tensor::scalar(0.25, DType::kFloat32);
  const Tensor yes = Tensor::scalar(1, DType::kBool);
  // Every kept value is scaled by 1 / (1 - ratio), and `ratio` of them are dropped: 65536 draws
  // put the dropped share within 4 standard deviations (0.0068) of 0.25.
  const auto out = run("Dropout", {}, {x, ratio, yes}, 2);
  const auto y = out[0].to_vector<float>();
  const auto mask = out[1].to_vector<bool>();
  int dropped = 0, dropped_pairs = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    EXPECT_FLOAT_EQ(y[i], mask[i] ? 2.0f / 0.75f : 0.0f);
    dropped += mask[i] ? 0 : 1;
    // Neighbours are independent: both dropped 1/16 of the time.
    if (i % 2 == 1) dropped_pairs += !mask[i] && !mask[i - 1] ? 1 : 0;
  }
  EXPECT_NEAR(dropped / 65536.0, 0.25, 0.0068);
  EXPECT_NEAR(dropped_pairs / 32768.0, 0.0625, 0.0054);
  // Seeded: the same seed gives the same mask, another seed another.
  const auto a = run("Dropout", {{"seed", 42}}, {x, ratio, yes}, 2)[1].to_vector<bool>();
  const auto b = run("Dropout", {{"seed", 42}}, {x, ratio, yes}, 2)[1].to_vector<bool>();
  const auto c = run("Dropout", {{"seed", 43}}, {x, ratio, yes}, 2)[1].to_vector<bool>();
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Unseeded: each call draws a new mask; random::seed replays the sequence.
  random::seed(7);
  const auto first = run("Dropout", {}, {x, ratio, yes}, 2)[1].to_vector<bool>();
  const auto second = run("Dropout", {}, {x, ratio, yes}, 2)[1].to_vector<bool>();
  random::seed(7);
  EXPECT_EQ(run("Dropout", {}, {x, ratio, yes}, 2)[1].to_vector<bool>(), first);
  EXPECT_NE(first, second);
}

}  // namespace
}  // namespace kiln::ops
