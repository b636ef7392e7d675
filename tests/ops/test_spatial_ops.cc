// Bad input to the spatial and stash-type normalization ops (GroupNormalization, RMSNormalization,
// GridSample, AffineGrid, Col2Im, CenterCropPad, RoiAlign and the window functions): each must throw
// a kiln::Error with the right code whose message names the op, the input or attribute, and the
// expected and actual values. Plus a few results the case files state less directly.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor ints(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>(v, Shape{n});
}

Tensor int64_scalar(int64_t v) {
  return Tensor::from_vector<int64_t>({v}, Shape{});
}

// ---- GroupNormalization and RMSNormalization -------------------------------------------------

TEST(GroupNormalizationErrors, BadShapes) {
  const AttrMap groups{{"num_groups", 2}};
  expect_error("GroupNormalization", groups, {floats({4}), floats({4}), floats({4})},
               ErrorCode::kShapeMismatch,
               {"GroupNormalization", "input 0 (X)", "rank >= 2", "got shape (4,)"});
  expect_error("GroupNormalization", {{"num_groups", 3}}, {floats({2, 4, 5}), floats({4}), floats({4})},
               ErrorCode::kShapeMismatch,
               {"attribute 'num_groups'", "3 does not divide the 4 channels", "shape (2, 4, 5)"});
  expect_error("GroupNormalization", groups, {floats({2, 4, 5}), floats({2}), floats({4})},
               ErrorCode::kShapeMismatch, {"input 1 (scale)", "expected shape (4,)", "got shape (2,)"});
  expect_error("GroupNormalization", groups, {floats({2, 4, 5}), floats({4}), floats({1, 4})},
               ErrorCode::kShapeMismatch, {"input 2 (bias)", "expected shape (4,)", "got shape (1, 4)"});
}

TEST(GroupNormalizationErrors, BadDtypes) {
  const AttrMap groups{{"num_groups", 2}};
  expect_error("GroupNormalization", groups, {Tensor::zeros({2, 4}, DType::kInt32), floats({4}), floats({4})},
               ErrorCode::kTypeMismatch,
               {"input 0 (X)", "expected one of {float32, float64, float16, bfloat16}", "got int32"});
  expect_error("GroupNormalization", groups, {floats({2, 4}), floats({4}), floats({4}, DType::kFloat64)},
               ErrorCode::kTypeMismatch, {"input 2 (bias)", "expected dtype float32", "got float64"});
}

TEST(GroupNormalizationErrors, BadAttributes) {
  expect_bad_attr("GroupNormalization", {}, {"required attribute 'num_groups'", "is missing"});
  expect_bad_attr("GroupNormalization", {{"num_groups", 0}},
                  {"'num_groups'", "expected a value >= 1, got 0"});
  expect_bad_attr(
      "GroupNormalization", {{"num_groups", 1}, {"stash_type", 7}},
      {"'stash_type'", "expected 1 (float32), 10 (float16), 11 (float64) or 16 (bfloat16)", "got 7"});
  expect_bad_attr("GroupNormalization", {{"num_groups", 1}, {"epsilon", -1.0}},
                  {"'epsilon'", "expected a finite value >= 0, got -1"});
}

TEST(GroupNormalization, OneGroupPerChannelIsInstanceNormalization) {
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 10, 20, 60}, Shape{1, 2, 3});
  const Tensor scale = Tensor::from_vector<float>({1, 2}, Shape{2});
  const Tensor bias = Tensor::from_vector<float>({0, 1}, Shape{2});
  const auto y = run("GroupNormalization", {{"num_groups", 2}, {"epsilon", 0.0}}, {x, scale, bias})[0]
                     .to_vector<float>();
  const double s = std::sqrt(2.0 / 3.0);
  EXPECT_NEAR(y[0], -1 / s, 1e-5);
  EXPECT_NEAR(y[1], 0, 1e-5);
  EXPECT_NEAR(y[2], 1 / s, 1e-5);
  const double m = 30, sd = std::sqrt((400.0 + 100 + 900) / 3);
  EXPECT_NEAR(y[3], 2 * (10 - m) / sd + 1, 1e-5);
  EXPECT_NEAR(y[5], 2 * (60 - m) / sd + 1, 1e-5);
}

