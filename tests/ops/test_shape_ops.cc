// Bad input to the shape and data-movement ops (Reshape, Squeeze, Transpose, Concat, Split,
// Slice, Gather*, Scatter*, Pad, Expand, Tile, DepthToSpace, ...): each must throw a kiln::Error
// with the right code whose message names the op, the input or attribute, and the expected and
// actual values. Plus shape inference on partly unknown shapes, which the case files cannot express.
#include <initializer_list>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor ints(const std::vector<int64_t>& values) {
  return Tensor::from_vector<int64_t>(values, Shape{static_cast<int64_t>(values.size())});
}

TEST(ShapeOpsErrors, ReshapeWrongElementCountNamesBothShapes) {
  expect_error(
      "Reshape", {}, {floats({2, 3}), ints({4, 2})}, ErrorCode::kShapeMismatch,
      {"Reshape", "input 1 (shape)", "input 0 (data) of shape (2, 3) (6 elements)", "(4, 2) (8 elements)"});
  expect_error("Reshape", {}, {floats({2, 3}), ints({4, -1})}, ErrorCode::kShapeMismatch,
               {"input 1 (shape)", "(2, 3)", "[4, -1]", "6 is not a multiple of 4"});
}

// A shape whose element count overflows 64 bits is an error, not a wrap-around (found by the
// external-data fuzz target: a shape initializer read from arbitrary bytes).
TEST(ShapeOpsErrors, ReshapeShapeWhoseCountOverflows) {
  expect_error("Reshape", {}, {floats({2, 2}), ints({int64_t{1} << 40, int64_t{1} << 40})},
               ErrorCode::kOutOfRange, {"Reshape", "more elements than a 64-bit count can hold"});
}

TEST(ShapeOpsErrors, ReshapeBadShapeValues) {
  expect_error("Reshape", {}, {floats({2, 3}), ints({-1, -1})}, ErrorCode::kInvalidArgument,
               {"input 1 (shape)", "at most one -1", "[-1, -1]"});
  expect_error("Reshape", {}, {floats({6}), ints({2, 0})}, ErrorCode::kShapeMismatch,
               {"input 1 (shape)", "0 at position 1", "input 0 (data)", "rank 1", "(6,)"});
  expect_error("Reshape", {}, {floats({6}), ints({-2, -3})}, ErrorCode::kInvalidArgument,
               {"input 1 (shape)", "expected dimensions >= -1, got -2"});
  expect_error("Reshape", {{"allowzero", 1}}, {floats({0, 3}), ints({0, -1})}, ErrorCode::kInvalidArgument,
               {"allowzero=1", "both 0 and -1"});
  expect_error("Reshape", {}, {floats({6}), floats({2})}, ErrorCode::kTypeMismatch,
               {"input 1 (shape)", "expected one of {int32, int64}, got float32"});
}

TEST(ShapeOpsErrors, SqueezeUnsqueezeFlatten) {
  expect_error("Squeeze", {}, {floats({2, 1, 3}), ints({0})}, ErrorCode::kShapeMismatch,
               {"Squeeze", "input 1 (axes)", "cannot squeeze axis 0", "(2, 1, 3)", "expected size 1, got 2"});
  expect_error("Squeeze", {}, {floats({2, 1, 3}), ints({3})}, ErrorCode::kOutOfRange,
               {"input 1 (axes)", "axis 3"});
  expect_error("Unsqueeze", {}, {floats({2, 3}), ints({1, -3})}, ErrorCode::kInvalidArgument,
               {"Unsqueeze", "input 1 (axes)", "repeated"});
  expect_error("Unsqueeze", {}, {floats({2, 3}), ints({4})}, ErrorCode::kOutOfRange,
               {"input 1 (axes)", "axis 4", "rank 3"});
  expect_error("Flatten", {{"axis", 4}}, {floats({2, 3, 4})}, ErrorCode::kOutOfRange,
               {"Flatten", "attribute 'axis'", "-3 <= axis <= 3", "got 4"});
}

TEST(ShapeOpsErrors, TransposeBadPerm) {
  expect_error("Transpose", {{"perm", {0, 0, 1}}}, {floats({2, 3, 4})}, ErrorCode::kInvalidArgument,
               {"Transpose", "attribute 'perm'", "axis 0 appears twice"});
  expect_error("Transpose", {{"perm", {1, 0}}}, {floats({2, 3, 4})}, ErrorCode::kInvalidArgument,
               {"attribute 'perm'", "expected 3 entries", "got 2"});
  expect_error("Transpose", {{"perm", {0, 1, 3}}}, {floats({2, 3, 4})}, ErrorCode::kOutOfRange,
               {"attribute 'perm'", "[0, 3)", "got 3"});
  expect_error("Transpose", {{"perm", {0, 1, -1}}}, {floats({2, 3, 4})}, ErrorCode::kOutOfRange,
               {"attribute 'perm'", "got -1"});
}

