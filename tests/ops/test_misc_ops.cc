// Bad input to CumSum/CumProd, Einsum, the bitwise ops, Compress, ReverseSequence, Unique and
// NonMaxSuppression: each must throw a kiln::Error with the right code whose message names the
// op, the input or attribute, and the expected and actual values. Plus inference of the ops whose
// output shapes depend on input values, with those values known and not.
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

Tensor int64s(const std::vector<int64_t>& values, std::optional<Shape> shape = std::nullopt) {
  return Tensor::from_vector<int64_t>(values, shape.value_or(Shape{static_cast<int64_t>(values.size())}));
}

Tensor bools(const std::vector<bool>& values) {
  Tensor t = Tensor::empty(Shape{static_cast<int64_t>(values.size())}, DType::kBool);
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i];
  return t;
}

Tensor axis_scalar(int64_t axis) {
  return int64s({axis}, Shape{});
}

// Expects inference to report that it needs values only known at run time (kUnsupported).
void expect_values_needed(const std::string& op, const AttrMap& attrs,
                          const std::vector<std::optional<TensorInfo>>& inputs, const std::string& input) {
  const OpSchema& schema = OpRegistry::global().get(op);
  try {
    schema.infer_types(schema.bind(attrs), inputs, std::vector<const Tensor*>(inputs.size(), nullptr));
    ADD_FAILURE() << op << ": expected kUnsupported, got an inferred shape";
  } catch (const Error& e) {
    expect_message(e, ErrorCode::kUnsupported, {op, input, "not known"});
  }
}

// ---- CumSum / CumProd ----

TEST(CumulativeErrors, AxisOutOfRange) {
  for (const char* op : {"CumSum", "CumProd"}) {
    SCOPED_TRACE(op);
    expect_error(op, {}, {floats(Shape{2, 3}), axis_scalar(2)}, ErrorCode::kOutOfRange,
                 {op, "input 1 (axis)", "axis 2 is out of range", "rank 2", "-2 <= axis < 2"});
    expect_error(op, {}, {floats(Shape{2, 3}), axis_scalar(-3)}, ErrorCode::kOutOfRange,
                 {op, "input 1 (axis)", "axis -3"});
    expect_error(op, {}, {Tensor::scalar(1, DType::kFloat32), axis_scalar(0)}, ErrorCode::kOutOfRange,
                 {op, "input 1 (axis)", "rank 0"});
  }
}

TEST(CumulativeErrors, AxisMustBeOneInteger) {
  expect_error("CumSum", {}, {floats(Shape{2, 3}), int64s({0, 1})}, ErrorCode::kShapeMismatch,
               {"CumSum", "input 1 (axis)", "expected a scalar", "got shape (2,)"});
  expect_error("CumProd", {}, {floats(Shape{2, 3}), Tensor::scalar(0, DType::kFloat32)},
               ErrorCode::kTypeMismatch,
               {"CumProd", "input 1 (axis)", "expected one of {int32, int64}", "got float32"});
}

TEST(CumulativeErrors, DataDtypes) {
  for (DType bad : {DType::kInt8, DType::kUInt8, DType::kBool}) {
    expect_error("CumSum", {}, {Tensor::zeros(Shape{3}, bad), axis_scalar(0)}, ErrorCode::kTypeMismatch,
                 {"CumSum", "input 0 (x)", std::string("got ") + dtype_name(bad)});
  }
}

TEST(CumulativeErrors, FlagsAreZeroOrOne) {
  expect_bad_attr("CumSum", {{"exclusive", 2}}, {"CumSum", "exclusive", "expected 0 or 1", "got 2"});
  expect_bad_attr("CumProd", {{"reverse", -1}}, {"CumProd", "reverse", "expected 0 or 1", "got -1"});
}

