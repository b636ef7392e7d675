// Bad input to the quantization family (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv): each must throw a kiln::Error with the
// right code whose message names the op, the input or attribute, and the expected and actual
// values. Plus inference over unknown dimensions, which the case files cannot express.
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor zeros(const Shape& shape, DType dtype) {
  return Tensor::zeros(shape, dtype);
}
Tensor f32(const Shape& shape) {
  return zeros(shape, DType::kFloat32);
}
Tensor u8(const Shape& shape) {
  return zeros(shape, DType::kUInt8);
}
Tensor i8(const Shape& shape) {
  return zeros(shape, DType::kInt8);
}

TEST(QuantizeErrors, Dtypes) {
  expect_error("QuantizeLinear", {}, {zeros({2, 3}, DType::kFloat64), f32({})}, ErrorCode::kTypeMismatch,
               {"QuantizeLinear", "input 0 (x)", "expected one of {float32, float16, bfloat16, int32}",
                "got float64"});
  expect_error("QuantizeLinear", {}, {f32({2, 3}), zeros({}, DType::kInt64)}, ErrorCode::kTypeMismatch,
               {"input 1 (y_scale)", "got int64"});
  expect_error("QuantizeLinear", {}, {f32({2, 3}), f32({}), zeros({}, DType::kInt32)},
               ErrorCode::kTypeMismatch,
               {"input 2 (y_zero_point)", "expected one of {int8, uint8, int16, uint16, float8_e4m3fn",
                "int4", "got int32"});
  expect_error(
      "QuantizeLinear", {{"output_dtype", 3}}, {f32({2, 3}), f32({}), u8({})}, ErrorCode::kTypeMismatch,
      {"input 2 (y_zero_point)", "expected the dtype attribute 'output_dtype' names, int8", "got uint8"});
  expect_error(
      "DequantizeLinear", {}, {f32({2, 3}), f32({})}, ErrorCode::kTypeMismatch,
      {"DequantizeLinear", "input 0 (x)", "expected one of {int8, uint8, int16, uint16, int32, float8_e4m3fn",
       "uint2}", "got float32"});
  expect_error("DequantizeLinear", {}, {u8({2, 3}), zeros({}, DType::kFloat64)}, ErrorCode::kTypeMismatch,
               {"input 1 (x_scale)", "expected one of {float32, float16, bfloat16}", "got float64"});
  expect_error("DequantizeLinear", {}, {u8({2, 3}), f32({}), i8({})}, ErrorCode::kTypeMismatch,
               {"input 2 (x_zero_point)", "expected dtype uint8 (the dtype of input 0 (x))", "got int8"});
  expect_error("DynamicQuantizeLinear", {}, {zeros({4}, DType::kFloat16)}, ErrorCode::kTypeMismatch,
               {"DynamicQuantizeLinear", "input 0 (x)", "expected one of {float32}", "got float16"});
}

TEST(QuantizeErrors, TypeAttributes) {
  // Quantized types Kiln has no tensors for (FLOAT8E8M0 scales, the 6-bit floats) are unsupported;
  // types that are not quantized are invalid.
  expect_bad_attr("QuantizeLinear", {{"output_dtype", 27}},
                  {"QuantizeLinear attribute 'output_dtype'", "expected a quantized type", "uint8 (2)",
                   "int4 (22)", "got 27"},
                  ErrorCode::kUnsupported);
  expect_bad_attr("QuantizeLinear", {{"output_dtype", 24}}, {"got 24"}, ErrorCode::kUnsupported);
  expect_bad_attr("QuantizeLinear", {{"output_dtype", 1}},
                  {"attribute 'output_dtype'", "expected a quantized type", "got 1"});
  expect_bad_attr("QuantizeLinear", {{"precision", 6}},
                  {"attribute 'precision'",
                   "expected one of float32 (1), float16 (10), float64 (11), bfloat16 (16)", "got 6"});
  expect_bad_attr(
      "DequantizeLinear", {{"output_dtype", 11}},
      {"DequantizeLinear attribute 'output_dtype'", "float32 (1), float16 (10), bfloat16 (16)", "got 11"});
  expect_bad_attr("QuantizeLinear", {{"block_size", -2}},
                  {"attribute 'block_size'", "expected a value >= 0", "got -2"});
}

