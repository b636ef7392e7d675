// Every gradient rule against central finite differences in float64 (gradient_checker.h):
// random inputs, a random head gradient, J^T v compared element by element.
#include <gtest/gtest.h>

#include "autograd/gradient_checker.h"
#include "kiln/kiln.hpp"

namespace kiln {
namespace {

using testing::expect_gradient_matches;
using testing::GradientCheck;
using testing::int64_array;
using testing::int64_values;
using testing::random_array;

NDArray positive(const Shape& shape) {
  return random_array(shape, 0.5, 2.0);
}

// ---- Elementwise unary ------------------------------------------------------------------------

class UnaryGradient : public ::testing::TestWithParam<std::tuple<const char*, double, double>> {};

TEST_P(UnaryGradient, MatchesFiniteDifferences) {
  const auto [op, lo, hi] = GetParam();
  expect_gradient_matches({op, {random_array({2, 3}, lo, hi)}});
}

INSTANTIATE_TEST_SUITE_P(
    Ops, UnaryGradient,
    ::testing::Values(std::make_tuple("Neg", -1.0, 1.0), std::make_tuple("Abs", -1.0, 1.0),
                      std::make_tuple("Exp", -1.0, 1.0), std::make_tuple("Log", 0.5, 2.0),
                      std::make_tuple("Sqrt", 0.5, 2.0), std::make_tuple("Reciprocal", 0.5, 2.0),
                      std::make_tuple("Sin", -2.0, 2.0), std::make_tuple("Cos", -2.0, 2.0),
                      std::make_tuple("Tan", -1.0, 1.0), std::make_tuple("Asin", -0.8, 0.8),
                      std::make_tuple("Acos", -0.8, 0.8), std::make_tuple("Atan", -2.0, 2.0),
                      std::make_tuple("Sinh", -1.0, 1.0), std::make_tuple("Cosh", -1.0, 1.0),
                      std::make_tuple("Asinh", -2.0, 2.0), std::make_tuple("Acosh", 1.2, 3.0),
                      std::make_tuple("Atanh", -0.8, 0.8), std::make_tuple("Erf", -2.0, 2.0),
                      std::make_tuple("Floor", -2.0, 2.0), std::make_tuple("Sign", -2.0, 2.0),
                      std::make_tuple("Sigmoid", -3.0, 3.0), std::make_tuple("Tanh", -2.0, 2.0),
                      std::make_tuple("Relu", -1.0, 1.0), std::make_tuple("Softplus", -3.0, 3.0),
                      std::make_tuple("Softsign", -3.0, 3.0), std::make_tuple("Mish", -3.0, 3.0),
                      std::make_tuple("HardSwish", -5.0, 5.0), std::make_tuple("Identity", -1.0, 1.0),
                      std::make_tuple("Expm1", -1.0, 1.0), std::make_tuple("Log1p", -0.5, 2.0),
                      std::make_tuple("Log2", 0.5, 2.0), std::make_tuple("Log10", 0.5, 2.0),
                      std::make_tuple("Cbrt", 0.5, 2.0), std::make_tuple("Trunc", -2.0, 2.0)),
    [](const auto& test) { return std::string(std::get<0>(test.param)); });

TEST(Gradient, ActivationsWithAttributes) {
  expect_gradient_matches({"LeakyRelu", {random_array({3, 4})}, {{"alpha", 0.1}}});
  expect_gradient_matches({"Elu", {random_array({3, 4}, -2, 2)}, {{"alpha", 0.7}}});
  expect_gradient_matches({"Selu", {random_array({3, 4}, -2, 2)}});
  expect_gradient_matches({"Celu", {random_array({3, 4}, -2, 2)}, {{"alpha", 1.5}}});
  expect_gradient_matches({"Gelu", {random_array({3, 4}, -3, 3)}});
  expect_gradient_matches({"Gelu", {random_array({3, 4}, -3, 3)}, {{"approximate", "tanh"}}});
  expect_gradient_matches({"HardSigmoid", {random_array({3, 4}, -4, 4)}, {{"alpha", 0.3}, {"beta", 0.4}}});
  expect_gradient_matches({"ThresholdedRelu", {random_array({3, 4}, -2, 2)}, {{"alpha", 0.5}}});
  expect_gradient_matches({"Shrink", {random_array({3, 4}, -2, 2)}, {{"lambd", 0.5}, {"bias", 0.2}}});
}

TEST(Gradient, PRelu) {
  expect_gradient_matches({"PRelu", {random_array({2, 3, 4}), random_array({3, 1}, 0.1, 0.5)}});
}

TEST(Gradient, Clip) {
  expect_gradient_matches(
      {"Clip",
       {random_array({3, 4}, -2, 2), nd::scalar(-0.5, DType::kFloat64), nd::scalar(0.7, DType::kFloat64)}});
  expect_gradient_matches(
      {"Clip", {random_array({3, 4}, -2, 2), NDArray(), nd::scalar(0.3, DType::kFloat64)}});
}

// ---- Elementwise binary with broadcasting -----------------------------------------------------

class BinaryGradient : public ::testing::TestWithParam<const char*> {};

TEST_P(BinaryGradient, BroadcastsBothWays) {
  const char* op = GetParam();
  const bool positive_only = std::string(op) == "Pow" || std::string(op) == "Div";
  auto make = [&](const Shape& s) { return positive_only ? positive(s) : random_array(s); };
  expect_gradient_matches({op, {make({2, 3}), make({2, 3})}});
  expect_gradient_matches({op, {make({2, 1, 4}), make({3, 1})}});
  expect_gradient_matches({op, {make({4}), make({2, 3, 4})}});
}

INSTANTIATE_TEST_SUITE_P(Ops, BinaryGradient,
                         ::testing::Values("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"));

TEST(Gradient, VariadicOps) {
  for (const char* op : {"Max", "Min", "Sum", "Mean"})
    expect_gradient_matches({op, {random_array({2, 3}), random_array({3}), random_array({2, 1})}});
}

TEST(Gradient, Where) {
  const NDArray condition = nd::array<uint8_t>({1, 0, 0, 1, 1, 0}, {2, 3}).astype(DType::kBool);
  expect_gradient_matches({"Where", {condition, random_array({2, 3}), random_array({3})}});
}

TEST(Gradient, PowWithIntegerExponent) {
  expect_gradient_matches({"Pow", {random_array({2, 3}), int64_values({3})}});
}

// ---- Matrix products ----------------------------------------------------------------------------

TEST(Gradient, MatMul) {
  expect_gradient_matches({"MatMul", {random_array({3, 4}), random_array({4, 2})}});
  expect_gradient_matches({"MatMul", {random_array({2, 3, 4}), random_array({4, 5})}});
  expect_gradient_matches({"MatMul", {random_array({2, 1, 3, 4}), random_array({3, 4, 2})}});
  expect_gradient_matches({"MatMul", {random_array({4}), random_array({2, 4, 3})}});
  expect_gradient_matches({"MatMul", {random_array({2, 3, 4}), random_array({4})}});
  expect_gradient_matches({"MatMul", {random_array({4}), random_array({4})}});
}

TEST(Gradient, Gemm) {
  for (int trans_a = 0; trans_a < 2; ++trans_a)
    for (int trans_b = 0; trans_b < 2; ++trans_b) {
      const NDArray a = trans_a ? random_array({4, 3}) : random_array({3, 4});
      const NDArray b = trans_b ? random_array({2, 4}) : random_array({4, 2});
      expect_gradient_matches({"Gemm",
                               {a, b, random_array({2})},
                               {{"alpha", 0.7}, {"beta", 1.3}, {"transA", trans_a}, {"transB", trans_b}}});
    }
}

// ---- Reductions ---------------------------------------------------------------------------------

class ReduceGradient : public ::testing::TestWithParam<const char*> {};

TEST_P(ReduceGradient, OverAxesAndAll) {
  const char* op = GetParam();
  const auto input = [&] {
    return std::string(op) == "ReduceLogSum" ? positive({2, 3, 4}) : random_array({2, 3, 4});
  };
  expect_gradient_matches({op, {input(), int64_values({1})}, {{"keepdims", 0}}});
  expect_gradient_matches({op, {input(), int64_values({0, -1})}, {{"keepdims", 1}}});
  expect_gradient_matches({op, {input()}, {{"keepdims", 0}}});
}

INSTANTIATE_TEST_SUITE_P(Ops, ReduceGradient,
                         ::testing::Values("ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd",
                                           "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
                                           "ReduceSumSquare"));

// ---- Shape ops ----------------------------------------------------------------------------------

TEST(Gradient, ReshapeFamily) {
  expect_gradient_matches({"Reshape", {random_array({2, 3, 4}), int64_values({4, -1})}});
  expect_gradient_matches({"Flatten", {random_array({2, 3, 4})}, {{"axis", 2}}});
  expect_gradient_matches({"Squeeze", {random_array({2, 1, 3}), int64_values({1})}});
  expect_gradient_matches({"Unsqueeze", {random_array({2, 3}), int64_values({0, 3})}});
}

TEST(Gradient, Transpose) {
  expect_gradient_matches({"Transpose", {random_array({2, 3, 4})}, {{"perm", {1, 2, 0}}}});
  expect_gradient_matches({"Transpose", {random_array({2, 3})}});
}

TEST(Gradient, ConcatAndSplit) {
  expect_gradient_matches({"Concat", {random_array({2, 1, 3}), random_array({2, 4, 3})}, {{"axis", 1}}});
  expect_gradient_matches({"Split", {random_array({5, 2}), int64_values({2, 3})}, {{"axis", 0}}, {}, 2});
  expect_gradient_matches({"Split", {random_array({2, 6})}, {{"axis", 1}}, {}, 3});
}

TEST(Gradient, Slice) {
  const NDArray x = random_array({4, 5});
  expect_gradient_matches(
      {"Slice", {x, int64_values({1, 0}), int64_values({3, 5}), int64_values({0, 1}), int64_values({1, 2})}});
  expect_gradient_matches(
      {"Slice", {x, int64_values({-1}), int64_values({-100}), int64_values({1}), int64_values({-2})}});
}

TEST(Gradient, GatherFamily) {
  expect_gradient_matches(
      {"Gather", {random_array({4, 3}), int64_array({1, 3, 1, -4}, {2, 2})}, {{"axis", 0}}});
  expect_gradient_matches({"Gather", {random_array({2, 3, 2}), int64_values({2, 0, 2})}, {{"axis", 1}}});
  expect_gradient_matches(
      {"GatherElements", {random_array({3, 3}), int64_array({0, 2, 1, 1, 0, 0}, {2, 3})}, {{"axis", 0}}});
  // A repeated index tuple (0, 1) and a negative one: their gradients add up.
  expect_gradient_matches({"GatherND", {random_array({3, 4, 2}), int64_array({0, 1, 2, -1, 0, 1}, {3, 2})}});
  expect_gradient_matches({"GatherND", {random_array({3, 2}), int64_array({2, 0, 2}, {3, 1})}});
  // batch_dims > 0: tuples index within their own batch; repeats (row 0 twice in batch 0, row 1 twice
  // in batch 1) and negative indices add up there.
  expect_gradient_matches({"GatherND",
                           {random_array({2, 3, 4}), int64_array({0, 2, 0, -1, 1, 1}, {2, 3, 1})},
                           {{"batch_dims", 1}}});
  expect_gradient_matches({"GatherND",
                           {random_array({2, 3, 4}),
                            int64_array({0, 1, 2, 3, 0, 1, 1, -1, 2, 0, 2, 0, 0, 0, 1, 2}, {2, 2, 2, 2})},
                           {{"batch_dims", 1}}});
  expect_gradient_matches(
      {"GatherND", {random_array({2, 2, 3, 2}), int64_array({2, 0, 1, 2}, {2, 2, 1})}, {{"batch_dims", 2}}});
}

TEST(Gradient, ExpandAndTile) {
  expect_gradient_matches({"Expand", {random_array({3, 1}), int64_values({2, 3, 4})}});
  expect_gradient_matches({"Tile", {random_array({2, 3}), int64_values({2, 3})}});
}

TEST(Gradient, Pad) {
  expect_gradient_matches(
      {"Pad", {random_array({2, 3}), int64_values({1, 0, 2, 1}), nd::scalar(0.5, DType::kFloat64)}});
  expect_gradient_matches(
      {"Pad", {random_array({2, 3}), int64_values({1, 2}), NDArray(), int64_values({-1})}});
}

TEST(Gradient, Cast) {
  expect_gradient_matches(
      {"Cast", {random_array({2, 3})}, {{"to", static_cast<int64_t>(dtype_to_onnx(DType::kFloat64))}}});
}

// ---- Softmax ------------------------------------------------------------------------------------

TEST(Gradient, SoftmaxFamily) {
  for (int64_t axis : {1, -1}) {
    expect_gradient_matches({"Softmax", {random_array({2, 3, 4}, -2, 2)}, {{"axis", axis}}});
    expect_gradient_matches({"LogSoftmax", {random_array({2, 3, 4}, -2, 2)}, {{"axis", axis}}});
  }
}

// ---- Convolution and pooling --------------------------------------------------------------------

TEST(Gradient, Conv) {
  expect_gradient_matches(
      {"Conv", {random_array({2, 3, 5, 5}), random_array({4, 3, 3, 3}), random_array({4})}});
  expect_gradient_matches(
      {"Conv",
       {random_array({1, 4, 6, 5}), random_array({6, 2, 2, 3})},
       {{"group", 2}, {"strides", {2, 1}}, {"dilations", {1, 2}}, {"pads", {1, 0, 0, 2}}}});
  expect_gradient_matches(
      {"Conv", {random_array({2, 2, 7}), random_array({3, 2, 3})}, {{"auto_pad", "SAME_UPPER"}}});
}

TEST(Gradient, ConvTranspose) {
  expect_gradient_matches(
      {"ConvTranspose", {random_array({2, 3, 4, 4}), random_array({3, 2, 3, 3}), random_array({2})}});
  expect_gradient_matches({"ConvTranspose",
                           {random_array({1, 4, 3, 4}), random_array({4, 3, 2, 3})},
                           {{"group", 2},
                            {"strides", {2, 3}},
                            {"dilations", {1, 2}},
                            {"pads", {1, 0, 0, 2}},
                            {"output_padding", {1, 2}}}});
  expect_gradient_matches({"ConvTranspose",
                           {random_array({2, 2, 5}), random_array({2, 3, 3})},
                           {{"auto_pad", "SAME_UPPER"}, {"strides", {2}}}});
  expect_gradient_matches({"ConvTranspose",
                           {random_array({1, 2, 4}), random_array({2, 1, 3})},
                           {{"strides", {2}}, {"output_shape", {10}}}});
}

TEST(Gradient, Pooling) {
  expect_gradient_matches({"MaxPool", {random_array({2, 2, 5, 5})}, {{"kernel_shape", {2, 2}}}});
  expect_gradient_matches({"MaxPool",
                           {random_array({1, 2, 6, 5})},
                           {{"kernel_shape", {3, 2}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 0}}}});
  expect_gradient_matches({"AveragePool", {random_array({2, 2, 5, 5})}, {{"kernel_shape", {2, 2}}}});
  for (int include_pad = 0; include_pad < 2; ++include_pad)
    expect_gradient_matches({"AveragePool",
                             {random_array({1, 2, 5, 6})},
                             {{"kernel_shape", {3, 3}},
                              {"strides", {2, 2}},
                              {"pads", {1, 1, 1, 1}},
                              {"count_include_pad", include_pad}}});
  expect_gradient_matches({"GlobalAveragePool", {random_array({2, 3, 4, 2})}});
}

// ---- Normalization ------------------------------------------------------------------------------

TEST(Gradient, BatchNormalizationTraining) {
  expect_gradient_matches(
      {"BatchNormalization",
       {random_array({3, 2, 2, 2}), random_array({2}), random_array({2}), random_array({2}), positive({2})},
       {{"training_mode", 1}, {"epsilon", 1e-3}},
       {0, 1, 2},
       /*num_outputs=*/1,
       1e-6,
       1e-5});
}

TEST(Gradient, BatchNormalizationInference) {
  expect_gradient_matches(
      {"BatchNormalization",
       {random_array({3, 2, 2}), random_array({2}), random_array({2}), random_array({2}), positive({2})}});
}

// Mean and InvStdDev are stashed in float32 by the forward op, so the finite differences are
// taken with a larger step and compared with a looser tolerance.
TEST(Gradient, LayerNormalization) {
  expect_gradient_matches({"LayerNormalization",
                           {random_array({2, 3, 4}), random_array({3, 4}), random_array({4})},
                           {{"axis", 1}},
                           {},
                           -1,
                           1e-3,
                           1e-4});
}

TEST(Gradient, DropoutInTrainingUsesTheMask) {
  const NDArray training = nd::array<uint8_t>({1}, Shape{}).astype(DType::kBool);
  expect_gradient_matches(
      {"Dropout", {random_array({4, 5}), nd::scalar(0.3, DType::kFloat64), training}, {{"seed", 7}}, {0}, 2});
  expect_gradient_matches({"Dropout", {random_array({4, 5})}});
}

// ---- Losses -------------------------------------------------------------------------------------

TEST(Gradient, NegativeLogLikelihoodLoss) {
  const NDArray target = int64_array({0, 2, 1, 2, 0, 1}, {2, 3});
  for (const char* reduction : {"none", "sum", "mean"}) {
    expect_gradient_matches(
        {"NegativeLogLikelihoodLoss", {random_array({2, 3, 3}), target}, {{"reduction", reduction}}});
    expect_gradient_matches({"NegativeLogLikelihoodLoss",
                             {random_array({2, 3, 3}), target, positive({3})},
                             {{"reduction", reduction}, {"ignore_index", 1}},
                             {0}});
  }
}

TEST(Gradient, SoftmaxCrossEntropyLoss) {
  const NDArray labels = int64_values({2, 0, 1, 2});
  for (const char* reduction : {"none", "sum", "mean"}) {
    expect_gradient_matches(
        {"SoftmaxCrossEntropyLoss", {random_array({4, 3}), labels}, {{"reduction", reduction}}});
    expect_gradient_matches({"SoftmaxCrossEntropyLoss",
                             {random_array({4, 3}), labels, positive({3})},
                             {{"reduction", reduction}, {"ignore_index", 0}},
                             {0},
                             2});
  }
}

}  // namespace
}  // namespace kiln