TEST(CumulativeInference, AxisValuesAreNotNeeded) {
  const OpSchema& schema = OpRegistry::global().get("CumSum");
  const auto out = schema.infer_types(
      schema.bind({}), {TensorInfo{DType::kFloat32, Shape{2, 3}}, TensorInfo{DType::kInt32, Shape{}}},
      {nullptr, nullptr});
  EXPECT_EQ(out.at(0).shape, Shape({2, 3}));
}

// ---- Einsum ----

TEST(EinsumErrors, BadEquationSyntax) {
  expect_bad_attr("Einsum", {{"equation", "ij,j#->i"}},
                  {"Einsum", "equation", "unexpected character '#'", "j#"});
  expect_bad_attr("Einsum", {{"equation", "...i...->i"}}, {"Einsum", "equation", "more than one ellipsis"});
  expect_bad_attr("Einsum", {{"equation", "i.j->i"}}, {"Einsum", "equation", "not part of an ellipsis"});
  expect_bad_attr("Einsum", {{"equation", "i->i->i"}}, {"Einsum", "equation", "expected one output term"});
  expect_bad_attr("Einsum", {{"equation", "i,j->i,j"}}, {"Einsum", "equation", "expected one output term"});
  expect_bad_attr("Einsum", {}, {"Einsum", "required attribute 'equation'"});
}

TEST(EinsumErrors, TermsDoNotFitTheInputs) {
  expect_error("Einsum", {{"equation", "ij,jk->ik"}}, {floats(Shape{2, 3})}, ErrorCode::kInvalidArgument,
               {"Einsum", "equation", "2 input terms for 1 inputs"});
  expect_error("Einsum", {{"equation", "ij->i"}}, {floats(Shape{2, 3, 4})}, ErrorCode::kShapeMismatch,
               {"Einsum", "input 0 (Inputs)", "term 'ij'", "expects rank 2", "got shape (2, 3, 4)"});
  expect_error("Einsum", {{"equation", "i,ij...->j"}}, {floats(Shape{2}), floats(Shape{2})},
               ErrorCode::kShapeMismatch,
               {"Einsum", "input 1 (Inputs)", "term 'ij...'", "expects rank >= 2", "got shape (2,)"});
}

TEST(EinsumErrors, LabelSizesDisagree) {
  expect_error("Einsum", {{"equation", "ij,jk"}}, {floats(Shape{2, 3}), floats(Shape{4, 5})},
               ErrorCode::kShapeMismatch, {"Einsum", "input 1 (Inputs)", "label 'j' has size 4", "size 3"});
  expect_error("Einsum", {{"equation", "ii->i"}}, {floats(Shape{2, 3})}, ErrorCode::kShapeMismatch,
               {"Einsum", "input 0 (Inputs)", "label 'i' repeats", "different sizes", "(2, 3)"});
  expect_error("Einsum", {{"equation", "...i,...i"}}, {floats(Shape{2, 3}), floats(Shape{4, 3})},
               ErrorCode::kShapeMismatch, {"Einsum", "input 1 (Inputs)", "ellipsis axis 0", "size 4"});
}

TEST(EinsumErrors, BadOutputTerm) {
  expect_error("Einsum", {{"equation", "ij->ik"}}, {floats(Shape{2, 3})}, ErrorCode::kInvalidArgument,
               {"Einsum", "output label 'k' is in no input term"});
  expect_error("Einsum", {{"equation", "ij->ii"}}, {floats(Shape{2, 3})}, ErrorCode::kInvalidArgument,
               {"Einsum", "output label 'i' repeats"});
  expect_error("Einsum", {{"equation", "...ij->ij"}}, {floats(Shape{4, 2, 3})}, ErrorCode::kInvalidArgument,
               {"Einsum", "stand for 1 axes", "'ij' has no '...'"});
}

TEST(EinsumErrors, Dtypes) {
  expect_error("Einsum", {{"equation", "i,i"}}, {floats(Shape{2}), floats(Shape{2}, DType::kFloat64)},
               ErrorCode::kTypeMismatch,
               {"Einsum", "input 1 (Inputs)", "expected dtype float32", "got float64"});
  expect_error("Einsum", {{"equation", "i->i"}}, {Tensor::zeros(Shape{2}, DType::kBool)},
               ErrorCode::kTypeMismatch, {"Einsum", "input 0 (Inputs)", "got bool"});
}

