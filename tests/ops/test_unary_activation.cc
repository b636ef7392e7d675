// Bad input to the unary math and activation ops: each must throw a kiln::Error with the right
// code whose message names the op, the input or attribute, and the expected and actual values.
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

TEST(UnaryActivationErrors, FloatOnlyOpsRejectIntegers) {
  for (const char* op : {"Exp", "Log", "Sqrt", "Sin", "Erf", "Round", "Sigmoid", "Tanh", "Gelu", "Mish"}) {
    SCOPED_TRACE(op);
    expect_error(op, {}, {Tensor::zeros(Shape{2, 3}, DType::kInt32)}, ErrorCode::kTypeMismatch,
                 {op, "input 0 (", "expected one of {float32, float64, float16, bfloat16}", "got int32"});
  }
}

TEST(UnaryActivationErrors, SignedOpsRejectUnsignedAndBool) {
  expect_error("Neg", {}, {Tensor::zeros(Shape{3}, DType::kUInt8)}, ErrorCode::kTypeMismatch,
               {"Neg", "input 0 (X)", "int8", "got uint8"});
  expect_error("Relu", {}, {Tensor::zeros(Shape{3}, DType::kUInt8)}, ErrorCode::kTypeMismatch,
               {"Relu", "input 0 (X)", "got uint8"});
  expect_error("Abs", {}, {Tensor::zeros(Shape{3}, DType::kBool)}, ErrorCode::kTypeMismatch,
               {"Abs", "input 0 (X)", "got bool"});
}

TEST(UnaryActivationErrors, NotTakesOnlyBool) {
  expect_error("Not", {}, {floats(Shape{2})}, ErrorCode::kTypeMismatch,
               {"Not", "input 0 (X)", "expected one of {bool}", "got float32"});
}

TEST(UnaryActivationErrors, NanAndInfTestsTakeOnlyFloats) {
  expect_error("IsNaN", {}, {Tensor::zeros(Shape{2}, DType::kInt64)}, ErrorCode::kTypeMismatch,
               {"IsNaN", "input 0 (X)", "got int64"});
  expect_error("IsInf", {}, {Tensor::zeros(Shape{2}, DType::kBool)}, ErrorCode::kTypeMismatch,
               {"IsInf", "input 0 (X)", "got bool"});
}

TEST(UnaryActivationErrors, ShrinkHasNoBFloat16) {
  expect_error("Shrink", {}, {Tensor::zeros(Shape{2}, DType::kBFloat16)}, ErrorCode::kTypeMismatch,
               {"Shrink", "input 0 (input)", "got bfloat16"});
}

TEST(UnaryActivationErrors, InvalidAttributes) {
  expect_bad_attr("IsInf", {{"detect_negative", 2}},
                  {"IsInf", "detect_negative", "expected 0 or 1", "got 2"});
  expect_bad_attr("Gelu", {{"approximate", "fast"}},
                  {"Gelu", "approximate", "expected \"none\" or \"tanh\"", "got \"fast\""});
  expect_bad_attr("Celu", {{"alpha", 0.0}}, {"Celu", "alpha", "nonzero", "got 0"});
  expect_bad_attr("LeakyRelu", {{"slope", 0.5}}, {"LeakyRelu", "unknown attribute 'slope'", "alpha"});
  expect_bad_attr("Relu", {{"alpha", 0.5}}, {"Relu", "unknown attribute 'alpha'"});
}

TEST(UnaryActivationErrors, WrongNumberOfInputs) {
  expect_error("Relu", {}, {floats(Shape{2}), floats(Shape{2})}, ErrorCode::kInvalidArgument,
               {"Relu", "expected 1 inputs, got 2"});
  expect_error("PRelu", {}, {floats(Shape{2})}, ErrorCode::kInvalidArgument, {"PRelu", "got 1"});
  expect_error("Clip", {}, {floats(Shape{2}), floats(Shape{}), floats(Shape{}), floats(Shape{})},
               ErrorCode::kInvalidArgument, {"Clip", "expected 1 to 3 inputs, got 4"});
}

