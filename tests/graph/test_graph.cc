// The graph IR: building, verification errors, topological order, inference and editing.
#include <gtest/gtest.h>

#include "graph/graph.h"

namespace kiln::graph {
namespace {

using ops::TensorInfo;

// x -> Conv(W) -> Relu -> y, with W an initializer.
Graph conv_relu() {
  Graph g;
  g.name = "conv_relu";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3, 8, 8}});
  Value* w = g.add_initializer("w", Tensor::zeros({4, 3, 3, 3}, DType::kFloat32));
  Node* conv = g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}}, "conv1");
  Node* relu = g.add_node("Relu", {conv->outputs[0]}, {}, "relu1");
  g.set_outputs({relu->outputs[0]});
  return g;
}

TEST(Graph, InfersShapesWithAFreeBatchDimension) {
  Graph g = conv_relu();
  g.verify();
  g.infer_shapes();
  EXPECT_EQ(g.outputs()[0]->info->shape, Shape({-1, 4, 8, 8}));
  EXPECT_EQ(g.outputs()[0]->info->dtype, DType::kFloat32);
}

TEST(Graph, TopologicalOrderPutsProducersFirst) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2}});
  Node* a = g.add_node("Relu", {x}, {}, "a");
  Node* b = g.add_node("Neg", {a->outputs[0]}, {}, "b");
  Node* c = g.add_node("Add", {a->outputs[0], b->outputs[0]}, {}, "c");
  g.set_outputs({c->outputs[0]});
  const auto order = g.topological_order();
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], a);
  EXPECT_EQ(order[1], b);
  EXPECT_EQ(order[2], c);
}

TEST(Graph, VerifyNamesTheBrokenNode) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2}});
  Node* a = g.add_node("Relu", {x}, {}, "a");
  Node* b = g.add_node("Neg", {a->outputs[0]}, {}, "b");
  g.set_input(a, 0, b->outputs[0]);  // a <- b <- a: a cycle
  g.set_outputs({b->outputs[0]});
  try {
    g.verify();
    FAIL() << "expected a cycle error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos) << e.what();
  }
  Graph h;
  Value* y = h.add_input("y", TensorInfo{DType::kFloat32, Shape{2}});
  h.add_node("Add", {y}, {}, "lonely_add");  // Add takes two inputs
  try {
    h.verify();
    FAIL() << "expected an input-count error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Add 'lonely_add'"), std::string::npos) << e.what();
  }
}

TEST(Graph, InferenceErrorsNameTheNodeAndInput) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 32, 56, 56}});
  Value* w = g.add_initializer("w", Tensor::zeros({64, 64, 3, 3}, DType::kFloat32));
  g.add_node("Conv", {x, w}, {}, "stage2/conv1");
  try {
    g.infer_shapes();
    FAIL() << "expected a channel mismatch";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("stage2/conv1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Conv"), std::string::npos) << msg;
    EXPECT_NE(msg.find("input 1 (W)"), std::string::npos) << msg;
  }
}

TEST(Graph, ConstantInputsDecideShapes) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3, 4}});
  Value* shape = g.add_initializer("shape", Tensor::from_vector<int64_t>({0, -1}, Shape{2}));
  Node* r = g.add_node("Reshape", {x, shape}, {}, "flatten");
  g.set_outputs({r->outputs[0]});
  g.infer_shapes();
  EXPECT_EQ(g.outputs()[0]->info->shape, Shape({2, 12}));
}

TEST(Graph, EditingKeepsUsersConsistent) {
  Graph g = conv_relu();
  Node* relu = g.find_node("relu1");
  Node* conv = g.find_node("conv1");
  g.replace_all_uses(relu->outputs[0], conv->outputs[0]);
  g.remove_node(relu);
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.outputs()[0], conv->outputs[0]);
  g.verify();
  Graph c = g.clone();
  c.verify();
  EXPECT_EQ(c.num_nodes(), 1u);
  EXPECT_NE(c.find_node("conv1"), g.find_node("conv1"));
  EXPECT_THROW(g.add_node("Relu", {conv->outputs[0]}, {}, "conv1"), Error);  // duplicate name
  EXPECT_THROW(g.add_node("NoSuchOp", {conv->outputs[0]}), Error);
}

}  // namespace
}  // namespace kiln::graph
