// inline_constant_if: an If on a constant condition becomes the branch it takes, reading the
// values the branch read from outside, its output keeping its name; an If on a value known only
// at run time stays. The inlined graph is checked by the reference interpreter against the
// branch's arithmetic written out.
#include "graph/evaluate.h"
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::out0;
using testing::run_pass;

// y = If(cond, then: x * 3 + x, else: x - 1), cond a constant when `constant_cond`, else an input.
Graph if_graph(std::optional<bool> constant_cond) {
  const TensorInfo vec{DType::kFloat32, Shape{3}};
  auto then_branch = std::make_shared<Graph>();
  Value* tx = then_branch->add_input("x", vec);
  Value* three = then_branch->add_initializer("three", Tensor::scalar(3.0, DType::kFloat32));
  Value* tripled = out0(then_branch->add_node("Mul", {tx, three}, {}, "triple"));
  then_branch->set_outputs({out0(then_branch->add_node("Add", {tripled, tx}, {}, "add"))});
  auto else_branch = std::make_shared<Graph>();
  Value* ex = else_branch->add_input("x", vec);
  Value* one = else_branch->add_initializer("one", Tensor::scalar(1.0, DType::kFloat32));
  else_branch->set_outputs({out0(else_branch->add_node("Sub", {ex, one}, {}, "minus_one"))});

  Graph g;
  g.name = "if";
  Value* x = g.add_input("x", vec);
  Value* cond = constant_cond
                    ? g.add_initializer("cond", Tensor::scalar(*constant_cond ? 1.0 : 0.0, DType::kBool))
                    : g.add_input("cond", TensorInfo{DType::kBool, Shape{}});
  Node* n = g.add_node_with_outputs("If", {cond, x}, {}, "if", {"y"});
  n->subgraphs = {{"then_branch", then_branch}, {"else_branch", else_branch}};
  n->num_captured = 1;
  g.set_outputs({n->outputs[0]});
  return g;
}

TEST(InlineConstantIf, TheBranchTakenReplacesTheIf) {
  const Tensor x = Tensor::from_vector(std::vector<float>{1, -2, 0.5f}, Shape{3});
  for (bool cond : {true, false}) {
    Graph g = if_graph(cond);
    EXPECT_TRUE(run_pass(inline_constant_if_pass(), g));
    g.verify();
    EXPECT_EQ(count_op(g, "If"), 0u);
    EXPECT_EQ(count_op(g, cond ? "Mul" : "Sub"), 1u);
    ASSERT_EQ(g.outputs()[0]->name, "y");
    const auto y = evaluate(g, {{"x", x}})[0].to_vector<float>();
    EXPECT_EQ(y, cond ? (std::vector<float>{4, -8, 2}) : (std::vector<float>{0, -3, -0.5f}));
  }
}

TEST(InlineConstantIf, AnIfOnARunTimeValueStays) {
  Graph g = if_graph(std::nullopt);
  EXPECT_FALSE(run_pass(inline_constant_if_pass(), g));
  EXPECT_EQ(count_op(g, "If"), 1u);
}

}  // namespace
}  // namespace kiln::graph