TEST(RMSNormalizationErrors, BadInput) {
  expect_error("RMSNormalization", {{"axis", 2}}, {floats({2, 3}), floats({3})}, ErrorCode::kOutOfRange,
               {"RMSNormalization", "attribute 'axis'", "axis 2 is out of range", "expected -2 <= axis < 2"});
  expect_error("RMSNormalization", {}, {floats({2, 3}), floats({4})}, ErrorCode::kShapeMismatch,
               {"input 1 (scale)", "expected a shape that broadcasts to (2, 3)", "got shape (4,)"});
  expect_error("RMSNormalization", {}, {floats({2, 3}), floats({1, 2, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (scale)", "got shape (1, 2, 3)"});
  expect_error("RMSNormalization", {}, {Tensor::zeros({2, 3}, DType::kInt64), floats({3})},
               ErrorCode::kTypeMismatch, {"input 0 (X)", "got int64"});
  expect_error("RMSNormalization", {}, {floats({2, 3}), Tensor::zeros({3}, DType::kUInt8)},
               ErrorCode::kTypeMismatch, {"input 1 (scale)", "got uint8"});
  expect_error("RMSNormalization", {}, {floats({}), floats({})}, ErrorCode::kShapeMismatch,
               {"input 0 (X)", "expected rank >= 1, got shape ()"});
  expect_bad_attr("RMSNormalization", {{"stash_type", 0}}, {"'stash_type'", "got 0"});
}

TEST(RMSNormalization, OutputTakesScaleDtype) {
  const Tensor x = Tensor::from_vector<float>({3, 4}, Shape{1, 2});
  const Tensor scale = Tensor::from_vector<float>({1, 2}, Shape{2}).cast(DType::kFloat16);
  const Tensor y = run("RMSNormalization", {{"epsilon", 0.0}}, {x, scale})[0];
  EXPECT_EQ(y.dtype(), DType::kFloat16);
  const auto v = y.cast(DType::kFloat32).to_vector<float>();
  const double rms = std::sqrt(12.5);
  EXPECT_NEAR(v[0], 3 / rms, 1e-3);
  EXPECT_NEAR(v[1], 2 * 4 / rms, 1e-3);
}

// ---- GridSample and AffineGrid ---------------------------------------------------------------

TEST(GridSampleErrors, BadShapes) {
  expect_error("GridSample", {}, {floats({2, 3}), floats({2, 3, 1})}, ErrorCode::kShapeMismatch,
               {"GridSample", "input 0 (X)", "rank >= 3", "got shape (2, 3)"});
  expect_error("GridSample", {}, {floats({1, 2, 4, 4}), floats({1, 3, 2})}, ErrorCode::kShapeMismatch,
               {"input 1 (grid)", "expected shape (1, D1_out, ..., 2) of rank 4", "got shape (1, 3, 2)"});
  expect_error("GridSample", {}, {floats({1, 2, 4, 4}), floats({1, 3, 3, 3})}, ErrorCode::kShapeMismatch,
               {"input 1 (grid)", "got shape (1, 3, 3, 3)"});
  expect_error(
      "GridSample", {}, {floats({1, 2, 4, 4}), floats({2, 3, 3, 2})}, ErrorCode::kShapeMismatch,
      {"input 1 (grid)", "spatial axes of input 0 (X), shape (1, 2, 4, 4)", "got shape (2, 3, 3, 2)"});
}

TEST(GridSampleErrors, BadDtypesAndAttributes) {
  expect_error("GridSample", {}, {floats({1, 2, 4, 4}), Tensor::zeros({1, 3, 3, 2}, DType::kInt32)},
               ErrorCode::kTypeMismatch, {"input 1 (grid)", "expected one of {float32", "got int32"});
  expect_bad_attr(
      "GridSample", {{"mode", "bilinear"}},
      {"GridSample attribute 'mode'", "expected one of {linear, nearest, cubic}", "got 'bilinear'"});
  expect_bad_attr("GridSample", {{"padding_mode", "wrap"}},
                  {"'padding_mode'", "expected one of {zeros, border, reflection}", "got 'wrap'"});
  expect_bad_attr("GridSample", {{"align_corners", 2}}, {"'align_corners'", "expected 0 or 1, got 2"});
}

TEST(GridSample, IdentityGridReproducesTheImage) {
  // With align_corners=1, the normalized positions -1, 0, 1 are the pixel centres of a 3-pixel axis.
  const Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{1, 1, 2, 3});
  const Tensor grid =
      Tensor::from_vector<float>({-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1}, Shape{1, 2, 3, 2});
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    const auto y = run("GridSample", {{"align_corners", 1}, {"mode", mode}}, {x, grid})[0].to_vector<float>();
    const std::vector<float> expected{1, 2, 3, 4, 5, 6};
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], expected[i], 1e-5) << mode << " " << i;
  }
}

