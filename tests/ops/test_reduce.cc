// Bad input to the reductions, ArgMax/ArgMin and TopK: each must throw a kiln::Error with the
// right code whose message names the op, the input or attribute, and the expected and actual
// values. Plus shape inference from the axes input when its values are (not) known.
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor int64s(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(values, Shape{static_cast<int64_t>(values.size())});
}

const char* const kReduceOps[] = {"ReduceSum",       "ReduceMean",     "ReduceMax", "ReduceMin",
                                  "ReduceProd",      "ReduceL1",       "ReduceL2",  "ReduceLogSum",
                                  "ReduceLogSumExp", "ReduceSumSquare"};

TEST(ReduceErrors, AxisOutOfRange) {
  for (const char* op : kReduceOps) {
    SCOPED_TRACE(op);
    expect_error(op, {}, {floats(Shape{2, 3}), int64s({2})}, ErrorCode::kOutOfRange,
                 {op, "input 1 (axes)", "axis 2 is out of range", "rank 2", "-2 <= axis < 2"});
    expect_error(op, {}, {floats(Shape{2, 3}), int64s({0, -3})}, ErrorCode::kOutOfRange,
                 {op, "input 1 (axes)", "axis -3 is out of range"});
  }
  expect_error("ReduceSum", {}, {Tensor::scalar(1.0, DType::kFloat32), int64s({0})}, ErrorCode::kOutOfRange,
               {"input 1 (axes)", "rank 0"});
}

TEST(ReduceErrors, RepeatedAxes) {
  for (const char* op : kReduceOps) {
    SCOPED_TRACE(op);
    expect_error(op, {}, {floats(Shape{2, 3}), int64s({1, -1})}, ErrorCode::kInvalidArgument,
                 {op, "input 1 (axes)", "axis -1 is repeated"});
  }
}

TEST(ReduceErrors, AxesMustBeA1DInt64Tensor) {
  expect_error("ReduceSum", {}, {floats(Shape{2, 3}), Tensor::from_vector<int32_t>({1}, Shape{1})},
               ErrorCode::kTypeMismatch,
               {"ReduceSum", "input 1 (axes)", "expected one of {int64}", "got int32"});
  expect_error("ReduceMax", {}, {floats(Shape{2, 3}), Tensor::from_vector<float>({1}, Shape{1})},
               ErrorCode::kTypeMismatch, {"ReduceMax", "input 1 (axes)", "got float32"});
  expect_error("ReduceMean", {}, {floats(Shape{2, 3}), Tensor::from_vector<int64_t>({1}, Shape{1, 1})},
               ErrorCode::kShapeMismatch,
               {"ReduceMean", "input 1 (axes)", "expected 1-D", "got shape (1, 1)"});
}

TEST(ReduceErrors, DataDtypes) {
  expect_error("ReduceSum", {}, {Tensor::zeros(Shape{2}, DType::kBool)}, ErrorCode::kTypeMismatch,
               {"ReduceSum", "input 0 (data)", "got bool"});
  // ONNX dropped integer types from the log-sums (opset 28).
  for (const char* op : {"ReduceLogSum", "ReduceLogSumExp"}) {
    SCOPED_TRACE(op);
    expect_error(
        op, {}, {Tensor::zeros(Shape{2}, DType::kInt32)}, ErrorCode::kTypeMismatch,
        {op, "input 0 (data)", "expected one of {float32, float64, float16, bfloat16}", "got int32"});
  }
}

TEST(ReduceErrors, FlagsAreZeroOrOne) {
  expect_bad_attr("ReduceSum", {{"keepdims", 2}}, {"ReduceSum", "keepdims", "expected 0 or 1", "got 2"});
  expect_bad_attr("ReduceL2", {{"noop_with_empty_axes", -1}},
                  {"ReduceL2", "noop_with_empty_axes", "expected 0 or 1", "got -1"});
  expect_bad_attr("ArgMax", {{"select_last_index", 5}}, {"ArgMax", "select_last_index", "got 5"});
  expect_bad_attr("TopK", {{"largest", 3}}, {"TopK", "largest", "got 3"});
  expect_bad_attr("TopK", {{"sorted", 2}}, {"TopK", "sorted", "got 2"});
}

