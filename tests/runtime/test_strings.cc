// String tensors through the Predictor: text compared (Equal) and moved (Gather, Reshape, Concat,
// Where) on the ids of its strings, and the string ops, checked against the same computation
// written out in C++; then the errors: an op on numbers given text, text where numbers go, and a
// plan asked to hold text, with the Predictor usable after.
#include <gtest/gtest.h>

#include "kiln/predictor.hpp"
#include "runtime/plan.h"
#include "runtime_test_util.h"
#include "test_support.h"

namespace kiln::runtime {
namespace {

using namespace testing;

Tensor text(const std::vector<std::string>& strings, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::kString);
  std::copy(strings.begin(), strings.end(), t.data<std::string>());
  return t;
}

// words (string [n]), pick (int64 [2]) -> words == "cat"; words[pick] reshaped to (2, 1) and
// joined with ("!", "?") along axis 1; words where they are "cat", else "_".
Graph words_graph() {
  Graph g;
  g.name = "words";
  Value* words = g.add_input("words", TensorInfo{DType::kString, Shape{-1}});
  Value* pick = g.add_input("pick", TensorInfo{DType::kInt64, Shape{2}});
  Value* cat = g.add_initializer("cat", text({"cat"}, Shape{1}));
  Value* marks = g.add_initializer("marks", text({"!", "?"}, Shape{2, 1}));
  Value* blank = g.add_initializer("blank", text({"_"}, Shape{}));
  Value* shape = g.add_initializer("shape", Tensor::from_vector<int64_t>({2, 1}, Shape{2}));
  Value* is_cat = g.add_node("Equal", {words, cat}, {}, "is_cat")->outputs[0];
  Value* picked = g.add_node("Gather", {words, pick}, {{"axis", int64_t{0}}}, "pick")->outputs[0];
  Value* column = g.add_node("Reshape", {picked, shape}, {}, "column")->outputs[0];
  Value* joined = g.add_node("Concat", {column, marks}, {{"axis", int64_t{1}}}, "join")->outputs[0];
  Value* kept = g.add_node("Where", {is_cat, words, blank}, {}, "keep")->outputs[0];
  g.set_outputs({is_cat, joined, kept});
  return g;
}

TEST(Strings, TextIsComparedAndMovedAsItsStringsSay) {
  Predictor p(words_graph());
  const Tensor words = text({"dog", "cat", "a cat", "cat"}, Shape{4});
  for (int round = 0; round < 2; ++round) {
    const std::vector<Tensor> out = p.predict({words, Tensor::from_vector<int64_t>({-1, 0}, Shape{2})});
    EXPECT_EQ(out[0].to_vector<bool>(), (std::vector<bool>{false, true, false, true}));
    ASSERT_EQ(out[1].shape(), (Shape{2, 2}));
    EXPECT_EQ(out[1].to_vector<std::string>(), (std::vector<std::string>{"cat", "!", "dog", "?"}));
    EXPECT_EQ(out[2].to_vector<std::string>(), (std::vector<std::string>{"_", "cat", "_", "cat"}));
  }
  expect_error(ErrorCode::kTypeMismatch, {"input 'words'", "expected string"}, [&] {
    p.predict({Tensor::zeros(Shape{4}, DType::kFloat32), Tensor::zeros(Shape{2}, DType::kInt64)});
  });
  EXPECT_EQ(p.predict({text({"cat"}, Shape{1}), Tensor::zeros(Shape{2}, DType::kInt64)})[0].to_vector<bool>(),
            std::vector<bool>{true});
}

TEST(Strings, TheStringOpsDoWhatPythonsStringsDo) {
  Graph g;
  g.name = "string_ops";
  Value* lines = g.add_input("lines", TensorInfo{DType::kString, Shape{-1}});
  Value* lower = g.add_node("StringNormalizer", {lines},
                            {{"case_change_action", std::string("LOWER")},
                             {"stopwords", std::vector<std::string>{"SKIP"}}},
                            "lower")
                     ->outputs[0];
  graph::Node* split = g.add_node("StringSplit", {lower},
                                  {{"delimiter", std::string("-")}, {"maxsplit", int64_t{1}}}, "split", 2);
  Value* suffix = g.add_initializer("suffix", text({"."}, Shape{1}));
  Value* dotted = g.add_node("StringConcat", {lower, suffix}, {}, "dot")->outputs[0];
  Value* digits =
      g.add_node("RegexFullMatch", {lower}, {{"pattern", std::string("[0-9]+(-[0-9]+)*")}}, "digits")
          ->outputs[0];
  g.set_outputs({split->outputs[0], split->outputs[1], dotted, digits});
  Predictor p(std::move(g));
  const std::vector<Tensor> out = p.predict({text({"A-B-C", "skip", "12-34", "Plain"}, Shape{4})});
  ASSERT_EQ(out[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(out[0].to_vector<std::string>(), (std::vector<std::string>{"a", "b-c", "12", "34", "plain", ""}));
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(out[2].to_vector<std::string>(), (std::vector<std::string>{"a-b-c.", "12-34.", "plain."}));
  EXPECT_EQ(out[3].to_vector<bool>(), (std::vector<bool>{false, true, false}));
}

TEST(Strings, AnOpOnNumbersRefusesTextAndNoPlanHoldsIt) {
  Graph g;
  g.name = "misuse";
  Value* x = g.add_input("x", TensorInfo{DType::kString, Shape{2}});
  g.set_outputs({g.add_node("Relu", {x}, {}, "relu")->outputs[0]});
  expect_error(ErrorCode::kTypeMismatch, {"'relu'", "input 0 (X) is a string tensor; Relu takes numbers"},
               [&] { Predictor bad(std::move(g)); });
  Graph h;
  h.name = "planned";
  Value* y = h.add_input("y", TensorInfo{DType::kString, Shape{2}});
  h.set_outputs({h.add_node("Identity", {y}, {}, "same")->outputs[0]});
  expect_error(ErrorCode::kInvalidArgument, {"string (2,)", "a plan does not hold"}, [&] { compile(h); });
  EXPECT_EQ(Predictor(std::move(h)).predict({text({"p", "q"}, Shape{2})})[0].to_vector<std::string>(),
            (std::vector<std::string>{"p", "q"}));
}

}  // namespace
}  // namespace kiln::runtime