TEST(AffineGridErrors, BadInput) {
  expect_error("AffineGrid", {}, {floats({1, 2, 3}), ints({1, 1, 4, 4, 4})}, ErrorCode::kShapeMismatch,
               {"AffineGrid", "input 0 (theta)", "expected shape (1, 3, 4)", "(1, 1, 4, 4, 4)",
                "got shape (1, 2, 3)"});
  expect_error("AffineGrid", {}, {floats({2, 2, 3}), ints({1, 1, 4, 4})}, ErrorCode::kShapeMismatch,
               {"input 0 (theta)", "expected shape (1, 2, 3)", "got shape (2, 2, 3)"});
  expect_error("AffineGrid", {}, {floats({1, 2, 3}), ints({1, 4, 4})}, ErrorCode::kShapeMismatch,
               {"input 1 (size)", "expected 4 values (N, C, H, W) or 5 (N, C, D, H, W), got 3"});
  expect_error("AffineGrid", {}, {floats({1, 2, 3}), ints({1, 1, -4, 4})}, ErrorCode::kInvalidArgument,
               {"input 1 (size)", "expected values >= 0, got -4"});
  expect_error("AffineGrid", {}, {floats({1, 2, 3}), Tensor::from_vector<int32_t>({1, 1, 4, 4}, Shape{4})},
               ErrorCode::kTypeMismatch, {"input 1 (size)", "expected one of {int64}", "got int32"});
  expect_error("AffineGrid", {}, {Tensor::zeros({1, 2, 3}, DType::kInt64), ints({1, 1, 4, 4})},
               ErrorCode::kTypeMismatch, {"input 0 (theta)", "got int64"});
  expect_error("AffineGrid", {}, {floats({2, 3}), ints({1, 1, 4, 4})}, ErrorCode::kShapeMismatch,
               {"input 0 (theta)", "expected 3-D", "got shape (2, 3)"});
}

// ---- Col2Im, CenterCropPad, RoiAlign ---------------------------------------------------------

