// fuse_matmul_scale_add: attention scores (MatMul -> Div by a constant -> Add of a broadcast mask)
// and a projection's residual Add become one FusedMatMul that computes the same outputs (the
// reference interpreter runs both graphs), expand_fused_ops turns it back into standard ops with
// the same outputs, and chains that cannot fuse are left alone: a divisor computed at run time, a
// constant divided by the product, an addend that would widen the product, a value read twice.
#include <functional>

#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_expands_back;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

constexpr int64_t kHeads = 3, kSeq = 5, kHeadDim = 4;

double alpha_of(const Graph& g) {
  for (const Node* n : g.nodes())
    if (n->op == "FusedMatMul") return std::get<double>(n->attrs.at("alpha").variant());
  return 0;
}

// Q (N, H, S, D) x K^T (N, H, D, S) -> Div(sqrt(D)) -> Add(mask (N, 1, 1, S)) -> Softmax; N free.
Graph attention_scores(const std::string& scale_op = "Div") {
  Graph g;
  g.name = "attention";
  Value* q = g.add_input("q", TensorInfo{DType::kFloat32, Shape{-1, kHeads, kSeq, kHeadDim}});
  Value* k = g.add_input("k", TensorInfo{DType::kFloat32, Shape{-1, kHeads, kHeadDim, kSeq}});
  Value* mask = g.add_input("mask", TensorInfo{DType::kFloat32, Shape{-1, 1, 1, kSeq}});
  Value* scores = out0(g.add_node("MatMul", {q, k}, {}, "scores"));
  const double factor = scale_op == "Div" ? 2.0 : 0.5;
  Value* scale = g.add_initializer("scale", Tensor::scalar(factor, DType::kFloat32));
  Value* scaled = out0(g.add_node(scale_op, {scores, scale}, {}, "scaled"));
  Value* masked = out0(g.add_node("Add", {mask, scaled}, {}, "masked"));
  g.add_output(out0(g.add_node("Softmax", {masked}, {{"axis", int64_t{-1}}}, "probs")));
  g.infer_shapes();
  return g;
}

TEST(FuseMatmulScaleAdd, AttentionScoresTakeTheScaleAndTheMask) {
  for (const std::string scale_op : {"Div", "Mul"}) {
    SCOPED_TRACE(scale_op);
    const Graph before = attention_scores(scale_op);
    Graph after = before.clone();
    EXPECT_TRUE(run_pass(fuse_matmul_scale_add_pass(), after));
    EXPECT_EQ(after.num_nodes(), 2u);  // FusedMatMul and Softmax
    EXPECT_EQ(count_op(after, "FusedMatMul"), 1u);
    EXPECT_DOUBLE_EQ(alpha_of(after), 0.5);
    expect_same_outputs(before, after, 1e-6, 1e-5);

    expect_expands_back(before, after, "FusedMatMul", "Mul", 1, 1e-6, 1e-5);
  }
}

TEST(FuseMatmulScaleAdd, ProjectionTakesTheResidual) {
  std::mt19937 rng(3);
  Graph before;
  before.name = "projection";
  Value* h = before.add_input("h", TensorInfo{DType::kFloat32, Shape{-1, kSeq, 8}});
  Value* x = before.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, kSeq, 6}});
  Value* w =
      before.add_initializer("w", testing::random_tensor(TensorInfo{DType::kFloat32, Shape{8, 6}}, rng));
  Value* y = out0(before.add_node("MatMul", {h, w}, {}, "proj"));
  before.add_output(out0(before.add_node("Add", {y, x}, {}, "residual")));
  before.infer_shapes();
  Graph after = before.clone();
  EXPECT_TRUE(run_pass(fuse_matmul_scale_add_pass(), after));
  ASSERT_EQ(after.num_nodes(), 1u);
  EXPECT_EQ(after.nodes()[0]->op, "FusedMatMul");
  EXPECT_EQ(after.outputs()[0]->name, before.outputs()[0]->name);
  EXPECT_DOUBLE_EQ(alpha_of(after), 1.0);
  expect_same_outputs(before, after, 1e-6, 1e-5);
}

// a (2, 3) x b (3, 4) in a graph named `name`; `finish` adds the rest of the chain and the outputs.
// The pass must report that it changed nothing.
void expect_left_alone(const std::string& name, const std::function<void(Graph&, Value* product)>& finish) {
  SCOPED_TRACE(name);
  Graph g;
  g.name = name;
  Value* a = g.add_input("a", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* b = g.add_input("b", TensorInfo{DType::kFloat32, Shape{3, 4}});
  finish(g, out0(g.add_node("MatMul", {a, b})));
  g.infer_shapes();
  EXPECT_FALSE(run_pass(fuse_matmul_scale_add_pass(), g));
}

TEST(FuseMatmulScaleAdd, LeavesChainsThatDoNotFit) {
  // The divisor is computed at run time.
  expect_left_alone("runtime_divisor", [](Graph& g, Value* y) {
    Value* d = g.add_input("d", TensorInfo{DType::kFloat32, Shape{}});
    g.add_output(out0(g.add_node("Div", {y, d})));
  });
  // A constant divided by the product is no scaling of it.
  expect_left_alone("reciprocal", [](Graph& g, Value* y) {
    g.add_output(out0(g.add_node("Div", {g.add_initializer("c", Tensor::scalar(2.0, DType::kFloat32)), y})));
  });
  // An addend that broadcasts the product to a larger shape.
  expect_left_alone("widening", [](Graph& g, Value* y) {
    Value* e = g.add_input("e", TensorInfo{DType::kFloat32, Shape{5, 2, 4}});
    g.add_output(out0(g.add_node("Add", {y, e})));
  });
  // The product is read twice (also a graph output).
  expect_left_alone("shared", [](Graph& g, Value* y) {
    Value* e = g.add_input("e", TensorInfo{DType::kFloat32, Shape{4}});
    g.add_output(out0(g.add_node("Add", {y, e})));
    g.add_output(y);
  });
}

}  // namespace
}  // namespace kiln::graph
