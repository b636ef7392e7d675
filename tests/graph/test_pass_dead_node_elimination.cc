// dead_node_elimination: unreachable nodes and unread initializers go; graph inputs, live
// multi-output nodes and everything feeding an output stay. Outputs match exactly (tolerance 0).
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::run_pass;

TEST(DeadNodeElimination, RemovesWhatNoOutputReaches) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{4, 6}});
  Value* unused_input = g.add_input("unused", TensorInfo{DType::kFloat32, Shape{1}});
  Value* w = g.add_initializer("w", Tensor::full({3}, 0.5, DType::kFloat32));
  g.add_initializer("orphan", Tensor::zeros({3}, DType::kFloat32));
  Value* dead_w = g.add_initializer("dead_w", Tensor::full({6}, 2.0, DType::kFloat32));
  // A dead chain that reads a live value and its own initializer.
  Node* relu = g.add_node("Relu", {x}, {}, "relu");
  Node* dead_mul = g.add_node("Mul", {relu->outputs[0], dead_w}, {}, "dead_mul");
  g.add_node("Exp", {dead_mul->outputs[0]}, {}, "dead_exp");
  g.add_node("Neg", {unused_input}, {}, "dead_neg");
  // Split has two outputs; only the first is read, so the node stays.
  Node* split = g.add_node("Split", {relu->outputs[0]}, {{"axis", 1}}, "split", 2);
  Node* mul = g.add_node("Mul", {split->outputs[0], w}, {}, "mul");
  g.set_outputs({mul->outputs[0]});
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(dead_node_elimination_pass(), g));
  EXPECT_EQ(g.num_nodes(), 3u);
  EXPECT_EQ(count_op(g, "Split"), 1u);
  EXPECT_EQ(g.find_node("dead_mul"), nullptr);
  EXPECT_EQ(g.find_node("dead_exp"), nullptr);
  EXPECT_EQ(g.find_node("dead_neg"), nullptr);
  EXPECT_EQ(g.find_value("orphan"), nullptr);
  EXPECT_EQ(g.find_value("dead_w"), nullptr);
  EXPECT_NE(g.find_value("w"), nullptr);
  EXPECT_EQ(g.inputs().size(), 2u) << "graph inputs are the interface and stay";
  expect_same_outputs(before, g, 0, 0);
  EXPECT_FALSE(run_pass(dead_node_elimination_pass(), g));
}

TEST(DeadNodeElimination, AGraphWithoutOutputsLosesEverything) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2}});
  g.add_node("Relu", {g.add_node("Neg", {x})->outputs[0]});
  EXPECT_TRUE(run_pass(dead_node_elimination_pass(), g));
  EXPECT_EQ(g.num_nodes(), 0u);
}

}  // namespace
}  // namespace kiln::graph
