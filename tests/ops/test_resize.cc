// Bad input to Resize and Upsample: each must throw a kiln::Error with the right code whose message
// names the op, the input or attribute, and the expected and actual values. Plus a few results the
// case files state less directly.
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor image() {
  return Tensor::zeros({1, 1, 2, 3}, DType::kFloat32);
}
Tensor scales(std::vector<float> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<float>(v, Shape{n});
}
Tensor sizes(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector<int64_t>(v, Shape{n});
}

TEST(ResizeErrors, ScalesAndSizesBothGiven) {
  expect_error("Resize", {}, {image(), Tensor(), scales({1, 1, 2, 2}), sizes({1, 1, 4, 6})},
               ErrorCode::kInvalidArgument,
               {"Resize", "only one of input 2 (scales) and input 3 (sizes) may be given, got both"});
}

TEST(ResizeErrors, NeitherScalesNorSizes) {
  expect_error("Resize", {}, {image()}, ErrorCode::kInvalidArgument,
               {"Resize", "one of input 2 (scales) and input 3 (sizes) must be given"});
}

TEST(ResizeErrors, WrongScalesLength) {
  expect_error("Resize", {}, {image(), Tensor(), scales({2, 2})}, ErrorCode::kShapeMismatch,
               {"Resize", "input 2 (scales)", "expected 1-D with 4 values", "got shape (2,)"});
  expect_error("Resize", {{"axes", std::vector<int64_t>{2, 3}}}, {image(), Tensor(), scales({1, 1, 2, 2})},
               ErrorCode::kShapeMismatch,
               {"input 2 (scales)", "expected 1-D with 2 values", "got shape (4,)"});
  expect_error("Resize", {}, {image(), Tensor(), Tensor(), sizes({4, 6})}, ErrorCode::kShapeMismatch,
               {"input 3 (sizes)", "expected 1-D with 4 values", "got shape (2,)"});
}

TEST(ResizeErrors, NonPositiveScale) {
  expect_error("Resize", {}, {image(), Tensor(), scales({1, 1, 0, 2})}, ErrorCode::kInvalidArgument,
               {"Resize", "input 2 (scales)", "expected positive finite scales, got 0 for axis 2"});
  expect_error("Resize", {}, {image(), Tensor(), scales({1, -1.5, 1, 2})}, ErrorCode::kInvalidArgument,
               {"input 2 (scales)", "got -1.5 for axis 1"});
  expect_error("Resize", {}, {image(), Tensor(), Tensor(), sizes({1, 1, -4, 6})}, ErrorCode::kInvalidArgument,
               {"input 3 (sizes)", "expected non-negative sizes, got -4 for axis 2"});
}

TEST(ResizeErrors, WrongDtypes) {
  expect_error("Resize", {}, {image(), Tensor(), sizes({1, 1, 2, 2})}, ErrorCode::kTypeMismatch,
               {"Resize", "input 2 (scales)", "expected one of {float32}", "got int64"});
  expect_error("Resize", {}, {image(), Tensor(), Tensor(), scales({1, 1, 4, 6})}, ErrorCode::kTypeMismatch,
               {"input 3 (sizes)", "expected one of {int32, int64}", "got float32"});
  expect_error("Resize", {{"mode", "linear"}},
               {Tensor::zeros({2, 2}, DType::kBool), Tensor(), scales({2, 2})}, ErrorCode::kUnsupported,
               {"input 0 (X)", "only mode 'nearest' resizes bool tensors"});
}

TEST(ResizeErrors, UnknownAttributeValuesRejectedAtBind) {
  expect_bad_attr("Resize", {{"mode", "bicubic"}},
                  {"Resize attribute 'mode'", "expected one of {nearest, linear, cubic}", "got 'bicubic'"});
  expect_bad_attr(
      "Resize", {{"coordinate_transformation_mode", "tf_half_pixel"}},
      {"'coordinate_transformation_mode'", "half_pixel, half_pixel_symmetric", "got 'tf_half_pixel'"});
  expect_bad_attr("Resize", {{"nearest_mode", "round"}},
                  {"'nearest_mode'", "{round_prefer_floor, round_prefer_ceil, floor, ceil}", "got 'round'"});
  expect_bad_attr("Resize", {{"keep_aspect_ratio_policy", "fit"}},
                  {"'keep_aspect_ratio_policy'", "{stretch, not_larger, not_smaller}", "got 'fit'"});
  expect_bad_attr("Resize", {{"antialias", 2}}, {"'antialias'", "expected 0 or 1, got 2"});
  expect_bad_attr("Resize", {{"exclude_outside", -1}}, {"'exclude_outside'", "expected 0 or 1, got -1"});
  expect_bad_attr("Upsample", {{"mode", "cubic"}},
                  {"Upsample attribute 'mode'", "{nearest, linear}", "got 'cubic'"});
}

TEST(ResizeErrors, AxesOutOfRangeOrRepeated) {
  expect_error("Resize", {{"axes", std::vector<int64_t>{4}}}, {image(), Tensor(), scales({2})},
               ErrorCode::kOutOfRange, {"Resize", "attribute 'axes'", "4"});
  expect_error("Resize", {{"axes", std::vector<int64_t>{3, -1}}}, {image(), Tensor(), scales({2, 2})},
               ErrorCode::kInvalidArgument, {"attribute 'axes'", "axis -1 is repeated"});
}

