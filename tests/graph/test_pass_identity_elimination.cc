// identity_elimination: every kind of no-op goes, nodes that do something stay, graph output
// names survive. Outputs must match the original graph exactly (tolerance 0): removing a no-op
// changes no arithmetic.
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

Value* ints(Graph& g, std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return g.add_initializer("", Tensor::from_vector(v, Shape{n}));
}
Value* filled(Graph& g, Shape s, double value, DType dtype = DType::kFloat32) {
  return g.add_initializer("", Tensor::full(s, value, dtype));
}
TEST(IdentityElimination, RemovesEveryKindOfNoOp) {
  Graph g;
  g.name = "no_ops";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3, 4}});
  Value* v = out0(g.add_node("Identity", {x}));
  v = out0(g.add_node("Dropout", {v}));
  Node* masked =
      g.add_node("Dropout", {v, filled(g, {}, 0.3), g.add_initializer("", Tensor::scalar(0, DType::kBool))},
                 {}, "dropout_with_unused_mask", 2);
  v = out0(masked);
  v = out0(g.add_node("Cast", {v}, {{"to", 1}}));  // 1 = FLOAT
  v = out0(g.add_node("Reshape", {v, ints(g, {2, 3, 4})}));
  v = out0(g.add_node("Squeeze", {v}));                 // no size-1 axis
  v = out0(g.add_node("Unsqueeze", {v, ints(g, {})}));  // no axis to insert
  v = out0(g.add_node("Transpose", {v}, {{"perm", {0, 1, 2}}}));
  v = out0(g.add_node("Pad", {v, ints(g, {0, 0, 0, 0, 0, 0})}, {{"mode", "reflect"}}));
  v = out0(g.add_node("Add", {filled(g, {4}, 0.0), v}));
  v = out0(g.add_node("Sub", {v, filled(g, {1, 1, 1}, 0.0)}));
  v = out0(g.add_node("Mul", {v, filled(g, {3, 4}, 1.0)}));
  v = out0(g.add_node("Div", {v, filled(g, {}, 1.0)}));
  v = out0(g.add_node("Relu", {v}, {}, "relu"));
  Value* flat =
      out0(g.add_node("Flatten", {out0(g.add_node("Reshape", {v, ints(g, {6, 4})}))}));  // (6, 4) stays
  g.set_outputs({out0(g.add_node("Identity", {flat}, {}, "final_identity"))});
  g.infer_shapes();
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(identity_elimination_pass(), g));
  ASSERT_EQ(g.num_nodes(), 2u) << "only Relu and the real Reshape should remain";
  EXPECT_EQ(count_op(g, "Relu"), 1u);
  EXPECT_EQ(count_op(g, "Reshape"), 1u);
  EXPECT_EQ(g.outputs()[0]->name, "final_identity_output");
  EXPECT_EQ(g.outputs()[0]->producer->op, "Reshape");
  EXPECT_EQ(g.find_node("relu")->inputs[0], x);
  expect_same_outputs(before, g, 0, 0);
  EXPECT_FALSE(run_pass(identity_elimination_pass(), g));
}

TEST(IdentityElimination, KeepsNodesThatChangeSomething) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  std::vector<Value*> outs;
  outs.push_back(out0(g.add_node("Add", {x, filled(g, {2, 2, 3}, 0.0)})));  // broadcasts to (2, 2, 3)
  outs.push_back(out0(g.add_node("Sub", {filled(g, {}, 0.0), x})));         // 0 - x
  outs.push_back(out0(g.add_node("Mul", {x, filled(g, {3}, 2.0)})));
  outs.push_back(out0(g.add_node("Div", {filled(g, {}, 1.0), x})));
  outs.push_back(out0(g.add_node("Cast", {x}, {{"to", 11}})));  // 11 = DOUBLE
  outs.push_back(out0(g.add_node("Transpose", {x}, {{"perm", {1, 0}}})));
  outs.push_back(out0(g.add_node("Transpose", {x})));  // reversed axes
  outs.push_back(out0(g.add_node("Reshape", {x, ints(g, {3, 2})})));
  outs.push_back(out0(g.add_node("Pad", {x, ints(g, {0, 1, 0, 0})})));
  // Training mode is kept even with ratio 0, where it happens to copy (that keeps this test exact).
  outs.push_back(out0(g.add_node(
      "Dropout", {x, filled(g, {}, 0.0), g.add_initializer("", Tensor::scalar(1, DType::kBool))})));
  Node* with_mask = g.add_node("Dropout", {x}, {}, "mask_is_read", 2);
  outs.push_back(with_mask->outputs[1]);
  g.set_outputs(outs);
  g.infer_shapes();
  Graph before = g.clone();
  const size_t nodes = g.num_nodes();

  EXPECT_FALSE(run_pass(identity_elimination_pass(), g));
  EXPECT_EQ(g.num_nodes(), nodes);
  expect_same_outputs(before, g, 0, 0);
}