TEST(ShapeOpsErrors, ConcatMismatchNamesInputAndAxis) {
  expect_error("Concat", {{"axis", 1}}, {floats({2, 3}), floats({2, 3, 1})}, ErrorCode::kShapeMismatch,
               {"Concat", "input 1 (inputs)", "expected rank 2", "input 0 (inputs), shape (2, 3)",
                "got shape (2, 3, 1)"});
  expect_error("Concat", {{"axis", 1}}, {floats({2, 3}), floats({2, 3}), floats({4, 2})},
               ErrorCode::kShapeMismatch,
               {"input 2 (inputs)", "(4, 2)", "dimension 0", "(4 vs 2)", "concatenation axis 1"});
  expect_error("Concat", {{"axis", 0}}, {floats({2}), ints({3})}, ErrorCode::kTypeMismatch,
               {"input 1 (inputs)", "expected dtype float32", "got int64"});
  expect_error("Concat", {{"axis", 2}}, {floats({2, 3}), floats({2, 3})}, ErrorCode::kOutOfRange,
               {"attribute 'axis'", "axis 2", "rank 2"});
  expect_error("Concat", {{"axis", 0}}, {floats({}), floats({})}, ErrorCode::kShapeMismatch,
               {"input 0 (inputs)", "rank >= 1"});
  expect_bad_attr("Concat", {}, {"Concat", "required attribute 'axis'"});
}

TEST(ShapeOpsErrors, SplitSizes) {
  expect_error("Split", {}, {floats({5}), ints({2, 2})}, ErrorCode::kShapeMismatch,
               {"Split", "input 1 (split)", "sum to 4", "expected 5"});
  expect_error("Split", {{"num_outputs", 2}}, {floats({4}), ints({2, 2})}, ErrorCode::kInvalidArgument,
               {"input 1 (split)", "'num_outputs'", "not both"});
  expect_error("Split", {{"num_outputs", 4}}, {floats({5})}, ErrorCode::kShapeMismatch,
               {"input 0 (input)", "4 chunks of 2", "axis size 5"});
  expect_error("Split", {}, {floats({4}), ints({3, -1, 2})}, ErrorCode::kInvalidArgument,
               {"input 1 (split)", "lengths >= 0, got -1"});
  expect_error("Split", {}, {floats({4})}, ErrorCode::kInvalidArgument, {"number of outputs is unknown"});
  expect_bad_attr("Split", {{"num_outputs", 0}}, {"Split attribute 'num_outputs'", "expected >= 1, got 0"});

  const OpSchema& split = OpRegistry::global().get("Split");
  EXPECT_THROW(split.run_reference(split.bind({{"num_outputs", 2}}), {floats({4})}, 3), Error);
  const auto parts = split.run_reference(split.bind({}), {floats({7, 2})}, 3);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(parts[2].shape(), (Shape{1, 2}));
}

TEST(ShapeOpsErrors, SliceArguments) {
  expect_error("Slice", {}, {floats({4, 5}), ints({0}), ints({2}), ints({1}), ints({0})},
               ErrorCode::kInvalidArgument, {"Slice", "input 4 (steps)", "must not be 0"});
  expect_error("Slice", {}, {floats({4, 5}), ints({0, 1}), ints({2})}, ErrorCode::kShapeMismatch,
               {"input 2 (ends)", "expected 2 values", "got 1"});
  expect_error("Slice", {}, {floats({4, 5}), ints({0}), ints({2}), ints({2})}, ErrorCode::kOutOfRange,
               {"input 3 (axes)", "axis 2"});
  expect_error("Slice", {}, {floats({4, 5}), ints({0, 0}), ints({2, 2}), ints({1, -1})},
               ErrorCode::kInvalidArgument, {"input 3 (axes)", "repeated"});
}