TEST(ResizeErrors, RoiOfTfCropAndResize) {
  const AttrMap crop{{"coordinate_transformation_mode", "tf_crop_and_resize"}, {"mode", "linear"}};
  expect_error(
      "Resize", crop, {image(), Tensor(), Tensor(), sizes({1, 1, 3, 3})}, ErrorCode::kInvalidArgument,
      {"Resize", "input 1 (roi) is required when coordinate_transformation_mode is tf_crop_and_resize"});
  expect_error("Resize", crop, {image(), scales({0, 0, 1, 1}), Tensor(), sizes({1, 1, 3, 3})},
               ErrorCode::kShapeMismatch, {"input 1 (roi)", "expected 1-D with 8 values", "got shape (4,)"});
  expect_error("Resize", crop, {image(), sizes({0, 0, 0, 0, 1, 1, 1, 1}), Tensor(), sizes({1, 1, 3, 3})},
               ErrorCode::kTypeMismatch, {"input 1 (roi)", "got int64"});
  const float nan = std::numeric_limits<float>::quiet_NaN();
  expect_error("Resize", crop, {image(), scales({0, 0, nan, 0, 1, 1, 1, 1}), Tensor(), sizes({1, 1, 3, 3})},
               ErrorCode::kInvalidArgument, {"input 1 (roi)", "expected finite values", "for axis 2"});
}

TEST(ResizeErrors, ScalarAndEmptyAxis) {
  expect_error("Resize", {}, {Tensor::scalar(1, DType::kFloat32), Tensor(), scales({})},
               ErrorCode::kShapeMismatch, {"input 0 (X)", "expected rank >= 1, got shape ()"});
  expect_error("Resize", {}, {Tensor::zeros({2, 0}, DType::kFloat32), Tensor(), Tensor(), sizes({2, 3})},
               ErrorCode::kShapeMismatch,
               {"input 0 (X)", "axis 1 has length 0 and cannot be resized to length 3"});
}

TEST(ResizeErrors, UpsampleScalesBelowOne) {
  expect_error("Upsample", {}, {image(), scales({1, 1, 0.5, 2})}, ErrorCode::kInvalidArgument,
               {"Upsample", "input 1 (scales)", "expected scales >= 1, got 0.5"});
  expect_error("Upsample", {}, {image(), scales({2, 2})}, ErrorCode::kShapeMismatch,
               {"input 1 (scales)", "expected 1-D with 4 values", "got shape (2,)"});
}

TEST(ResizeResults, EmptyPlaceholderScalesStandsForMissing) {
  // Opsets 11-12 required a scales input even with sizes; an empty tensor filled the slot.
  const auto x = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  const auto out = run("Resize", {{"mode", "nearest"}}, {x, Tensor(), scales({}), sizes({4, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{4, 2}));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4}));
}

TEST(ResizeResults, OutputLengthsFromScalesUseFloat) {
  // float(10) * 0.7f rounds to 7 in float, as ONNX shape inference and ONNX Runtime compute it.
  const auto out = run("Resize", {}, {Tensor::zeros({10}, DType::kFloat32), Tensor(), scales({0.7f})});
  EXPECT_EQ(out[0].shape(), (Shape{7}));
}

TEST(ResizeResults, UpsampleRepeatsElements) {
  const auto x = Tensor::from_vector<int32_t>({1, 2, 3, 4}, Shape{2, 2});
  const auto out = run("Upsample", {}, {x, scales({1, 3})});
  EXPECT_EQ(out[0].to_vector<int32_t>(), (std::vector<int32_t>{1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4}));
}

// Outputs large enough to split across threads match the same resize run slice by slice.
TEST(ResizeResults, ParallelChunksMatchSerialSlices) {
  const int64_t n = 40, h = 37, w = 53;
  std::vector<float> values(static_cast<size_t>(n * h * w));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>((i * 7919) % 1013) / 101.0f;
  const Tensor x = Tensor::from_vector<float>(values, Shape{n, h, w});
  const Tensor roi = scales({-0.1f, 0.2f, 0.9f, 1.3f});
  const AttrMap axes{{"axes", std::vector<int64_t>{1, 2}}};
  for (AttrMap attrs : std::vector<AttrMap>{{{"mode", "nearest"}},
                                            {{"mode", "linear"}},
                                            {{"mode", "cubic"}, {"antialias", 1}},
                                            {{"mode", "linear"},
                                             {"coordinate_transformation_mode", "tf_crop_and_resize"},
                                             {"extrapolation_value", 9.0}}}) {
    attrs.insert(axes.begin(), axes.end());
    const Tensor whole = run("Resize", attrs, {x, roi, Tensor(), sizes({70, 31})})[0];
    ASSERT_EQ(whole.shape(), (Shape{n, 70, 31}));
    for (int64_t i = 0; i < n; ++i) {
      const Tensor slice = run("Resize", attrs, {x.slice(0, i, i + 1), roi, Tensor(), sizes({70, 31})})[0];
      ASSERT_EQ(whole.slice(0, i, i + 1).to_vector<float>(), slice.to_vector<float>())
          << attrs.at("mode").to_string() << ", slice " << i;
    }
  }
}

}  // namespace
}  // namespace kiln::ops