TEST(EinsumInference, UnknownDimensionsStayUnknown) {
  const OpSchema& schema = OpRegistry::global().get("Einsum");
  const auto out = schema.infer_types(
      schema.bind({{"equation", "bij,bjk->bik"}}),
      {TensorInfo{DType::kFloat32, Shape{-1, 2, 3}}, TensorInfo{DType::kFloat32, Shape{5, 3, -1}}},
      {nullptr, nullptr});
  EXPECT_EQ(out.at(0).shape, Shape({5, 2, -1}));
}

// ---- Bitwise ----

TEST(BitwiseErrors, IntegersOnly) {
  for (const char* op : {"BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift"}) {
    SCOPED_TRACE(op);
    const AttrMap attrs = std::string(op) == "BitShift" ? AttrMap{{"direction", "LEFT"}} : AttrMap{};
    expect_error(op, attrs, {floats(Shape{2}), floats(Shape{2})}, ErrorCode::kTypeMismatch,
                 {op, "input 0", "expected one of {int8, uint8, int16, uint16, int32, uint32, int64, uint64}",
                  "got float32"});
    expect_error(op, attrs, {Tensor::zeros(Shape{2}, DType::kInt32), Tensor::zeros(Shape{2}, DType::kInt64)},
                 ErrorCode::kTypeMismatch, {op, "input 1", "expected dtype int32", "got int64"});
  }
  expect_error("BitwiseNot", {}, {Tensor::zeros(Shape{2}, DType::kBool)}, ErrorCode::kTypeMismatch,
               {"BitwiseNot", "input 0 (X)", "got bool"});
}

TEST(BitwiseErrors, ShapesMustBroadcast) {
  expect_error("BitwiseAnd", {},
               {Tensor::zeros(Shape{2, 3}, DType::kInt32), Tensor::zeros(Shape{4}, DType::kInt32)},
               ErrorCode::kShapeMismatch, {"BitwiseAnd", "input 1 (B)", "(2, 3)", "(4,)"});
}

TEST(BitwiseErrors, ShiftDirection) {
  expect_bad_attr("BitShift", {{"direction", "UP"}},
                  {"BitShift", "direction", "expected LEFT or RIGHT", "'UP'"});
  expect_bad_attr("BitShift", {}, {"BitShift", "required attribute 'direction'"});
}

// ---- Compress ----

TEST(CompressErrors, Condition) {
  expect_error("Compress", {{"axis", 0}}, {floats(Shape{3, 2}), Tensor::zeros(Shape{3}, DType::kInt32)},
               ErrorCode::kTypeMismatch,
               {"Compress", "input 1 (condition)", "expected one of {bool}", "got int32"});
  expect_error("Compress", {{"axis", 0}}, {floats(Shape{3, 2}), Tensor::zeros(Shape{3, 1}, DType::kBool)},
               ErrorCode::kShapeMismatch,
               {"Compress", "input 1 (condition)", "expected 1-D", "got shape (3, 1)"});
  expect_error("Compress", {{"axis", 1}}, {floats(Shape{3, 2}), bools({false, true, true})},
               ErrorCode::kOutOfRange, {"Compress", "input 1 (condition)", "true at index 2", "2 entries"});
}

TEST(CompressErrors, AxisOutOfRange) {
  expect_error("Compress", {{"axis", 2}}, {floats(Shape{3, 2}), bools({true})}, ErrorCode::kOutOfRange,
               {"Compress", "attribute 'axis'", "axis 2 is out of range", "rank 2"});
}

