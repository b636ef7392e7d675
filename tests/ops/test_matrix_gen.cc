// Bad input to Trilu, EyeLike and OneHot: each must throw a kiln::Error with the right code whose
// message names the op, the input or attribute, and the expected and actual values.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor int64_scalar(int64_t value) {
  return Tensor::from_vector<int64_t>({value}, Shape{});
}

TEST(MatrixGenErrors, TriluNeedsMatricesAndAScalarInt64K) {
  expect_error("Trilu", {}, {floats(Shape{4})}, ErrorCode::kShapeMismatch,
               {"Trilu", "input 0 (input)", "expected rank >= 2", "got shape (4,)"});
  expect_error("Trilu", {}, {floats(Shape{3, 3}), Tensor::from_vector<int32_t>({1}, Shape{})},
               ErrorCode::kTypeMismatch, {"Trilu", "input 1 (k)", "expected one of {int64}", "got int32"});
  expect_error("Trilu", {}, {floats(Shape{3, 3}), Tensor::from_vector<int64_t>({1, 2}, Shape{2})},
               ErrorCode::kShapeMismatch, {"Trilu", "input 1 (k)", "expected a scalar", "got shape (2,)"});
  expect_bad_attr("Trilu", {{"upper", 2}}, {"Trilu", "upper", "expected 0 or 1", "got 2"});
}

TEST(MatrixGenErrors, EyeLikeNeedsAMatrixAndAKilnDtype) {
  expect_error("EyeLike", {}, {floats(Shape{2, 3, 4})}, ErrorCode::kShapeMismatch,
               {"EyeLike", "input 0 (input)", "(2, 3, 4)"});
  // ONNX STRING (8) holds text, FLOAT8E4M3FN (17) is a type Kiln only stores: neither is computed in.
  expect_bad_attr("EyeLike", {{"dtype", 8}}, {"EyeLike", "dtype"}, ErrorCode::kUnsupported);
  expect_bad_attr("EyeLike", {{"dtype", 17}}, {"EyeLike", "dtype"}, ErrorCode::kUnsupported);
}

TEST(MatrixGenErrors, OneHotInputs) {
  const Tensor indices = Tensor::from_vector<int64_t>({0, 1, 2}, Shape{3});
  const Tensor values = Tensor::from_vector<float>({0, 1}, Shape{2});
  expect_error("OneHot", {}, {Tensor::zeros(Shape{3}, DType::kBool), int64_scalar(3), values},
               ErrorCode::kTypeMismatch, {"OneHot", "input 0 (indices)", "got bool"});
  expect_error("OneHot", {}, {indices, Tensor::zeros(Shape{}, DType::kBFloat16), values},
               ErrorCode::kTypeMismatch, {"OneHot", "input 1 (depth)", "got bfloat16"});
  expect_error("OneHot", {}, {indices, Tensor::from_vector<int64_t>({3, 4}, Shape{2}), values},
               ErrorCode::kShapeMismatch,
               {"OneHot", "input 1 (depth)", "expected a scalar", "got shape (2,)"});
  expect_error("OneHot", {}, {indices, int64_scalar(-2), values}, ErrorCode::kInvalidArgument,
               {"OneHot", "input 1 (depth)", "expected a depth >= 0, got -2"});
  expect_error(
      "OneHot", {}, {indices, int64_scalar(3), Tensor::from_vector<float>({0, 1, 2}, Shape{3})},
      ErrorCode::kShapeMismatch,
      {"OneHot", "input 2 (values)", "expected shape (2,) holding [off_value, on_value]", "got shape (3,)"});
  expect_error("OneHot", {}, {indices, int64_scalar(3), Tensor::from_vector<float>({0, 1}, Shape{1, 2})},
               ErrorCode::kShapeMismatch, {"input 2 (values)", "got shape (1, 2)"});
}

TEST(MatrixGenErrors, OneHotAxisOutOfRange) {
  const Tensor indices = Tensor::from_vector<int64_t>({0, 1, 2, 0, 1, 2}, Shape{2, 3});
  const Tensor values = Tensor::from_vector<float>({0, 1}, Shape{2});
  for (int64_t axis : {3, -4}) {
    expect_error("OneHot", {{"axis", axis}}, {indices, int64_scalar(3), values}, ErrorCode::kOutOfRange,
                 {"OneHot", "attribute 'axis'", "expected -3 <= axis <= 2", "input 0 (indices) of rank 2",
                  "got " + std::to_string(axis)});
  }
}

TEST(MatrixGenInference, OneHotDepthDecidesTheShape) {
  const OpSchema& schema = OpRegistry::global().get("OneHot");
  const Tensor depth = Tensor::from_vector<float>({6.9f}, Shape{1});
  const auto out =
      schema.infer_types(schema.bind({{"axis", 0}}),
                         {TensorInfo{DType::kInt32, Shape{2, -1}}, TensorInfo{DType::kFloat32, Shape{1}},
                          TensorInfo{DType::kBFloat16, Shape{2}}},
                         {nullptr, &depth, nullptr});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].shape, (Shape{6, 2, -1}));
  EXPECT_EQ(out[0].dtype, DType::kBFloat16);
  // Without depth's values the shape is not known.
  try {
    schema.infer_types(schema.bind({}),
                       {TensorInfo{DType::kInt32, Shape{2}}, TensorInfo{DType::kInt64, Shape{}},
                        TensorInfo{DType::kFloat32, Shape{2}}},
                       {nullptr, nullptr, nullptr});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    expect_message(e, ErrorCode::kUnsupported, {"OneHot", "input 1 (depth)", "not known"});
  }
}

}  // namespace
}  // namespace kiln::ops