TEST(ReduceInference, EmptyAxesNeedNoValues) {
  const OpSchema& schema = OpRegistry::global().get("ReduceSum");
  const std::vector<std::optional<TensorInfo>> inputs = {TensorInfo{DType::kFloat32, Shape{2, 3}},
                                                         TensorInfo{DType::kInt64, Shape{0}}};
  const auto all = schema.infer_types(schema.bind({}), inputs, {nullptr, nullptr});
  EXPECT_EQ(all.at(0).shape, Shape({1, 1}));
  const auto none =
      schema.infer_types(schema.bind({{"noop_with_empty_axes", 1}}), inputs, {nullptr, nullptr});
  EXPECT_EQ(none.at(0).shape, Shape({2, 3}));
}

TEST(ReduceInference, UnknownAxesValuesAreUnsupported) {
  const OpSchema& schema = OpRegistry::global().get("ReduceSum");
  try {
    schema.infer_types(schema.bind({}),
                       {TensorInfo{DType::kFloat32, Shape{2, 3}}, TensorInfo{DType::kInt64, Shape{1}}},
                       {nullptr, nullptr});
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
    EXPECT_NE(std::string(e.what()).find("input 1 (axes)"), std::string::npos) << e.what();
  }
}

TEST(ArgReduceErrors, AxisOutOfRange) {
  for (const char* op : {"ArgMax", "ArgMin"}) {
    SCOPED_TRACE(op);
    expect_error(op, {{"axis", 2}}, {floats(Shape{2, 3})}, ErrorCode::kOutOfRange,
                 {op, "attribute 'axis'", "axis 2 is out of range", "rank 2", "-2 <= axis < 2"});
    expect_error(op, {{"axis", -3}}, {floats(Shape{2, 3})}, ErrorCode::kOutOfRange,
                 {op, "attribute 'axis'", "axis -3"});
  }
}

TEST(ArgReduceErrors, EmptyAxisHasNoIndex) {
  expect_error("ArgMax", {{"axis", 1}}, {floats(Shape{2, 0})}, ErrorCode::kShapeMismatch,
               {"ArgMax", "input 0 (data)", "expected a nonempty axis 1", "got shape (2, 0)"});
}

TEST(ArgReduceErrors, RejectsBool) {
  expect_error("ArgMin", {}, {Tensor::zeros(Shape{3}, DType::kBool)}, ErrorCode::kTypeMismatch,
               {"ArgMin", "input 0 (data)", "got bool"});
}

TEST(TopKErrors, KLargerThanTheAxis) {
  expect_error("TopK", {}, {floats(Shape{3, 4}), int64s({5})}, ErrorCode::kOutOfRange,
               {"TopK", "input 1 (K)", "expected K <= 4", "axis 1", "(3, 4)", "got 5"});
  expect_error("TopK", {{"axis", 0}}, {floats(Shape{3, 4}), int64s({4})}, ErrorCode::kOutOfRange,
               {"TopK", "input 1 (K)", "expected K <= 3", "got 4"});
}

TEST(TopKErrors, NegativeK) {
  expect_error("TopK", {}, {floats(Shape{3, 4}), int64s({-1})}, ErrorCode::kInvalidArgument,
               {"TopK", "input 1 (K)", "expected K >= 0", "got -1"});
}

TEST(TopKErrors, KMustBeOneInt64) {
  expect_error("TopK", {}, {floats(Shape{3, 4}), Tensor::from_vector<int32_t>({2}, Shape{1})},
               ErrorCode::kTypeMismatch, {"TopK", "input 1 (K)", "expected one of {int64}", "got int32"});
  expect_error("TopK", {}, {floats(Shape{3, 4}), int64s({1, 2})}, ErrorCode::kShapeMismatch,
               {"TopK", "input 1 (K)", "expected a 1-element 1-D tensor", "got shape (2,)"});
}

TEST(TopKErrors, AxisOutOfRangeAndBadData) {
  expect_error("TopK", {{"axis", 2}}, {floats(Shape{3, 4}), int64s({1})}, ErrorCode::kOutOfRange,
               {"TopK", "attribute 'axis'", "axis 2 is out of range"});
  expect_error("TopK", {}, {Tensor::zeros(Shape{3}, DType::kBool), int64s({1})}, ErrorCode::kTypeMismatch,
               {"TopK", "input 0 (X)", "got bool"});
  expect_error("TopK", {}, {Tensor::scalar(1.0, DType::kFloat32), int64s({1})}, ErrorCode::kOutOfRange,
               {"TopK", "attribute 'axis'", "rank 0"});
}

}  // namespace
}  // namespace kiln::ops