TEST(CompressInference, ShapeFromTheConditionValues) {
  const OpSchema& schema = OpRegistry::global().get("Compress");
  const Tensor condition = bools({true, false, true, true});
  const auto out = schema.infer_types(
      schema.bind({{"axis", -1}}),
      {TensorInfo{DType::kFloat32, Shape{-1, 4}}, TensorInfo{DType::kBool, Shape{4}}}, {nullptr, &condition});
  EXPECT_EQ(out.at(0).shape, Shape({-1, 3}));
  expect_values_needed("Compress", {},
                       {TensorInfo{DType::kFloat32, Shape{2, 4}}, TensorInfo{DType::kBool, Shape{4}}},
                       "input 1 (condition)");
}

// ---- ReverseSequence ----

TEST(ReverseSequenceErrors, Shapes) {
  expect_error("ReverseSequence", {}, {floats(Shape{4}), int64s({1})}, ErrorCode::kShapeMismatch,
               {"ReverseSequence", "input 0 (input)", "expected rank >= 2", "got shape (4,)"});
  expect_error(
      "ReverseSequence", {}, {floats(Shape{4, 3}), int64s({1, 2})}, ErrorCode::kShapeMismatch,
      {"ReverseSequence", "input 1 (sequence_lens)", "one length per batch entry", "(3", "got shape (2,)"});
  expect_error("ReverseSequence", {},
               {floats(Shape{4, 3}), Tensor::from_vector<int32_t>({1, 1, 1}, Shape{3})},
               ErrorCode::kTypeMismatch, {"ReverseSequence", "input 1 (sequence_lens)", "got int32"});
}

TEST(ReverseSequenceErrors, LengthsOutOfRange) {
  expect_error(
      "ReverseSequence", {}, {floats(Shape{4, 3}), int64s({1, 5, 2})}, ErrorCode::kOutOfRange,
      {"ReverseSequence", "input 1 (sequence_lens)", "expected lengths in [0, 4]", "got 5", "index 1"});
  expect_error("ReverseSequence", {}, {floats(Shape{4, 3}), int64s({1, -1, 2})}, ErrorCode::kOutOfRange,
               {"ReverseSequence", "input 1 (sequence_lens)", "got -1"});
}

TEST(ReverseSequenceErrors, Axes) {
  expect_bad_attr("ReverseSequence", {{"batch_axis", 2}},
                  {"ReverseSequence", "batch_axis", "expected 0 or 1", "got 2"});
  expect_error("ReverseSequence", {{"batch_axis", 0}, {"time_axis", 0}},
               {floats(Shape{4, 3}), int64s({1, 1, 1, 1})}, ErrorCode::kInvalidArgument,
               {"ReverseSequence", "'batch_axis' and 'time_axis' must differ", "both are 0"});
}

// ---- Unique ----

TEST(UniqueErrors, AxisAndAttributes) {
  expect_error("Unique", {{"axis", 2}}, {floats(Shape{3, 2})}, ErrorCode::kOutOfRange,
               {"Unique", "attribute 'axis'", "axis 2 is out of range", "rank 2"});
  expect_bad_attr("Unique", {{"sorted", 3}}, {"Unique", "sorted", "expected 0 or 1", "got 3"});
  expect_error("Unique", {}, {floats(Shape{3})}, ErrorCode::kInvalidArgument,
               {"Unique", "expected 1 to 4 outputs", "got 5"}, 5);
}

TEST(UniqueInference, ShapeFromTheValues) {
  const OpSchema& schema = OpRegistry::global().get("Unique");
  const Tensor x = Tensor::from_vector<float>({1, 0, 0, 1, 0, 0, 2, 3, 4}, Shape{3, 3});
  const auto out =
      schema.infer_types(schema.bind({{"axis", 0}}), {TensorInfo{DType::kFloat32, Shape{3, 3}}}, {&x}, 3);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape, Shape({2, 3}));
  EXPECT_EQ(out[1].shape, Shape({2}));
  EXPECT_EQ(out[2].shape, Shape({3}));
  expect_values_needed("Unique", {}, {TensorInfo{DType::kFloat32, Shape{3, 3}}}, "input 0 (X)");
}