TEST(ShapeOpsErrors, GatherIndexOutOfRange) {
  expect_error("Gather", {}, {floats({3, 2}), ints({0, 3})}, ErrorCode::kOutOfRange,
               {"Gather", "input 1 (indices)", "index 3", "axis 0 of size 3", "-3 <= index < 3"});
  expect_error("Gather", {{"axis", -1}}, {floats({3, 2}), ints({-3})}, ErrorCode::kOutOfRange,
               {"input 1 (indices)", "index -3", "axis 1 of size 2"});
  expect_error("Gather", {}, {floats({0, 2}), ints({0})}, ErrorCode::kOutOfRange, {"index 0", "size 0"});
  expect_error("Gather", {}, {floats({3, 2}), floats({1})}, ErrorCode::kTypeMismatch,
               {"input 1 (indices)", "got float32"});
  expect_error("Gather", {{"axis", 2}}, {floats({3, 2}), ints({0})}, ErrorCode::kOutOfRange,
               {"attribute 'axis'", "axis 2"});

  const auto idx = Tensor::from_vector<int64_t>({0, 5}, Shape{1, 2});
  expect_error("GatherElements", {{"axis", 1}}, {floats({2, 3}), idx}, ErrorCode::kOutOfRange,
               {"GatherElements", "input 1 (indices)", "index 5", "axis 1 of size 3"});
  expect_error("GatherElements", {}, {floats({2, 3}), ints({0})}, ErrorCode::kShapeMismatch,
               {"input 1 (indices)", "expected rank 2", "got shape (1,)"});
  expect_error("GatherElements", {{"axis", 0}}, {floats({2, 3}), Tensor::zeros({1, 4}, DType::kInt64)},
               ErrorCode::kShapeMismatch, {"input 1 (indices)", "exceeds", "dimension 1", "(4 > 3)"});
}

TEST(ShapeOpsErrors, GatherNDShapes) {
  const auto pairs = Tensor::from_vector<int64_t>({0, 1, 1, -3}, Shape{2, 2});
  expect_error("GatherND", {}, {floats({2, 2}), pairs}, ErrorCode::kOutOfRange,
               {"GatherND", "input 1 (indices)", "index -3", "axis 1 of size 2"});
  expect_error("GatherND", {}, {floats({2, 2}), Tensor::zeros({2, 3}, DType::kInt64)},
               ErrorCode::kShapeMismatch, {"input 1 (indices)", "[1, 2]", "got 3"});
  expect_error("GatherND", {{"batch_dims", 2}}, {floats({2, 2}), Tensor::zeros({2, 1}, DType::kInt64)},
               ErrorCode::kInvalidArgument, {"attribute 'batch_dims'", "less than the ranks"});
  expect_error("GatherND", {{"batch_dims", 1}}, {floats({2, 3}), Tensor::zeros({3, 1}, DType::kInt64)},
               ErrorCode::kShapeMismatch, {"input 1 (indices)", "batch dimension 0 is 3, expected 2"});
  expect_bad_attr("GatherND", {{"batch_dims", -1}}, {"batch_dims", "expected >= 0, got -1"});
}

TEST(ShapeOpsErrors, ScatterShapesAndIndices) {
  const auto idx = Tensor::from_vector<int64_t>({0, 4}, Shape{1, 2});
  expect_error("ScatterElements", {{"axis", 1}}, {floats({2, 3}), idx, floats({1, 2})},
               ErrorCode::kOutOfRange,
               {"ScatterElements", "input 1 (indices)", "index 4", "axis 1 of size 3"});
  expect_error("ScatterElements", {}, {floats({2, 3}), Tensor::zeros({1, 2}, DType::kInt64), floats({2, 2})},
               ErrorCode::kShapeMismatch, {"input 2 (updates)", "expected shape (1, 2)", "got (2, 2)"});
  expect_error("ScatterElements", {}, {floats({2, 3}), Tensor::zeros({1, 2}, DType::kInt64), ints({1, 2})},
               ErrorCode::kTypeMismatch, {"input 2 (updates)", "expected dtype float32"});
  expect_bad_attr("ScatterElements", {{"reduction", "sum"}},
                  {"'reduction'", "none, add, mul, max, min", "'sum'"});

  const auto rows = Tensor::from_vector<int64_t>({1, 2}, Shape{2, 1});
  expect_error("ScatterND", {}, {floats({2, 3}), rows, floats({2, 3})}, ErrorCode::kOutOfRange,
               {"ScatterND", "input 1 (indices)", "index 2", "axis 0 of size 2"});
  expect_error("ScatterND", {}, {floats({2, 3}), rows, floats({2, 2})}, ErrorCode::kShapeMismatch,
               {"input 2 (updates)", "expected shape (2, 3)", "got (2, 2)"});
  expect_error("ScatterND", {}, {floats({2, 3}), Tensor::zeros({1, 3}, DType::kInt64), floats({1})},
               ErrorCode::kShapeMismatch, {"input 1 (indices)", "[1, 2]", "got 3"});
}