TEST(Col2ImErrors, BadShapes) {
  expect_error("Col2Im", {}, {floats({4, 9}), ints({4, 4}), ints({2, 2})}, ErrorCode::kShapeMismatch,
               {"Col2Im", "input 0 (input)", "rank 3", "got shape (4, 9)"});
  expect_error("Col2Im", {}, {floats({1, 4, 9}), ints({4, 4}), ints({2})}, ErrorCode::kShapeMismatch,
               {"input 2 (block_shape)", "expected 2 values", "got 1"});
  expect_error("Col2Im", {}, {floats({1, 6, 9}), ints({4, 4}), ints({2, 2})}, ErrorCode::kShapeMismatch,
               {"input 0 (input)", "multiple of prod(block_shape) = 4", "got shape (1, 6, 9)"});
  expect_error("Col2Im", {}, {floats({1, 4, 8}), ints({4, 4}), ints({2, 2})}, ErrorCode::kShapeMismatch,
               {"input 0 (input)", "expected axis 2 to hold the 9 sliding block positions (3, 3)",
                "got shape (1, 4, 8)"});
  expect_error("Col2Im", {}, {floats({1, 4, 9}), ints({4, 0}), ints({2, 2})}, ErrorCode::kInvalidArgument,
               {"input 1 (image_shape)", "expected values >= 1, got 0"});
  expect_error("Col2Im", {}, {floats({1, 4, 9}), ints({4, 1}), ints({2, 2})}, ErrorCode::kShapeMismatch,
               {"the block of axis 1 spans 2", "the padded image is only 1 long"});
  expect_error("Col2Im", {{"strides", std::vector<int64_t>{1}}},
               {floats({1, 4, 9}), ints({4, 4}), ints({2, 2})}, ErrorCode::kShapeMismatch,
               {"attribute 'strides'", "expected 2 values", "got 1"});
  expect_error("Col2Im", {},
               {floats({1, 4, 9}), Tensor::from_vector<int32_t>({4, 4}, Shape{2}), ints({2, 2})},
               ErrorCode::kTypeMismatch, {"input 1 (image_shape)", "expected one of {int64}", "got int32"});
  expect_bad_attr("Col2Im", {{"strides", std::vector<int64_t>{1, 0}}},
                  {"'strides'", "expected values >= 1, got 0"});
  expect_bad_attr("Col2Im", {{"pads", std::vector<int64_t>{0, -1, 0, 0}}},
                  {"'pads'", "expected values >= 0, got -1"});
}

TEST(Col2Im, OverlappingBlocksAdd) {
  // Two 1-D blocks of 2 with stride 1 over an image of 3: the middle pixel receives both.
  const Tensor cols = Tensor::from_vector<int32_t>({1, 2, 10, 20}, Shape{1, 2, 2});
  const auto y = run("Col2Im", {}, {cols, ints({3}), ints({2})})[0].to_vector<int32_t>();
  EXPECT_EQ(y, (std::vector<int32_t>{1, 12, 20}));
}

TEST(CenterCropPadErrors, BadInput) {
  expect_error(
      "CenterCropPad", {}, {floats({4, 5}), ints({3})}, ErrorCode::kShapeMismatch,
      {"CenterCropPad", "input 1 (shape)", "expected 2 values", "the rank of input 0 (input_data)", "got 1"});
  expect_error("CenterCropPad", {{"axes", std::vector<int64_t>{1}}}, {floats({4, 5}), ints({3, 3})},
               ErrorCode::kShapeMismatch,
               {"input 1 (shape)", "expected 1 values", "attribute 'axes'", "got 2"});
  expect_error("CenterCropPad", {}, {floats({4, 5}), ints({3, -1})}, ErrorCode::kInvalidArgument,
               {"input 1 (shape)", "expected values >= 0, got -1"});
  expect_error("CenterCropPad", {{"axes", std::vector<int64_t>{2}}}, {floats({4, 5}), ints({3})},
               ErrorCode::kOutOfRange, {"attribute 'axes'", "axis 2 is out of range"});
  expect_error("CenterCropPad", {{"axes", std::vector<int64_t>{1, -1}}}, {floats({4, 5}), ints({3, 3})},
               ErrorCode::kInvalidArgument, {"attribute 'axes'", "axis -1 is repeated"});
  expect_error("CenterCropPad", {}, {floats({4, 5}), floats({2})}, ErrorCode::kTypeMismatch,
               {"input 1 (shape)", "expected one of {int32, int64}", "got float32"});
}