// ---- NonMaxSuppression ----

TEST(NonMaxSuppressionErrors, BoxAndScoreShapes) {
  expect_error(
      "NonMaxSuppression", {}, {floats(Shape{1, 5, 3}), floats(Shape{1, 2, 5})}, ErrorCode::kShapeMismatch,
      {"NonMaxSuppression", "input 0 (boxes)", "expected shape (batches, boxes, 4)", "got (1, 5, 3)"});
  expect_error("NonMaxSuppression", {}, {floats(Shape{1, 5, 4}), floats(Shape{2, 2, 5})},
               ErrorCode::kShapeMismatch,
               {"NonMaxSuppression", "input 1 (scores)", "expected shape (1, classes, 5)", "got (2, 2, 5)"});
  expect_error("NonMaxSuppression", {}, {floats(Shape{5, 4}), floats(Shape{1, 2, 5})},
               ErrorCode::kShapeMismatch,
               {"NonMaxSuppression", "input 0 (boxes)", "expected 3-D", "got shape (5, 4)"});
}

TEST(NonMaxSuppressionErrors, Dtypes) {
  expect_error("NonMaxSuppression", {}, {floats(Shape{1, 5, 4}, DType::kFloat64), floats(Shape{1, 2, 5})},
               ErrorCode::kTypeMismatch,
               {"NonMaxSuppression", "input 0 (boxes)", "expected one of {float32}", "got float64"});
  expect_error(
      "NonMaxSuppression", {},
      {floats(Shape{1, 5, 4}), floats(Shape{1, 2, 5}), Tensor::from_vector<int32_t>({3}, Shape{1})},
      ErrorCode::kTypeMismatch,
      {"NonMaxSuppression", "input 2 (max_output_boxes_per_class)", "expected one of {int64}", "got int32"});
}

TEST(NonMaxSuppressionErrors, Thresholds) {
  expect_error("NonMaxSuppression", {},
               {floats(Shape{1, 5, 4}), floats(Shape{1, 2, 5}), int64s({3}),
                Tensor::from_vector<float>({1.5f}, Shape{1})},
               ErrorCode::kInvalidArgument,
               {"NonMaxSuppression", "input 3 (iou_threshold)", "[0, 1]", "got 1.5"});
  expect_error(
      "NonMaxSuppression", {}, {floats(Shape{1, 5, 4}), floats(Shape{1, 2, 5}), int64s({3, 4})},
      ErrorCode::kShapeMismatch,
      {"NonMaxSuppression", "input 2 (max_output_boxes_per_class)", "expected a scalar", "got shape (2,)"});
  expect_bad_attr("NonMaxSuppression", {{"center_point_box", 2}},
                  {"NonMaxSuppression", "center_point_box", "expected 0 or 1", "got 2"});
}

TEST(NonMaxSuppressionInference, ValuesNeeded) {
  expect_values_needed(
      "NonMaxSuppression", {},
      {TensorInfo{DType::kFloat32, Shape{1, 5, 4}}, TensorInfo{DType::kFloat32, Shape{1, 2, 5}}},
      "input 0 (boxes)");
}

TEST(NonMaxSuppression, SelectsByScoreAndOverlap) {
  // Box 1 overlaps box 0 (IoU 0.81 > 0.5) and is dropped; box 2 is apart and kept.
  const Tensor boxes = Tensor::from_vector<float>({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6}, Shape{1, 3, 4});
  const Tensor scores = Tensor::from_vector<float>({0.9f, 0.8f, 0.7f}, Shape{1, 1, 3});
  const auto out = run("NonMaxSuppression", {},
                       {boxes, scores, int64s({3}), Tensor::from_vector<float>({0.5f}, Shape{1})});
  EXPECT_EQ(out.at(0).shape(), Shape({2, 3}));
  EXPECT_EQ(out.at(0).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
}

}  // namespace
}  // namespace kiln::ops
