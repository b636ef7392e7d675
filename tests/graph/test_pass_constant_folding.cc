// constant_folding: constant subgraphs become initializers, shape arithmetic over known shapes
// folds away, random ops and oversized results stay. The folded values are computed by the same
// reference kernels the interpreter runs, so outputs must match exactly (tolerance 0).
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

TEST(ConstantFolding, FoldsConstantSubgraphsIntoInitializers) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3}});
  Value* a = g.add_initializer("a", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3}));
  Value* b = g.add_initializer("b", Tensor::from_vector<float>({0.5f, -1, 2}, Shape{3}));
  Value* ab = out0(g.add_node("Mul", {a, b}, {}, "mul"));
  Value* neg = out0(g.add_node("Neg", {ab}, {}, "neg"));
  Node* add = g.add_node("Add", {x, neg}, {}, "add");
  g.set_outputs({out0(add)});
  Graph before = g.clone();

  EXPECT_TRUE(run_pass(constant_folding_pass(), g));
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(add->inputs[1]->name, "neg_output");
  ASSERT_TRUE(add->inputs[1]->is_constant());
  EXPECT_EQ(add->inputs[1]->constant.to_vector<float>(), (std::vector<float>{-0.5f, 2, -6, -2, 5, -12}));
  expect_same_outputs(before, g, 0, 0);
  // mul's output is now an initializer nothing reads; dead-node elimination drops it.
  EXPECT_NE(g.find_value("mul_output"), nullptr);
  EXPECT_TRUE(run_pass(dead_node_elimination_pass(), g));
  EXPECT_EQ(g.find_value("mul_output"), nullptr);
}

TEST(ConstantFolding, ShapeArithmeticOverKnownShapesFoldsAway) {
  // y = Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): the usual exported-model way
  // of writing "keep the batch, flatten the rest".
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3, 4}});
  Value* shape = out0(g.add_node("Shape", {x}));
  Value* batch =
      out0(g.add_node("Gather", {shape, g.add_initializer("zero", Tensor::scalar(0, DType::kInt64))}));
  Value* batch1 = out0(g.add_node(
      "Unsqueeze", {batch, g.add_initializer("axes", Tensor::from_vector<int64_t>({0}, Shape{1}))}));
  Value* target = out0(
      g.add_node("Concat", {batch1, g.add_initializer("rest", Tensor::from_vector<int64_t>({-1}, Shape{1}))},
                 {{"axis", 0}}));
  Node* reshape = g.add_node("Reshape", {x, target}, {}, "flatten");
  Node* size = g.add_node("Size", {x}, {}, "count");
  g.set_outputs({out0(reshape), out0(size)});
  Graph before = g.clone();

  PassManagerOptions verifying;
  verifying.verify = true;
  PassManager pm = PassManager::for_level(OptLevel::kBasic, verifying);
  EXPECT_TRUE(pm.run(g));
  ASSERT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.nodes()[0], reshape);
  EXPECT_EQ(reshape->inputs[1]->constant.to_vector<int64_t>(), (std::vector<int64_t>{2, -1}));
  // A folded graph output keeps its name and becomes a constant output.
  EXPECT_EQ(g.outputs()[1]->name, "count_output");
  EXPECT_EQ(g.outputs()[1]->constant.item(), 24);
  expect_same_outputs(before, g, 0, 0);
}

TEST(ConstantFolding, ShapeFoldsItsStartEndRange) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 3, 4, 5}});
  Node* inner = g.add_node("Shape", {x}, {{"start", 1}, {"end", -1}}, "inner");
  g.set_outputs({out0(inner)});
  Graph before = g.clone();
  EXPECT_TRUE(run_pass(constant_folding_pass(), g));
  EXPECT_EQ(g.outputs()[0]->constant.to_vector<int64_t>(), (std::vector<int64_t>{3, 4}));
  expect_same_outputs(before, g, 0, 0);
}

