// Bad input to RNN, GRU and LSTM: each must throw a kiln::Error with the right code whose message
// names the op, the input or attribute, and the expected and actual values. Plus the output
// shapes of both layouts and of partial outputs.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "op_test_util.h"

namespace kiln::ops {
namespace {

// X, W and R of a one-layer `op` with gates * hidden rows: seq 3, batch 2, input 5, hidden 4.
std::vector<Tensor> minimal_inputs(const std::string& op, int64_t dirs = 1, DType dtype = DType::kFloat32) {
  const int64_t gates = op == "RNN" ? 1 : op == "GRU" ? 3 : 4;
  return {floats(Shape{3, 2, 5}, dtype), floats(Shape{dirs, gates * 4, 5}, dtype),
          floats(Shape{dirs, gates * 4, 4}, dtype)};
}

Tensor int32s(const std::vector<int32_t>& values) {
  return Tensor::from_vector<int32_t>(values, Shape{static_cast<int64_t>(values.size())});
}

const char* const kOps[] = {"RNN", "GRU", "LSTM"};

TEST(RecurrentErrors, XMustBe3DFloat) {
  for (const char* op : kOps) {
    SCOPED_TRACE(op);
    auto in = minimal_inputs(op);
    in[0] = floats(Shape{3, 10});
    expect_error(op, {}, in, ErrorCode::kShapeMismatch,
                 {op, "input 0 (X)", "expected 3-D", "got shape (3, 10)"});
    in = minimal_inputs(op);
    in[0] = Tensor::zeros(Shape{3, 2, 5}, DType::kInt32);
    expect_error(op, {}, in, ErrorCode::kTypeMismatch, {op, "input 0 (X)", "float32", "got int32"});
  }
}

TEST(RecurrentErrors, WeightsMustMatchXDtype) {
  auto in = minimal_inputs("LSTM");
  in[2] = floats(Shape{1, 16, 4}, DType::kFloat64);
  expect_error("LSTM", {}, in, ErrorCode::kTypeMismatch,
               {"LSTM", "input 2 (R)", "expected dtype float32", "input 0 (X)", "got float64"});
}

TEST(RecurrentErrors, WeightShapesNameTheirMeaning) {
  auto in = minimal_inputs("LSTM");
  in[1] = floats(Shape{1, 12, 5});
  expect_error(
      "LSTM", {}, in, ErrorCode::kShapeMismatch,
      {"LSTM", "input 1 (W)", "(num_directions, 4*hidden_size, input_size) = (1, 16, 5)", "got (1, 12, 5)"});
  in = minimal_inputs("GRU");
  in[1] = floats(Shape{1, 12, 3});
  expect_error(
      "GRU", {}, in, ErrorCode::kShapeMismatch,
      {"GRU", "input 1 (W)", "(num_directions, 3*hidden_size, input_size) = (1, 12, 5)", "got (1, 12, 3)"});
  in = minimal_inputs("RNN");
  in[2] = floats(Shape{1, 4, 4, 1});
  expect_error("RNN", {}, in, ErrorCode::kShapeMismatch,
               {"RNN", "input 2 (R)", "expected 3-D", "(1, 4, 4, 1)"});
}

TEST(RecurrentErrors, BidirectionalNeedsTwoWeightSets) {
  for (const char* op : kOps) {
    SCOPED_TRACE(op);
    expect_error(op, {{"direction", "bidirectional"}}, minimal_inputs(op, 1), ErrorCode::kShapeMismatch,
                 {op, "input 1 (W)", "num_directions", "= (2, ", "got (1, "});
  }
}

TEST(RecurrentErrors, HiddenSizeAttributeMustMatchR) {
  auto in = minimal_inputs("GRU");
  expect_error("GRU", {{"hidden_size", 5}}, in, ErrorCode::kShapeMismatch,
               {"GRU", "input 1 (W)", "= (1, 15, 5)", "got (1, 12, 5)"});
  expect_bad_attr("GRU", {{"hidden_size", 0}}, {"GRU", "hidden_size", "expected > 0", "got 0"});
}

TEST(RecurrentErrors, BiasShape) {
  auto in = minimal_inputs("LSTM");
  in.push_back(floats(Shape{1, 16}));
  expect_error("LSTM", {}, in, ErrorCode::kShapeMismatch,
               {"LSTM", "input 3 (B)", "(num_directions, 8*hidden_size) = (1, 32)", "got (1, 16)"});
}

TEST(RecurrentErrors, SequenceLens) {
  auto in = minimal_inputs("RNN");
  in.push_back(Tensor());
  in.push_back(floats(Shape{2}));
  expect_error("RNN", {}, in, ErrorCode::kTypeMismatch,
               {"RNN", "input 4 (sequence_lens)", "int32", "got float32"});
  in[4] = int32s({3, 3, 3});
  expect_error("RNN", {}, in, ErrorCode::kShapeMismatch,
               {"RNN", "input 4 (sequence_lens)", "(batch_size) = (2,)", "got (3,)"});
  in[4] = int32s({3, 4});
  expect_error("RNN", {}, in, ErrorCode::kOutOfRange,
               {"RNN", "input 4 (sequence_lens)", "[0, 3]", "got 4 for batch entry 1"});
  in[4] = int32s({-1, 2});
  expect_error("RNN", {}, in, ErrorCode::kOutOfRange, {"RNN", "input 4 (sequence_lens)", "got -1"});
}

TEST(RecurrentErrors, InitialStateShapesFollowLayout) {
  auto in = minimal_inputs("LSTM");
  in.resize(5);
  in.push_back(floats(Shape{2, 1, 4}));  // the layout-1 shape given to layout 0
  expect_error("LSTM", {}, in, ErrorCode::kShapeMismatch,
               {"LSTM", "input 5 (initial_h)", "(num_directions, batch_size, hidden_size) = (1, 2, 4)",
                "got (2, 1, 4)"});
  in = minimal_inputs("LSTM");
  in[0] = floats(Shape{2, 3, 5});  // batch-major: batch 2, seq 3
  in.resize(6);
  in.push_back(floats(Shape{1, 2, 4}));
  expect_error("LSTM", {{"layout", 1}}, in, ErrorCode::kShapeMismatch,
               {"LSTM", "input 6 (initial_c)", "(batch_size, num_directions, hidden_size) = (2, 1, 4)",
                "got (1, 2, 4)"});
}

TEST(RecurrentErrors, PeepholeShape) {
  auto in = minimal_inputs("LSTM");
  in.resize(7);
  in.push_back(floats(Shape{1, 16}));
  expect_error("LSTM", {}, in, ErrorCode::kShapeMismatch,
               {"LSTM", "input 7 (P)", "(num_directions, 3*hidden_size) = (1, 12)", "got (1, 16)"});
}

TEST(RecurrentErrors, BadAttributes) {
  for (const char* op : kOps) {
    SCOPED_TRACE(op);
    expect_bad_attr(op, {{"direction", "backward"}},
                    {op, "direction", "forward, reverse, bidirectional", "got 'backward'"});
    expect_bad_attr(op, {{"layout", 2}}, {op, "layout", "expected 0 or 1", "got 2"});
    expect_bad_attr(op, {{"clip", 0.0}}, {op, "clip", "expected a threshold > 0", "got 0"});
    expect_bad_attr(op, {{"activations", std::vector<std::string>{"Tanh", "Swish"}}},
                    {op, "activations", "Relu, Tanh, Sigmoid", "got 'Swish'"});
  }
  expect_bad_attr("GRU", {{"linear_before_reset", 3}},
                  {"GRU", "linear_before_reset", "expected 0 or 1", "got 3"});
  expect_bad_attr("LSTM", {{"input_forget", -1}}, {"LSTM", "input_forget", "expected 0 or 1", "got -1"});
  expect_bad_attr("RNN", {{"input_forget", 1}}, {"RNN", "unknown attribute 'input_forget'"});
}

TEST(RecurrentErrors, ActivationCount) {
  expect_error("LSTM", {{"activations", std::vector<std::string>{"Sigmoid", "Tanh"}}}, minimal_inputs("LSTM"),
               ErrorCode::kInvalidArgument, {"LSTM", "activations", "expected 3 names", "or 6", "got 2"});
  expect_error(
      "GRU",
      {{"direction", "bidirectional"}, {"activations", std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}}},
      minimal_inputs("GRU", 2), ErrorCode::kInvalidArgument,
      {"GRU", "activations", "expected 2 names", "or 4", "got 3"});
}

TEST(RecurrentErrors, OutputCount) {
  expect_error("GRU", {}, minimal_inputs("GRU"), ErrorCode::kInvalidArgument,
               {"GRU", "expected 1 to 2 outputs, got 3"}, 3);
  expect_error("LSTM", {}, minimal_inputs("LSTM"), ErrorCode::kInvalidArgument,
               {"LSTM", "expected 1 to 3 outputs, got 4"}, 4);
}

TEST(RecurrentErrors, MissingRequiredInput) {
  auto in = minimal_inputs("RNN");
  in.pop_back();
  expect_error("RNN", {}, in, ErrorCode::kInvalidArgument, {"RNN", "expected 3 to 6 inputs, got 2"});
  in = minimal_inputs("LSTM");
  in[1] = Tensor();
  expect_error("LSTM", {}, in, ErrorCode::kInvalidArgument, {"LSTM", "input 1 (W) is required but missing"});
}

TEST(RecurrentShapes, LayoutsAndOutputs) {
  auto in = minimal_inputs("LSTM", 2);
  auto out = run("LSTM", {{"direction", "bidirectional"}}, in);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].shape(), (Shape{3, 2, 2, 4}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 2, 4}));
  EXPECT_EQ(out[2].shape(), (Shape{2, 2, 4}));
  in[0] = floats(Shape{2, 3, 5});  // batch 2, seq 3
  out = run("LSTM", {{"direction", "bidirectional"}, {"layout", 1}}, in, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2, 4}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 2, 4}));
  out = run("GRU", {}, minimal_inputs("GRU", 1, DType::kFloat16), 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].dtype(), DType::kFloat16);
  EXPECT_EQ(out[0].shape(), (Shape{3, 1, 2, 4}));
}

}  // namespace
}  // namespace kiln::ops