TEST(QuantizeErrors, PerAxisScales) {
  expect_error("QuantizeLinear", {{"axis", 2}}, {f32({2, 3}), f32({3})}, ErrorCode::kOutOfRange,
               {"attribute 'axis'", "axis 2 is out of range", "-2 <= axis < 2"});
  expect_error(
      "QuantizeLinear", {}, {f32({2, 3}), f32({2})}, ErrorCode::kShapeMismatch,
      {"input 1 (y_scale)", "expected shape (3,)", "axis 1 of input 0 (x) of shape (2, 3)", "got (2,)"});
  expect_error("DequantizeLinear", {{"axis", -2}}, {u8({2, 3}), f32({3})}, ErrorCode::kShapeMismatch,
               {"input 1 (x_scale)", "expected shape (2,)", "got (3,)"});
  expect_error("QuantizeLinear", {}, {f32({2, 3}), f32({2, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (y_scale)", "unless block_size is set", "got shape (2, 3)"});
  expect_error("QuantizeLinear", {}, {f32({2, 3}), f32({3}), u8({2})}, ErrorCode::kShapeMismatch,
               {"input 2 (y_zero_point)", "expected the shape of input 1 (y_scale), (3,)", "got (2,)"});
}

TEST(QuantizeErrors, BlockedScales) {
  expect_error("QuantizeLinear", {{"block_size", 2}}, {f32({3, 4}), f32({3, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (y_scale)", "expected shape (3, 2)", "in blocks of block_size = 2", "got (3, 3)"});
  expect_error("DequantizeLinear", {{"block_size", 3}, {"axis", 0}}, {i8({7, 2}), f32({2, 2})},
               ErrorCode::kShapeMismatch, {"input 1 (x_scale)", "expected shape (3, 2)", "got (2, 2)"});
  expect_error("QuantizeLinear", {{"block_size", 2}}, {f32({3, 4}), f32({2})}, ErrorCode::kShapeMismatch,
               {"expected shape (3, 2)", "got (2,)"});
}

TEST(QuantizeInference, UnknownDimensions) {
  const OpSchema& q = OpRegistry::global().get("QuantizeLinear");
  const auto per_axis =
      q.infer_types(q.bind({}),
                    {TensorInfo{DType::kFloat32, Shape{-1, 3}}, TensorInfo{DType::kFloat32, Shape{3}},
                     TensorInfo{DType::kInt8, Shape{-1}}},
                    {});
  EXPECT_EQ(per_axis[0].dtype, DType::kInt8);
  EXPECT_EQ(per_axis[0].shape, (Shape{-1, 3}));
  const auto blocked = q.infer_types(
      q.bind({{"block_size", 4}, {"axis", 0}}),
      {TensorInfo{DType::kFloat16, Shape{-1, 5}}, TensorInfo{DType::kFloat16, Shape{3, 5}}, std::nullopt},
      {});
  EXPECT_EQ(blocked[0].dtype, DType::kUInt8);
  const OpSchema& dq = OpRegistry::global().get("DequantizeLinear");
  const auto out =
      dq.infer_types(dq.bind({{"output_dtype", 16}}),
                     {TensorInfo{DType::kInt32, Shape{2, -1}}, TensorInfo{DType::kFloat32, Shape{}}}, {});
  EXPECT_EQ(out[0].dtype, DType::kBFloat16);
}

TEST(QuantizedMatMulErrors, OperandsAndZeroPoints) {
  expect_error("MatMulInteger", {}, {f32({3, 4}), u8({4, 5})}, ErrorCode::kTypeMismatch,
               {"MatMulInteger", "input 0 (A)", "expected one of {int8, uint8}", "got float32"});
  expect_error(
      "MatMulInteger", {}, {u8({3, 4}), u8({3, 5})}, ErrorCode::kShapeMismatch,
      {"input 1 (B)", "expected 4 rows to match the columns of input 0 (A) (3, 4)", "got shape (3, 5)"});
  expect_error("MatMulInteger", {}, {u8({}), u8({3})}, ErrorCode::kShapeMismatch,
               {"input 0 (A)", "expected rank >= 1, got a scalar"});
  expect_error("MatMulInteger", {}, {u8({3, 4}), u8({4, 5}), i8({})}, ErrorCode::kTypeMismatch,
               {"input 2 (a_zero_point)", "expected dtype uint8 (the dtype of input 0 (A))", "got int8"});
  expect_error("MatMulInteger", {}, {u8({3, 4}), u8({4, 5}), u8({4})}, ErrorCode::kShapeMismatch,
               {"input 2 (a_zero_point)", "one value per row of input 0 (A) of shape (3, 4)", "(..., M, 1)",
                "got (4,)"});
  expect_error(
      "MatMulInteger", {}, {u8({3, 4}), u8({4, 5}), u8({}), u8({4, 1})}, ErrorCode::kShapeMismatch,
      {"input 3 (b_zero_point)", "one value per column of input 1 (B)", "(..., 1, N)", "got (4, 1)"});
  expect_error("MatMulInteger", {}, {u8({2, 3, 4}), u8({4, 5}), u8({3, 3, 1})}, ErrorCode::kShapeMismatch,
               {"input 2 (a_zero_point)", "got (3, 3, 1)"});
}

TEST(QuantizedMatMulErrors, QLinearScales) {
  const auto qlinear = [](Tensor a_scale, Tensor b_scale, Tensor y_scale, Tensor y_zp) {
    return std::vector<Tensor>{u8({2, 4}), a_scale, u8({}), u8({4, 3}), b_scale, u8({}), y_scale, y_zp};
  };
  expect_error("QLinearMatMul", {}, qlinear(zeros({}, DType::kFloat64), f32({}), f32({}), u8({})),
               ErrorCode::kTypeMismatch, {"QLinearMatMul", "input 1 (a_scale)", "got float64"});
  expect_error("QLinearMatMul", {}, qlinear(f32({}), zeros({}, DType::kFloat16), f32({}), u8({})),
               ErrorCode::kTypeMismatch, {"input 4 (b_scale)", "expected dtype float32", "got float16"});
  expect_error("QLinearMatMul", {}, qlinear(f32({}), f32({}), f32({3}), u8({3})), ErrorCode::kShapeMismatch,
               {"input 6 (y_scale)", "expected a scalar (per tensor)", "got shape (3,)"});
  expect_error("QLinearMatMul", {}, qlinear(f32({}), f32({}), f32({}), zeros({}, DType::kInt32)),
               ErrorCode::kTypeMismatch, {"input 7 (y_zero_point)", "got int32"});
  expect_error("QLinearMatMul", {}, qlinear(f32({4}), f32({}), f32({}), u8({})), ErrorCode::kShapeMismatch,
               {"input 1 (a_scale)", "one value per row", "got (4,)"});
}

TEST(QuantizedConvErrors, ShapesAndZeroPoints) {
  expect_error("ConvInteger", {}, {f32({1, 2, 5, 5}), u8({3, 2, 3, 3})}, ErrorCode::kTypeMismatch,
               {"ConvInteger", "input 0 (x)", "expected one of {int8, uint8}", "got float32"});
  expect_error("ConvInteger", {}, {u8({1, 3}), u8({3, 3})}, ErrorCode::kShapeMismatch,
               {"input 0 (x)", "1 to 3 spatial axes", "got shape (1, 3)"});
  expect_error("ConvInteger", {}, {u8({1, 3, 5, 5}), u8({2, 4, 3, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (w)", "expected shape (M, C/group, kH, kW) with C/group = 3", "got (2, 4, 3, 3)"});
  expect_error("ConvInteger", {}, {u8({1, 3, 5, 5}), u8({2, 3, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (w)", "expected 4-D like input 0 (x)", "got shape (2, 3, 3)"});
  expect_error("ConvInteger", {}, {u8({1, 3, 5, 5}), u8({2, 3, 3, 3}), u8({3})}, ErrorCode::kShapeMismatch,
               {"input 2 (x_zero_point)", "expected a scalar (per tensor)", "got shape (3,)"});
  expect_error("ConvInteger", {}, {u8({1, 3, 5, 5}), u8({2, 3, 3, 3}), u8({}), u8({3})},
               ErrorCode::kShapeMismatch,
               {"input 3 (w_zero_point)", "expected a scalar (per tensor) or shape (2,)", "got (3,)"});
  expect_error("ConvInteger", {{"pads", {0, 0, 0, 0}}}, {u8({1, 3, 2, 5}), u8({2, 3, 3, 3})},
               ErrorCode::kShapeMismatch,
               {"input 0 (x)", "spatial axis 2 has 2 elements", "fewer than the 3"});
  expect_error("ConvInteger", {{"kernel_shape", {2, 2}}}, {u8({1, 3, 5, 5}), u8({2, 3, 3, 3})},
               ErrorCode::kShapeMismatch, {"attribute 'kernel_shape'", "expected [3, 3]", "got [2, 2]"});
  expect_bad_attr("ConvInteger", {{"group", 0}}, {"ConvInteger attribute 'group'", "got 0"});
  expect_bad_attr("QLinearConv", {{"strides", {1, 0}}}, {"QLinearConv attribute 'strides'", "got [1, 0]"});
}

TEST(QuantizedConvErrors, QLinearParameters) {
  const auto qlinear = [](Tensor x_scale, Tensor w_scale, Tensor y_zp, std::optional<Tensor> bias) {
    std::vector<Tensor> in{u8({1, 2, 4, 4}), x_scale, u8({}),  i8({3, 2, 3, 3}),
                           w_scale,          i8({}),  f32({}), y_zp};
    if (bias) in.push_back(*bias);
    return in;
  };
  expect_error("QLinearConv", {}, qlinear(zeros({}, DType::kFloat16), f32({}), u8({}), std::nullopt),
               ErrorCode::kTypeMismatch,
               {"QLinearConv", "input 1 (x_scale)", "expected one of {float32}", "got float16"});
  expect_error("QLinearConv", {}, qlinear(f32({}), f32({2}), u8({}), std::nullopt), ErrorCode::kShapeMismatch,
               {"input 4 (w_scale)", "expected a scalar (per tensor) or shape (3,)", "got (2,)"});
  expect_error("QLinearConv", {}, qlinear(f32({}), f32({3}), u8({3}), std::nullopt),
               ErrorCode::kShapeMismatch,
               {"input 7 (y_zero_point)", "expected a scalar (per tensor)", "got shape (3,)"});
  expect_error("QLinearConv", {}, qlinear(f32({}), f32({}), u8({}), f32({3})), ErrorCode::kTypeMismatch,
               {"input 8 (B)", "expected one of {int32}", "got float32"});
  expect_error("QLinearConv", {}, qlinear(f32({}), f32({}), u8({}), zeros({2}, DType::kInt32)),
               ErrorCode::kShapeMismatch, {"input 8 (B)", "expected shape (3,)", "got (2,)"});
}

}  // namespace
}  // namespace kiln::ops