TEST(ConstantFolding, ShapeArithmeticOverAFreeDimensionStays) {
  // The same "keep the batch" Reshape, with the batch unknown until run time: nothing folds,
  // and the levels still run (shapes known only at run time stay unknown instead of failing).
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3, 4}});
  Value* batch = out0(g.add_node("Gather", {out0(g.add_node("Shape", {x})),
                                            g.add_initializer("zero", Tensor::scalar(0, DType::kInt64))}));
  Value* batch1 = out0(g.add_node(
      "Unsqueeze", {batch, g.add_initializer("axes", Tensor::from_vector<int64_t>({0}, Shape{1}))}));
  Value* target = out0(
      g.add_node("Concat", {batch1, g.add_initializer("rest", Tensor::from_vector<int64_t>({-1}, Shape{1}))},
                 {{"axis", 0}}));
  Node* reshape = g.add_node("Reshape", {x, target}, {}, "flatten");
  g.set_outputs({out0(g.add_node("Relu", {out0(reshape)})), out0(g.add_node("Size", {x}, {}, "size"))});
  Graph before = g.clone();
  PassManagerOptions verifying;
  verifying.verify = true;
  PassManager pm = PassManager::for_level(OptLevel::kBasic, verifying);
  EXPECT_FALSE(pm.run(g));
  EXPECT_EQ(g.num_nodes(), 7u);
  EXPECT_FALSE(reshape->outputs[0]->info.has_value());
  expect_same_outputs(before, g, 0, 0);
  // Level all rewrites the shape as [0, -1] (reshape_copied_dims) and the chain dies.
  EXPECT_TRUE(PassManager::for_level(OptLevel::kAll, verifying).run(g));
  EXPECT_EQ(g.num_nodes(), 3u);
  expect_same_outputs(before, g, 0, 0);
}

TEST(ConstantFolding, DimensionsKnownUnderAFreeBatchFold) {
  // Gather(Shape(x), [2, -1]) picks known dims of a (?, 3, 80, 80) tensor: 80 and 80 fold; index 0
  // (the free batch) does not.
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3, 80, 80}});
  Value* shape = out0(g.add_node("Shape", {x}));
  Value* grid = out0(g.add_node(
      "Gather", {shape, g.add_initializer("hw", Tensor::from_vector<int64_t>({2, -1}, Shape{2}))}));
  Value* batch =
      out0(g.add_node("Gather", {shape, g.add_initializer("n", Tensor::scalar(0, DType::kInt64))}));
  g.set_outputs({grid, batch});
  Graph before = g.clone();
  EXPECT_TRUE(run_pass(constant_folding_pass(), g));
  ASSERT_TRUE(g.outputs()[0]->is_constant());
  EXPECT_EQ(g.outputs()[0]->constant.to_vector<int64_t>(), (std::vector<int64_t>{80, 80}));
  EXPECT_FALSE(g.outputs()[1]->is_constant());
  expect_same_outputs(before, g, 0, 0);
}

TEST(ConstantFolding, LeavesRandomNodesAlone) {
  Graph g;
  Value* c = g.add_initializer("c", Tensor::full({8}, 1.0, DType::kFloat32));
  Value* ratio = g.add_initializer("ratio", Tensor::scalar(0.5, DType::kFloat32));
  Value* on = g.add_initializer("on", Tensor::scalar(1, DType::kBool));
  Value* off = g.add_initializer("off", Tensor::scalar(0, DType::kBool));
  Node* training = g.add_node("Dropout", {c, ratio, on}, {}, "training");
  Node* inference = g.add_node("Dropout", {c, ratio, off}, {}, "inference");
  g.set_outputs({out0(training), out0(inference)});
  EXPECT_TRUE(run_pass(constant_folding_pass(), g));
  EXPECT_NE(g.find_node("training"), nullptr);
  EXPECT_EQ(g.find_node("inference"), nullptr);
  EXPECT_EQ(g.outputs()[1]->constant.to_vector<float>(), std::vector<float>(8, 1.0f));
}

TEST(ConstantFolding, BoundsTheSizeOfFoldedOutputs) {
  auto build = [](Graph& g) {
    Value* one = g.add_initializer("one", Tensor::scalar(1.0, DType::kFloat32));
    Value* shape = g.add_initializer("shape", Tensor::from_vector<int64_t>({512, 1024}, Shape{2}));
    Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{512, 1024}});
    Node* big = g.add_node("Expand", {one, shape}, {}, "big");  // 2 MiB of float32
    g.set_outputs({out0(g.add_node("Add", {x, out0(big)}))});
  };
  Graph small_budget, default_budget;
  build(small_budget);
  build(default_budget);
  EXPECT_FALSE(run_pass(constant_folding_pass(ConstantFoldingOptions{size_t{1} << 20}), small_budget));
  EXPECT_EQ(count_op(small_budget, "Expand"), 1u);
  Graph before = default_budget.clone();
  EXPECT_TRUE(run_pass(constant_folding_pass(), default_budget));
  EXPECT_EQ(count_op(default_budget, "Expand"), 0u);
  expect_same_outputs(before, default_budget, 0, 0);
}

TEST(ConstantFolding, ErrorsNameTheNode) {
  Graph g;
  Value* a = g.add_initializer("a", Tensor::zeros({2, 3}, DType::kFloat32));
  Value* b = g.add_initializer("b", Tensor::zeros({4}, DType::kFloat32));
  g.set_outputs({out0(g.add_node("Add", {a, b}, {}, "mismatched"))});
  try {
    run_pass(constant_folding_pass(), g);
    FAIL() << "expected a broadcasting error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Add 'mismatched'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("constant_folding"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace kiln::graph
