// String tensors: elements constructed and destroyed with their storage, copied element by element
// through any strides, converted to and from numbers (the shortest text that reads back the same
// float; NaN and infinities as ONNX writes them), written and read as numpy's '<U' text; and the
// errors: text that is not a number, arithmetic on text.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "kiln/npy.hpp"
#include "kiln/tensor.hpp"
#include "test_support.h"

namespace kiln {
namespace {

using kiln::testing::expect_error;

Tensor text(const std::vector<std::string>& strings, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kString);
  std::copy(strings.begin(), strings.end(), t.data<std::string>());
  return t;
}

TEST(StringTensor, StartsEmptyAndCopiesThroughStrides) {
  const Tensor empty = Tensor::zeros(Shape{2, 2}, DType::kString);
  EXPECT_EQ(empty.to_vector<std::string>(), (std::vector<std::string>{"", "", "", ""}));
  const Tensor t =
      text({"a", "bb", "ccc", "a longer string than any inline buffer holds", "e", "f"}, Shape{2, 3});
  const Tensor turned = t.transpose({1, 0}).contiguous();
  EXPECT_EQ(
      turned.to_vector<std::string>(),
      (std::vector<std::string>{"a", "a longer string than any inline buffer holds", "bb", "e", "ccc", "f"}));
  Tensor copy = t.clone();
  copy.data<std::string>()[0] = "changed";
  EXPECT_EQ(t.to_vector<std::string>()[0], "a");  // a deep copy
  EXPECT_EQ(t.slice(1, 1, 3).contiguous().to_vector<std::string>(),
            (std::vector<std::string>{"bb", "ccc", "e", "f"}));
}

TEST(StringTensor, CastsToAndFromNumbersAsOnnxDoes) {
  const Tensor floats = Tensor::from_vector<float>(
      {0.039187793f, 0.5f, -2.f, std::numeric_limits<float>::quiet_NaN(),
       std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(), 1e-7f, 123456.f},
      Shape{8});
  EXPECT_EQ(floats.cast(DType::kString).to_vector<std::string>(),
            (std::vector<std::string>{"0.039187793", "0.5", "-2", "NaN", "INF", "-INF", "1e-07", "123456"}));
  const std::vector<float> back =
      text({"0.039187793", "0.5", "-2", "NaN", "INF", "-INF", "+INF", " 7"}, Shape{8})
          .cast(DType::kFloat32)
          .to_vector<float>();
  EXPECT_EQ(back[0], 0.039187793f);
  EXPECT_TRUE(std::isnan(back[3]));
  EXPECT_EQ(back[4], std::numeric_limits<float>::infinity());
  EXPECT_EQ(back[5], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(back[6], std::numeric_limits<float>::infinity());
  EXPECT_EQ(back[7], 7.f);
  EXPECT_EQ(text({"-9007199254740993", "42"}, Shape{2}).cast(DType::kInt64).to_vector<int64_t>(),
            (std::vector<int64_t>{-9007199254740993, 42}));
  EXPECT_EQ(
      Tensor::from_vector<int64_t>({-5, 1LL << 60}, Shape{2}).cast(DType::kString).to_vector<std::string>(),
      (std::vector<std::string>{"-5", "1152921504606846976"}));
  expect_error(
      [] {
        text({"1", "1.5x"}, Shape{2}).cast(DType::kFloat32);
      },
      ErrorCode::kInvalidArgument, {"element 1 '1.5x' is not a number"});
  expect_error([] { text({"1.5"}, Shape{1}).cast(DType::kInt32); }, ErrorCode::kInvalidArgument,
               {"'1.5' is not an integer"});
}

TEST(StringTensor, HasNoArithmetic) {
  expect_error([] { Tensor::full(Shape{1}, 1.0, DType::kString); }, ErrorCode::kUnsupported,
               {"string tensors hold text"});
  expect_error([] { text({"1"}, Shape{1}).item(); }, ErrorCode::kUnsupported, {"string tensors hold text"});
  EXPECT_EQ(dtype_from_onnx(8), DType::kString);
  EXPECT_EQ(dtype_from_name("string"), DType::kString);
  EXPECT_FALSE(is_storage_type(DType::kString));
}

TEST(StringTensor, IsWrittenAndReadAsNumpyText) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_string_tensor.npy").string();
  const Tensor t = text({"plain", "", "naïve 中文", "x"}, Shape{2, 2});
  npy::save(path, t);
  const Tensor back = npy::load(path);
  EXPECT_EQ(back.dtype(), DType::kString);
  EXPECT_EQ(back.shape(), (Shape{2, 2}));
  EXPECT_EQ(back.to_vector<std::string>(), t.to_vector<std::string>());
  std::filesystem::remove(path);
  expect_error([&] { npy::save(path, text({"\xff"}, Shape{1})); }, ErrorCode::kInvalidArgument,
               {"not valid UTF-8"});
}

}  // namespace
}  // namespace kiln
