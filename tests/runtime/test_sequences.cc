// Sequences and optional values through the Predictor: a tensor cut into a sequence, read back by
// position, stacked and counted, checked against the same computation written out in C++; a
// sequence as a model input and output; an optional input given and left empty. Then the errors:
// a position outside the sequence, the wrong kind of input, an empty optional read, a sequence in
// an op that takes tensors, and a plan asked to hold a sequence, with the Predictor usable after.
#include <gtest/gtest.h>

#include "kiln/predictor.hpp"
#include "runtime/plan.h"
#include "runtime_test_util.h"
#include "test_support.h"

namespace kiln::runtime {
namespace {

using namespace testing;

Tensor random_floats(const Shape& shape, uint64_t seed) {
  std::mt19937 rng(static_cast<std::mt19937::result_type>(seed));
  return random_tensor(shape, rng);
}

const TensorInfo kFloatSequence{DType::kFloat32, Shape{}, ops::ValueKind::kSequence};

Tensor int64_scalar(int64_t value) {
  return Tensor::scalar(static_cast<double>(value), DType::kInt64);
}

// x (f32 [?, 4]), at (i64 []) -> rows of x as a sequence of (1, 4) tensors: the row at `at`,
// all rows stacked along a new axis 1 (1, n, 4), and how many there are.
Graph rows_as_sequence() {
  Graph g;
  g.name = "rows";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4}});
  Value* at = g.add_input("at", TensorInfo{DType::kInt64, Shape{}});
  Value* rows = g.add_node("SplitToSequence", {x}, {{"axis", int64_t{0}}}, "split")->outputs[0];
  Value* row = g.add_node("SequenceAt", {rows, at}, {}, "pick")->outputs[0];
  Value* stacked =
      g.add_node("ConcatFromSequence", {rows}, {{"axis", int64_t{1}}, {"new_axis", int64_t{1}}}, "stack")
          ->outputs[0];
  Value* count = g.add_node("SequenceLength", {rows}, {}, "count")->outputs[0];
  Value* doubled = g.add_node("Add", {row, row}, {}, "double")->outputs[0];
  g.set_outputs({doubled, stacked, count});
  return g;
}

TEST(Sequences, ATensorCutIntoASequenceIsReadBackAsTheRowsAre) {
  Predictor p(rows_as_sequence());
  for (int64_t n : {3, 5, 3}) {
    const Tensor x = random_floats(Shape{n, 4}, static_cast<uint64_t>(n));
    for (int64_t at : {int64_t{0}, n - 1, -n}) {
      const std::vector<Tensor> out = p.predict({x, int64_scalar(at)});
      const int64_t row = at < 0 ? at + n : at;
      const std::vector<float> xs = x.to_vector<float>();
      ASSERT_EQ(out[0].shape(), (Shape{1, 4}));
      for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(out[0].to_vector<float>()[j], 2 * xs[row * 4 + j]);
      ASSERT_EQ(out[1].shape(), (Shape{1, n, 4}));
      EXPECT_EQ(out[1].to_vector<float>(), xs);
      EXPECT_EQ(out[2].item(), static_cast<double>(n));
    }
  }
}

TEST(Sequences, APositionOutsideTheSequenceNamesTheNodeAndThePredictorStaysUsable) {
  Predictor p(rows_as_sequence());
  const Tensor x = random_floats(Shape{2, 4}, 1);
  expect_error(ErrorCode::kOutOfRange, {"SequenceAt 'pick'", "position 2 is outside [-2, 1]"}, [&] {
    p.predict({x, int64_scalar(2)});
  });
  EXPECT_EQ(p.predict({x, int64_scalar(1)})[2].item(), 2.0);
}

// seq (a sequence of f32), extra (f32, any shape) -> seq with extra appended, and seq's first tensor.
Graph sequence_in_and_out() {
  Graph g;
  g.name = "append";
  Value* seq = g.add_input("seq", kFloatSequence);
  Value* extra = g.add_input("extra", TensorInfo{DType::kFloat32, Shape{-1}});
  Value* zero = g.add_initializer("zero", int64_scalar(0));
  Value* appended = g.add_node("SequenceInsert", {seq, extra}, {}, "append")->outputs[0];
  Value* first = g.add_node("SequenceAt", {seq, zero}, {}, "first")->outputs[0];
  g.set_outputs({appended, first});
  return g;
}

TEST(Sequences, ASequenceInputOfDifferentShapesComesBackWithATensorAppended) {
  Predictor p(sequence_in_and_out());
  ASSERT_TRUE(p.inputs()[0].sequence);
  EXPECT_TRUE(p.outputs()[0].sequence);
  const Tensor a = random_floats(Shape{2, 3}, 2);
  const Tensor b = random_floats(Shape{5}, 3);
  const Tensor extra = random_floats(Shape{4}, 4);
  for (int round = 0; round < 2; ++round) {
    const std::vector<Tensor> out = p.predict({Tensor::sequence(DType::kFloat32, {a, b}), extra});
    ASSERT_TRUE(out[0].is_sequence());
    const std::vector<Tensor>& elements = out[0].elements();
    ASSERT_EQ(elements.size(), 3u);
    EXPECT_EQ(elements[0].to_vector<float>(), a.to_vector<float>());
    EXPECT_EQ(elements[1].to_vector<float>(), b.to_vector<float>());
    EXPECT_EQ(elements[2].to_vector<float>(), extra.to_vector<float>());
    EXPECT_EQ(out[1].shape(), a.shape());
  }
}