TEST(RoiAlignErrors, BadShapesAndDtypes) {
  const Tensor x = floats({1, 2, 4, 4});
  const Tensor boxes = floats({3, 4});
  const Tensor image = ints({0, 0, 0});
  expect_error("RoiAlign", {}, {floats({2, 4, 4}), boxes, image}, ErrorCode::kShapeMismatch,
               {"RoiAlign", "input 0 (X)", "rank 4", "got shape (2, 4, 4)"});
  expect_error("RoiAlign", {}, {x, floats({3, 5}), image}, ErrorCode::kShapeMismatch,
               {"input 1 (rois)", "expected (num_rois, 4)", "got shape (3, 5)"});
  expect_error("RoiAlign", {}, {x, boxes, ints({0, 0})}, ErrorCode::kShapeMismatch,
               {"input 2 (batch_indices)", "expected shape (3,)", "got shape (2,)"});
  expect_error("RoiAlign", {}, {x, floats({3, 4}, DType::kFloat64), image}, ErrorCode::kTypeMismatch,
               {"input 1 (rois)", "expected dtype float32", "got float64"});
  expect_error("RoiAlign", {}, {x, boxes, Tensor::from_vector<int32_t>({0, 0, 0}, Shape{3})},
               ErrorCode::kTypeMismatch, {"input 2 (batch_indices)", "expected one of {int64}", "got int32"});
}

TEST(RoiAlignErrors, BadValuesAndAttributes) {
  const Tensor x = floats({1, 2, 4, 4});
  expect_error("RoiAlign", {}, {x, floats({2, 4}), ints({0, 1})}, ErrorCode::kOutOfRange,
               {"input 2 (batch_indices)", "value 1 of box 1 is out of range for 1 images"});
  const Tensor nan_box =
      Tensor::from_vector<float>({0, 0, std::numeric_limits<float>::quiet_NaN(), 1}, Shape{1, 4});
  expect_error("RoiAlign", {}, {x, nan_box, ints({0})}, ErrorCode::kInvalidArgument,
               {"input 1 (rois)", "box 0 has a non-finite coordinate"});
  expect_bad_attr("RoiAlign", {{"mode", "mean"}}, {"'mode'", "expected one of {avg, max}", "got 'mean'"});
  expect_bad_attr(
      "RoiAlign", {{"coordinate_transformation_mode", "align_corners"}},
      {"'coordinate_transformation_mode'", "{half_pixel, output_half_pixel}", "got 'align_corners'"});
  expect_bad_attr("RoiAlign", {{"output_height", 0}}, {"'output_height'", "expected a value >= 1, got 0"});
  expect_bad_attr("RoiAlign", {{"sampling_ratio", -1}},
                  {"'sampling_ratio'", "expected a value >= 0", "got -1"});
}

// ---- Window functions ------------------------------------------------------------------------

TEST(WindowErrors, BadSize) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    expect_error(op, {}, {int64_scalar(-1)}, ErrorCode::kInvalidArgument,
                 {op, "input 0 (size)", "expected a size >= 0, got -1"});
    expect_error(op, {}, {ints({3, 4})}, ErrorCode::kShapeMismatch,
                 {"input 0 (size)", "expected a scalar, got shape (2,)"});
    expect_error(op, {}, {Tensor::scalar(4, DType::kFloat32)}, ErrorCode::kTypeMismatch,
                 {"input 0 (size)", "expected one of {int32, int64}", "got float32"});
  }
}

TEST(WindowErrors, BadAttributes) {
  expect_bad_attr("HannWindow", {{"output_datatype", 9}},
                  {"'output_datatype'", "expected the ONNX code of a numeric type", "got 9"});
  expect_bad_attr("BlackmanWindow", {{"periodic", 2}}, {"'periodic'", "expected 0 or 1, got 2"});
}

TEST(Window, PeriodicHannIsOnePeriodOfTheSymmetricOneLonger) {
  const auto periodic = run("HannWindow", {}, {int64_scalar(8)})[0].to_vector<float>();
  const auto symmetric = run("HannWindow", {{"periodic", 0}}, {int64_scalar(9)})[0].to_vector<float>();
  ASSERT_EQ(periodic.size(), 8u);
  for (size_t i = 0; i < periodic.size(); ++i) EXPECT_NEAR(periodic[i], symmetric[i], 1e-6);
  EXPECT_NEAR(periodic[4], 1.0, 1e-6);
  const Tensor y = run("HammingWindow", {{"output_datatype", 11}}, {int64_scalar(3)})[0];
  EXPECT_EQ(y.dtype(), DType::kFloat64);
}

}  // namespace
}  // namespace kiln::ops