TEST(UnaryActivationErrors, PReluSlopeMustBroadcastToX) {
  expect_error("PRelu", {}, {floats(Shape{2, 3}), floats(Shape{4})}, ErrorCode::kShapeMismatch,
               {"PRelu", "input 1 (slope)", "broadcasts to input 0 (X)'s shape (2, 3)", "got shape (4,)"});
  // Broadcasting may not grow X: slope's extra leading axis or a 1 in X against slope's 3.
  expect_error("PRelu", {}, {floats(Shape{2, 3}), floats(Shape{1, 2, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (slope)", "got shape (1, 2, 3)"});
  expect_error("PRelu", {}, {floats(Shape{2, 1}), floats(Shape{3})}, ErrorCode::kShapeMismatch,
               {"input 1 (slope)", "(2, 1)", "got shape (3,)"});
  expect_error("PRelu", {}, {floats(Shape{2, 3}), Tensor::zeros(Shape{3}, DType::kFloat64)},
               ErrorCode::kTypeMismatch,
               {"PRelu", "input 1 (slope)", "expected dtype float32", "got float64"});
  expect_error("PRelu", {}, {Tensor::zeros(Shape{2}, DType::kInt8), Tensor::zeros(Shape{2}, DType::kInt8)},
               ErrorCode::kTypeMismatch, {"PRelu", "input 0 (X)", "got int8"});
}

TEST(UnaryActivationErrors, ClipBoundsMustBeScalarsOfXsDtype) {
  expect_error("Clip", {}, {floats(Shape{2, 3}), floats(Shape{2})}, ErrorCode::kShapeMismatch,
               {"Clip", "input 1 (min)", "expected a scalar", "got shape (2,)"});
  expect_error("Clip", {}, {floats(Shape{2, 3}), Tensor(), floats(Shape{1, 1})}, ErrorCode::kShapeMismatch,
               {"Clip", "input 2 (max)", "expected a scalar", "got shape (1, 1)"});
  expect_error("Clip", {}, {floats(Shape{2, 3}), Tensor::zeros(Shape{}, DType::kInt32)},
               ErrorCode::kTypeMismatch, {"Clip", "input 1 (min)", "expected dtype float32", "got int32"});
  expect_error("Clip", {}, {Tensor::zeros(Shape{2}, DType::kBool)}, ErrorCode::kTypeMismatch,
               {"Clip", "input 0 (input)", "got bool"});
}

TEST(UnaryActivationOps, AreElementwise) {
  std::istringstream ops(
      "Abs Neg Exp Log Sqrt Reciprocal Floor Ceil Round Sign Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh "
      "Acosh Atanh Erf Trunc RoundHalfAway Expm1 Log1p Log2 Log10 Cbrt Not IsNaN IsInf Sigmoid Tanh Relu "
      "LeakyRelu PRelu Elu Selu Celu Gelu Softplus Softsign HardSigmoid HardSwish ThresholdedRelu Mish "
      "Shrink "
      "Clip");
  for (std::string op; ops >> op;) EXPECT_TRUE(OpRegistry::global().get(op).is_elementwise()) << op;
}

TEST(UnaryActivationOps, ClipWithoutBoundsKeepsIntegerExtremes) {
  const OpSchema& clip = OpRegistry::global().get("Clip");
  const auto x = Tensor::from_vector<int64_t>(
      {std::numeric_limits<int64_t>::min(), -1, std::numeric_limits<int64_t>::max()}, Shape{3});
  const auto y = clip.run_reference(clip.bind({}), {x});
  EXPECT_EQ(y.at(0).to_vector<int64_t>(), x.to_vector<int64_t>());
}

TEST(UnaryActivationOps, ClipMinAboveMaxGivesMax) {
  const OpSchema& clip = OpRegistry::global().get("Clip");
  const auto x = Tensor::from_vector<int32_t>({-5, 0, 7}, Shape{3});
  const auto y = clip.run_reference(clip.bind({}), {x, Tensor::from_vector<int32_t>({4}, Shape{}),
                                                    Tensor::from_vector<int32_t>({2}, Shape{})});
  EXPECT_EQ(y.at(0).to_vector<int32_t>(), (std::vector<int32_t>{2, 2, 2}));
}

}  // namespace
}  // namespace kiln::ops