TEST(Sequences, TheWrongKindOfInputIsRefusedByName) {
  Predictor p(sequence_in_and_out());
  const Tensor extra = Tensor::zeros(Shape{2}, DType::kFloat32);
  expect_error(ErrorCode::kTypeMismatch,
               {"input 'seq'", "expected a sequence of float32 tensors", "got float32"}, [&] {
                 p.predict({extra, extra});
               });
  expect_error(ErrorCode::kTypeMismatch, {"input 'seq'", "got a sequence of int64 tensors"}, [&] {
    p.predict({Tensor::sequence(DType::kInt64, {}), extra});
  });
  expect_error(ErrorCode::kTypeMismatch, {"input 'extra'", "got a sequence"}, [&] {
    p.predict({Tensor::sequence(DType::kFloat32, {}), Tensor::sequence(DType::kFloat32, {})});
  });
  expect_error(ErrorCode::kInvalidArgument, {"input 'seq'", "undefined"}, [&] {
    p.predict({Tensor(), extra});
  });
  // An empty sequence is a sequence: SequenceAt then says what is wrong.
  expect_error(ErrorCode::kOutOfRange, {"SequenceAt 'first'", "sequence of 0 tensor(s)"}, [&] {
    p.predict({Tensor::sequence(DType::kFloat32, {}), extra});
  });
  EXPECT_EQ(p.predict({Tensor::sequence(DType::kFloat32, {extra}), extra})[0].elements().size(), 2u);
}

// x (f32 [3]), bias (optional f32 [3]) -> whether bias is given, and bias as given.
Graph optional_input() {
  Graph g;
  g.name = "optional";
  Value* bias = g.add_input("bias", TensorInfo{DType::kFloat32, Shape{3}, ops::ValueKind::kTensor, true});
  Value* given = g.add_node("OptionalHasElement", {bias}, {}, "given")->outputs[0];
  Value* value = g.add_node("OptionalGetElement", {bias}, {}, "get")->outputs[0];
  g.set_outputs({given, value});
  return g;
}

TEST(Sequences, AnOptionalInputMayBeLeftEmptyButNotRead) {
  Graph g = optional_input();
  Predictor p(optional_input());
  EXPECT_TRUE(p.inputs()[0].optional);
  const Tensor bias = Tensor::from_vector(std::vector<float>{1, 2, 3}, Shape{3});
  std::vector<Tensor> out = p.predict({bias});
  EXPECT_EQ(out[0].item(), 1.0);
  EXPECT_EQ(out[1].to_vector<float>(), bias.to_vector<float>());
  expect_error(ErrorCode::kInvalidArgument, {"OptionalGetElement 'get'", "empty optional"},
               [&] { p.predict({Tensor()}); });
  // Without the read, an empty optional is a value like another.
  g.set_outputs({g.find_node("given")->outputs[0]});
  g.remove_node(g.find_node("get"));
  Predictor asks(std::move(g));
  EXPECT_EQ(asks.predict({Tensor()})[0].item(), 0.0);
  EXPECT_EQ(asks.predict({bias})[0].item(), 1.0);
}

TEST(Sequences, AnOpThatTakesTensorsRefusesASequenceAtLoad) {
  Graph g;
  g.name = "misuse";
  Value* seq = g.add_input("seq", kFloatSequence);
  g.set_outputs({g.add_node("Relu", {seq}, {}, "relu")->outputs[0]});
  expect_error(ErrorCode::kInvalidArgument,
               {"'relu'", "Relu: input 0 (X) is a sequence of float32 tensors; Relu takes tensors"},
               [&] { Predictor p(std::move(g)); });
}

TEST(Sequences, APlanDoesNotHoldASequence) {
  Graph g;
  g.name = "planned";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2}});
  Value* seq = g.add_node("SequenceConstruct", {x, x}, {}, "pair")->outputs[0];
  g.set_outputs({g.add_node("SequenceLength", {seq}, {}, "count")->outputs[0]});
  expect_error(ErrorCode::kInvalidArgument, {"'pair'", "a plan does not hold"}, [&] { compile(g); });
  EXPECT_EQ(Predictor(std::move(g)).predict({Tensor::zeros(Shape{2}, DType::kFloat32)})[0].item(), 2.0);
}

TEST(Sequences, ATensorSequenceHoldsTensorsOfOneTypeAndHasNoDataOfItsOwn) {
  const Tensor a = Tensor::zeros(Shape{2}, DType::kFloat32);
  expect_error(ErrorCode::kTypeMismatch, {"element 1 is int64", "holds float32"}, [&] {
    Tensor::sequence(DType::kFloat32, {a, Tensor::zeros(Shape{1}, DType::kInt64)});
  });
  expect_error(ErrorCode::kInvalidArgument, {"element 0 is undefined"},
               [&] { Tensor::sequence(DType::kFloat32, {Tensor()}); });
  const Tensor seq = Tensor::sequence(DType::kFloat32, {a});
  expect_error(ErrorCode::kInvalidArgument, {"a sequence has no data of its own"}, [&] { seq.raw_data(); });
  expect_error(ErrorCode::kTypeMismatch, {"not a sequence"}, [&] { a.elements(); });
  const Tensor copy = seq.clone();
  ASSERT_TRUE(copy.is_sequence());
  EXPECT_NE(copy.elements()[0].storage(), a.storage());
  EXPECT_EQ(copy.elements()[0].to_vector<float>(), a.to_vector<float>());
}

}  // namespace
}  // namespace kiln::runtime