TEST(ShapeOpsErrors, PadArguments) {
  expect_bad_attr("Pad", {{"mode", "symmetric"}},
                  {"Pad attribute 'mode'", "constant, reflect, edge, wrap", "'symmetric'"});
  expect_error("Pad", {}, {floats({2, 3}), ints({1, 1})}, ErrorCode::kShapeMismatch,
               {"Pad", "input 1 (pads)", "expected 4 values", "got 2"});
  expect_error("Pad", {}, {floats({2, 3}), ints({0, -2, 0, -2})}, ErrorCode::kShapeMismatch,
               {"input 1 (pads)", "axis 1", "remove more than its 3 elements"});
  expect_error("Pad", {{"mode", "reflect"}}, {floats({0, 3}), ints({1, 0, 0, 0})},
               ErrorCode::kInvalidArgument, {"mode 'reflect'", "axis 0", "no elements"});
  expect_error("Pad", {}, {floats({2, 3}), ints({0, 0, 0, 0}), ints({1})}, ErrorCode::kTypeMismatch,
               {"input 2 (constant_value)", "expected dtype float32"});
  expect_error("Pad", {}, {floats({2, 3}), ints({1, 1}), Tensor(), ints({2})}, ErrorCode::kOutOfRange,
               {"input 3 (axes)", "axis 2"});
}

TEST(ShapeOpsErrors, ExpandTileDepthSpace) {
  expect_error("Expand", {}, {floats({2, 3}), ints({4, 3, 2})}, ErrorCode::kShapeMismatch,
               {"Expand", "input 1 (shape)", "(2, 3)", "(4, 3, 2)", "cannot be broadcast"});
  expect_error("Expand", {}, {floats({2, 3}), ints({-1, 3})}, ErrorCode::kInvalidArgument,
               {"input 1 (shape)", "values >= 0, got -1"});
  expect_error("Tile", {}, {floats({2, 3}), ints({2})}, ErrorCode::kShapeMismatch,
               {"Tile", "input 1 (repeats)", "expected 2 values", "got 1"});
  expect_error("DepthToSpace", {{"blocksize", 2}}, {floats({1, 6, 2, 2})}, ErrorCode::kShapeMismatch,
               {"DepthToSpace", "input 0 (input)", "channels (6", "multiple of blocksize^2 = 4"});
  expect_error("DepthToSpace", {{"blocksize", 2}}, {floats({4, 2, 2})}, ErrorCode::kShapeMismatch,
               {"input 0 (input)", "expected 4-D", "got shape (4, 2, 2)"});
  expect_error("SpaceToDepth", {{"blocksize", 3}}, {floats({1, 1, 6, 4})}, ErrorCode::kShapeMismatch,
               {"SpaceToDepth", "dimension 3", "multiple of blocksize 3"});
  expect_bad_attr("DepthToSpace", {{"blocksize", 2}, {"mode", "RCD"}}, {"'mode'", "DCR or CRD", "'RCD'"});
  expect_bad_attr("SpaceToDepth", {{"blocksize", 0}}, {"'blocksize'", "expected 1 <= blocksize", "got 0"});
}

// Graph typing passes shapes with unknown (-1) dimensions; the ops keep what they can.
TEST(ShapeOpsInference, PartlyUnknownShapes) {
  const Tensor shape = ints({0, -1});
  const auto& reshape = OpRegistry::global().get("Reshape");
  auto out = reshape.infer_types(
      reshape.bind({}), {TensorInfo{DType::kFloat32, Shape{-1, 3, 4}}, TensorInfo{DType::kInt64, Shape{2}}},
      {nullptr, &shape});
  EXPECT_EQ(out[0].shape, (Shape{-1, -1}));

  const auto& concat = OpRegistry::global().get("Concat");
  out =
      concat.infer_types(concat.bind({{"axis", 0}}),
                         {TensorInfo{DType::kInt8, Shape{-1, 3}}, TensorInfo{DType::kInt8, Shape{2, 3}}}, {});
  EXPECT_EQ(out[0].shape, (Shape{-1, 3}));
  EXPECT_EQ(out[0].dtype, DType::kInt8);

  const auto& shape_op = OpRegistry::global().get("Shape");
  out =
      shape_op.infer_types(shape_op.bind({{"start", 1}}), {TensorInfo{DType::kFloat32, Shape{-1, 3, 4}}}, {});
  EXPECT_EQ(out[0].shape, (Shape{2}));
  EXPECT_EQ(out[0].dtype, DType::kInt64);

  // The values of a shape input must be known.
  try {
    reshape.infer_types(reshape.bind({}),
                        {TensorInfo{DType::kFloat32, Shape{6}}, TensorInfo{DType::kInt64, Shape{2}}}, {});
    ADD_FAILURE() << "expected kUnsupported";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << e.what();
  }
}

}  // namespace
}  // namespace kiln::ops