TEST(IdentityElimination, TrustsUnknownDimsOnlyWhenTheElementCountPinsThem) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 8}});
  Value* same = out0(g.add_node("Reshape", {x, ints(g, {0, 8})}, {}, "one_unknown"));  // (?, 8) -> (?, 8)
  Value* y = g.add_input("y", TensorInfo{DType::kFloat32, Shape{-1, -1}});
  // (?, ?) -> (?, ?): a no-op in fact, but two unknown dims could trade sizes as far as the
  // shapes show, so it stays.
  Value* maybe = out0(g.add_node("Reshape", {y, ints(g, {0, -1})}, {}, "two_unknowns"));
  Value* rows = out0(g.add_node("Reshape", {maybe, ints(g, {-1, 4})}, {}, "to_rows_of_4"));
  Value* again = out0(g.add_node("Flatten", {rows}, {}, "flatten_2d"));  // (?, 4) -> (?, 4)
  g.set_outputs({out0(g.add_node("Relu", {same})), out0(g.add_node("Relu", {again}))});
  g.infer_shapes();
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(identity_elimination_pass(), g));
  EXPECT_EQ(g.find_node("one_unknown"), nullptr);
  EXPECT_EQ(g.find_node("flatten_2d"), nullptr);
  EXPECT_NE(g.find_node("two_unknowns"), nullptr);
  EXPECT_NE(g.find_node("to_rows_of_4"), nullptr);
  std::map<std::string, Tensor> feeds{{"x", Tensor::full({3, 8}, 1.5, DType::kFloat32)},
                                      {"y", Tensor::full({2, 6}, -1.0, DType::kFloat32)}};
  const auto want = evaluate(before, feeds), got = evaluate(g, feeds);
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].shape(), want[i].shape());
    EXPECT_EQ(got[i].to_vector<float>(), want[i].to_vector<float>());
  }
}

TEST(IdentityElimination, GraphOutputNamesSurvive) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4}});
  // x -> Identity -> "passthrough": both names are the graph's interface, so the Identity stays.
  Node* passthrough = g.add_node("Identity", {x}, {}, "passthrough");
  // relu is a graph output itself and so is the Identity after it: the Identity stays too.
  Node* relu = g.add_node("Relu", {x}, {}, "relu");
  Node* copy = g.add_node("Identity", {relu->outputs[0]}, {}, "copy");
  // neg -> Identity -> output: neg's output takes the Identity's output name.
  Node* neg = g.add_node("Neg", {x}, {}, "neg");
  Node* named = g.add_node("Identity", {neg->outputs[0]}, {}, "named");
  g.set_outputs({passthrough->outputs[0], relu->outputs[0], copy->outputs[0], named->outputs[0]});
  g.infer_shapes();
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(identity_elimination_pass(), g));
  EXPECT_NE(g.find_node("passthrough"), nullptr);
  EXPECT_NE(g.find_node("copy"), nullptr);
  EXPECT_EQ(g.find_node("named"), nullptr);
  EXPECT_EQ(g.outputs()[3]->name, "named_output");
  EXPECT_EQ(g.outputs()[3]->producer, g.find_node("neg"));
  expect_same_outputs(before, g, 0, 0);
}

}  // namespace
}  // namespace kiln::graph
