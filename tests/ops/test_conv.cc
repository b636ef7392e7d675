// Bad input to the matrix and convolution ops (MatMul, Gemm, Conv, ConvTranspose): each must
// throw a kiln::Error with the right code whose message names the op, the input or attribute,
// and the expected and actual values. Plus the shapes the case files cannot express.
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

TEST(ConvErrors, ChannelMismatch) {
  expect_error(
      "Conv", {}, {floats({1, 3, 5, 5}), floats({8, 4, 3, 3})}, ErrorCode::kShapeMismatch,
      {"Conv", "input 1 (W)", "expected shape (M, C/group, kH, kW) with C/group = 3", "got (8, 4, 3, 3)"});
  expect_error("Conv", {{"group", 2}}, {floats({1, 4, 5}), floats({2, 4, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (W)", "(M, C/group, kW) with C/group = 2", "got (2, 4, 3)"});
  expect_error("ConvTranspose", {}, {floats({1, 3, 5, 5}), floats({2, 3, 3, 3})}, ErrorCode::kShapeMismatch,
               {"ConvTranspose", "input 1 (W)", "(C, M/group, kH, kW) with C = 3", "got (2, 3, 3, 3)"});
}

TEST(ConvErrors, WrongRank) {
  expect_error("Conv", {}, {floats({1, 3, 5, 5}), floats({8, 3, 3})}, ErrorCode::kShapeMismatch,
               {"Conv", "input 1 (W)", "expected 4-D like input 0 (X)", "got shape (8, 3, 3)"});
  expect_error("Conv", {}, {floats({3, 5}), floats({8, 3})}, ErrorCode::kShapeMismatch,
               {"input 0 (X)", "1 to 3 spatial axes", "got shape (3, 5)"});
  expect_error("ConvTranspose", {}, {floats({1, 2}), floats({2, 2})}, ErrorCode::kShapeMismatch,
               {"ConvTranspose", "input 0 (X)", "got shape (1, 2)"});
  expect_error("Conv", {}, {floats({1, 1, 2, 2, 2, 2}), floats({1, 1, 1, 1, 1, 1})}, ErrorCode::kUnsupported,
               {"input 0 (X)", "more than 3 spatial axes"});
}

TEST(ConvErrors, BadGroup) {
  expect_bad_attr("Conv", {{"group", 0}}, {"Conv attribute 'group'", "expected a value >= 1", "got 0"});
  expect_bad_attr("ConvTranspose", {{"group", -2}}, {"ConvTranspose attribute 'group'", "got -2"});
  expect_error("Conv", {{"group", 2}}, {floats({1, 3, 5, 5}), floats({4, 1, 3, 3})},
               ErrorCode::kShapeMismatch,
               {"input 0 (X)", "divisible by group = 2", "got shape (1, 3, 5, 5)"});
  expect_error("Conv", {{"group", 2}}, {floats({1, 4, 5, 5}), floats({3, 2, 3, 3})},
               ErrorCode::kShapeMismatch,
               {"input 1 (W)", "filter count M divisible by group = 2", "got shape (3, 2, 3, 3)"});
}

TEST(ConvErrors, BadWindowAttributes) {
  expect_bad_attr("Conv", {{"pads", {1, -1, 0, 0}}},
                  {"Conv attribute 'pads'", "expected values >= 0", "got [1, -1, 0, 0]"});
  expect_bad_attr("Conv", {{"strides", {0, 1}}},
                  {"attribute 'strides'", "expected values >= 1", "got [0, 1]"});
  expect_bad_attr("ConvTranspose", {{"dilations", {1, 0}}}, {"attribute 'dilations'", "got [1, 0]"});
  expect_bad_attr("Conv", {{"auto_pad", "SAME"}}, {"attribute 'auto_pad'", "SAME_UPPER", "got 'SAME'"});
  expect_error("Conv", {{"strides", {1, 1, 1}}}, {floats({1, 1, 5, 5}), floats({1, 1, 3, 3})},
               ErrorCode::kInvalidArgument, {"attribute 'strides'", "expected 2 values", "got [1, 1, 1]"});
  expect_error("Conv", {{"pads", {1, 1}}}, {floats({1, 1, 5, 5}), floats({1, 1, 3, 3})},
               ErrorCode::kInvalidArgument, {"attribute 'pads'", "expected 4 values", "got [1, 1]"});
  expect_error("Conv", {{"kernel_shape", {2, 2}}}, {floats({1, 1, 5, 5}), floats({1, 1, 3, 3})},
               ErrorCode::kShapeMismatch,
               {"attribute 'kernel_shape'", "expected [3, 3]", "input 1 (W)", "got [2, 2]"});
  expect_error("ConvTranspose", {{"output_padding", {1}}}, {floats({1, 1, 5, 5}), floats({1, 1, 3, 3})},
               ErrorCode::kInvalidArgument, {"attribute 'output_padding'", "expected 2 values", "got [1]"});
}

TEST(ConvErrors, KernelLargerThanPaddedInput) {
  expect_error(
      "Conv", {{"pads", {1, 0, 1, 0}}}, {floats({1, 1, 3, 6}), floats({1, 1, 6, 3})},
      ErrorCode::kShapeMismatch,
      {"input 0 (X)", "spatial axis 2 has 3 elements (5 with pads)", "fewer than the 6 the kernel spans"});
  expect_error("Conv", {{"dilations", {1, 3}}, {"auto_pad", "VALID"}},
               {floats({1, 1, 6, 6}), floats({1, 1, 3, 3})}, ErrorCode::kShapeMismatch,
               {"spatial axis 3 has 6 elements (6 with pads)", "fewer than the 7"});
  expect_error("ConvTranspose", {{"pads", {3, 3}}}, {floats({1, 1, 2}), floats({1, 1, 2})},
               ErrorCode::kShapeMismatch,
               {"input 0 (X)", "spatial axis 2 of 2 elements gives an output of -3"});
}

TEST(ConvErrors, BadBiasAndDtype) {
  expect_error("Conv", {}, {floats({1, 2, 4}), floats({3, 2, 2}), floats({2})}, ErrorCode::kShapeMismatch,
               {"input 2 (B)", "expected shape (3,)", "got (2,)"});
  expect_error("ConvTranspose", {{"group", 2}}, {floats({1, 2, 4}), floats({2, 3, 2}), floats({3})},
               ErrorCode::kShapeMismatch, {"input 2 (B)", "expected shape (6,)", "got (3,)"});
  expect_error("Conv", {},
               {Tensor::zeros(Shape{1, 2, 4}, DType::kInt32), Tensor::zeros(Shape{3, 2, 2}, DType::kInt32)},
               ErrorCode::kTypeMismatch, {"input 0 (X)", "float32", "got int32"});
  expect_error("Conv", {}, {floats({1, 2, 4}), Tensor::zeros(Shape{3, 2, 2}, DType::kFloat64)},
               ErrorCode::kTypeMismatch, {"input 1 (W)", "expected dtype float32", "got float64"});
}

TEST(GemmErrors, BadShapes) {
  expect_error("Gemm", {}, {floats({2, 3}), floats({4, 5})}, ErrorCode::kShapeMismatch,
               {"Gemm", "input 1 (B)", "expected K = 3", "transB = 0", "got shape (4, 5)"});
  expect_error("Gemm", {{"transB", 1}}, {floats({2, 3}), floats({5, 4})}, ErrorCode::kShapeMismatch,
               {"input 1 (B)", "expected K = 3", "along axis 1 (transB = 1)", "got shape (5, 4)"});
  expect_error("Gemm", {}, {floats({2, 3, 1}), floats({3, 4})}, ErrorCode::kShapeMismatch,
               {"input 0 (A)", "expected 2-D", "got shape (2, 3, 1)"});
  expect_error("Gemm", {}, {floats({2, 3}), floats({3, 4}), floats({3, 4})}, ErrorCode::kShapeMismatch,
               {"input 2 (C)", "broadcasts to (M, N) = (2, 4)", "got (3, 4)"});
  expect_error("Gemm", {}, {floats({2, 3}), floats({3, 4}), floats({1, 2, 4})}, ErrorCode::kShapeMismatch,
               {"input 2 (C)", "got (1, 2, 4)"});
  expect_error("Gemm", {},
               {Tensor::zeros(Shape{2, 3}, DType::kInt8), Tensor::zeros(Shape{3, 4}, DType::kInt8)},
               ErrorCode::kTypeMismatch, {"input 0 (A)", "got int8"});
  expect_bad_attr("Gemm", {{"transA", 2}}, {"Gemm attribute 'transA'", "expected 0 or 1", "got 2"});
}

TEST(MatMulErrors, BadShapes) {
  expect_error("MatMul", {}, {floats({2, 3}), floats({4, 5})}, ErrorCode::kShapeMismatch,
               {"MatMul", "input 1 (B)", "expected 3 rows", "got shape (4, 5)"});
  expect_error("MatMul", {}, {Tensor::scalar(1.0, DType::kFloat32), floats({3})}, ErrorCode::kShapeMismatch,
               {"input 0 (A)", "expected rank >= 1, got a scalar"});
  expect_error("MatMul", {}, {floats({2, 2, 3}), floats({3, 3, 4})}, ErrorCode::kShapeMismatch, {"batch"});
}

// numpy matmul of two vectors is a scalar (shape ()); the case files cannot hold 0-D arrays.
TEST(MatMulShapes, VectorTimesVectorIsAScalar) {
  const auto y =
      run("MatMul", {},
          {Tensor::from_vector<float>({1, 2, 3}, Shape{3}), Tensor::from_vector<float>({4, 5, 6}, Shape{3})});
  ASSERT_EQ(y[0].shape(), Shape{});
  EXPECT_EQ(y[0].to_vector<float>(), std::vector<float>{32});
}

TEST(ConvShapes, UnknownDimsStayUnknown) {
  const OpSchema& conv = OpRegistry::global().get("Conv");
  const auto out = conv.infer_types(
      conv.bind({{"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}}),
      {TensorInfo{DType::kFloat32, Shape{-1, 3, 9, -1}}, TensorInfo{DType::kFloat32, Shape{8, 3, 3, 3}}}, {});
  EXPECT_EQ(out[0].shape, (Shape{-1, 8, 5, -1}));
}

}  // namespace
}  // namespace kiln::ops
