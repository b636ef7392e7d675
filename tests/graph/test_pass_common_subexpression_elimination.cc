// common_subexpression_elimination: equal nodes and equal initializers merge; a difference in any
// attribute, in a tensor attribute's bytes, or in an input keeps nodes apart; random nodes and
// graph outputs that would lose their names are never merged. Merged nodes computed the same
// thing, so outputs match exactly (tolerance 0).
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

TEST(CommonSubexpressionElimination, MergesEqualNodesAndConstants) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2, 5, 5}});
  std::mt19937 rng(5);
  const Tensor w = testing::random_tensor(TensorInfo{DType::kFloat32, Shape{3, 2, 3, 3}}, rng);
  Value* w1 = g.add_initializer("w1", w);
  Value* w2 = g.add_initializer("w2", w.clone());  // same bytes, another initializer
  Value* r1 = out0(g.add_node("Relu", {x}, {}, "relu_a"));
  Value* r2 = out0(g.add_node("Relu", {x}, {}, "relu_b"));
  Value* c1 = out0(g.add_node("Conv", {r1, w1}, {{"pads", {1, 1, 1, 1}}}, "conv_a"));
  // Same computation written differently: the other Relu, the copy of W, an explicit default.
  Value* c2 = out0(g.add_node("Conv", {r2, w2}, {{"pads", {1, 1, 1, 1}}, {"group", 1}}, "conv_b"));
  // strides has no default, so spelling out the implied value is a different attribute set.
  Value* c3 =
      out0(g.add_node("Conv", {r1, w1}, {{"pads", {1, 1, 1, 1}}, {"strides", {1, 1}}}, "conv_strides"));
  Value* c4 = out0(g.add_node("Conv", {r1, w1}, {{"pads", {1, 1, 1, 0}}}, "conv_other_pads"));
  Value* sum = out0(g.add_node("Sum", {c1, c2, c3}, {}, "sum"));
  // Tensor attributes compare by value.
  Value* shape = g.add_initializer("shape", Tensor::from_vector<int64_t>({1, 3, 5, 5}, Shape{4}));
  Value* f1 = out0(
      g.add_node("ConstantOfShape", {shape}, {{"value", Tensor::full({1}, 2.0, DType::kFloat32)}}, "fill_a"));
  Value* f2 = out0(
      g.add_node("ConstantOfShape", {shape}, {{"value", Tensor::full({1}, 2.0, DType::kFloat32)}}, "fill_b"));
  Value* f3 = out0(
      g.add_node("ConstantOfShape", {shape}, {{"value", Tensor::full({1}, 3.0, DType::kFloat32)}}, "fill_c"));
  Value* scaled = out0(g.add_node("Mul", {sum, f1}));
  Value* shifted = out0(g.add_node("Add", {scaled, f2}));
  g.set_outputs({out0(g.add_node("Sub", {shifted, f3})), c4});
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(common_subexpression_elimination_pass(), g));
  EXPECT_EQ(g.find_value("w2"), nullptr);
  EXPECT_EQ(count_op(g, "Relu"), 1u);
  EXPECT_EQ(g.find_node("conv_b"), nullptr);
  EXPECT_NE(g.find_node("conv_strides"), nullptr);
  EXPECT_NE(g.find_node("conv_other_pads"), nullptr);
  EXPECT_EQ(count_op(g, "ConstantOfShape"), 2u);
  EXPECT_EQ(g.find_node("sum")->inputs, (std::vector<Value*>{c1, c1, c3}));
  expect_same_outputs(before, g, 0, 0);
  EXPECT_FALSE(run_pass(common_subexpression_elimination_pass(), g));
}

TEST(CommonSubexpressionElimination, FloatAttributesCompareExactly) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{8}});
  Value* a = out0(g.add_node("LeakyRelu", {x}, {{"alpha", 0.1}}, "a"));
  Value* b = out0(g.add_node("LeakyRelu", {x}, {{"alpha", 0.1}}, "b"));
  Value* c = out0(g.add_node("LeakyRelu", {x}, {{"alpha", 0.1f}}, "c"));  // float 0.1 is another double
  g.set_outputs({out0(g.add_node("Sum", {a, b, c}))});
  Graph before = g.clone();
  EXPECT_TRUE(run_pass(common_subexpression_elimination_pass(), g));
  EXPECT_EQ(g.find_node("b"), nullptr);
  EXPECT_NE(g.find_node("c"), nullptr);
  expect_same_outputs(before, g, 0, 0);
}

TEST(CommonSubexpressionElimination, KeepsRandomNodesAndOutputNames) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{16}});
  Value* ratio = g.add_initializer("ratio", Tensor::scalar(0.5, DType::kFloat32));
  Value* on = g.add_initializer("on", Tensor::scalar(1, DType::kBool));
  Value* d1 = out0(g.add_node("Dropout", {x, ratio, on}, {}, "drop_a"));
  Value* d2 = out0(g.add_node("Dropout", {x, ratio, on}, {}, "drop_b"));
  Value* n1 = out0(g.add_node("Neg", {x}, {}, "neg_a"));
  Value* n2 = out0(g.add_node("Neg", {x}, {}, "neg_b"));
  Value* e1 = out0(g.add_node("Exp", {x}, {}, "exp_a"));
  Value* e2 = out0(g.add_node("Exp", {x}, {}, "exp_b"));
  Value* s = out0(g.add_node("Add", {e1, e2}, {}, "add"));
  g.set_outputs({d1, d2, n1, n2, s, e2});
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(common_subexpression_elimination_pass(), g));
  EXPECT_EQ(count_op(g, "Dropout"), 2u);
  EXPECT_EQ(count_op(g, "Neg"), 2u) << "both are graph outputs: neither name can go";
  // exp_b's output is a graph output, exp_a's is not: exp_b goes and exp_a's output takes its name.
  EXPECT_EQ(count_op(g, "Exp"), 1u);
  EXPECT_EQ(g.outputs()[5]->name, "exp_b_output");
  EXPECT_EQ(g.outputs()[5]->producer, g.find_node("exp_a"));
  EXPECT_EQ(g.find_node("add")->inputs[0], g.find_node("add")->inputs[1]);
  // The Dropouts draw at random, so only the deterministic outputs are compared.
  auto deterministic = [](const Graph& from) {
    Graph d = from.clone();
    std::vector<Value*> outs;
    for (size_t i = 2; i < from.outputs().size(); ++i) outs.push_back(d.find_value(from.outputs()[i]->name));
    d.set_outputs(outs);
    return d;
  };
  Graph det_before = deterministic(before), det_after = deterministic(g);
  expect_same_outputs(det_before, det_after, 0, 0);
}

}  // namespace
}  // namespace kiln::graph
