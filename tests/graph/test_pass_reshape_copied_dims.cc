// reshape_copied_dims: a Reshape shape assembled from the reshaped tensor's own dimensions and
// constants becomes one constant with 0 for the copied dimensions, computing the same result for
// any batch; shapes that copy another tensor's dimension, the wrong position, or with allowzero
// are left alone.
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

Value* ints(Graph& g, const std::vector<int64_t>& v) {
  return g.add_initializer(g.fresh_name("c"),
                           Tensor::from_vector<int64_t>(v, Shape{static_cast<int64_t>(v.size())}));
}

// Reshape(x, Concat(Unsqueeze(Gather(Shape(source), index)), rest)) as exporters write it.
Graph view_graph(bool shape_of_other, int64_t index, int64_t allowzero) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4, 6}});
  Value* other = g.add_input("other", TensorInfo{DType::kFloat32, Shape{-1, 4, 6}});
  Value* dim = out0(g.add_node(
      "Gather", {out0(g.add_node("Shape", {shape_of_other ? other : x})),
                 g.add_initializer("index", Tensor::scalar(static_cast<double>(index), DType::kInt64))}));
  Value* dim1 = out0(g.add_node("Unsqueeze", {dim, ints(g, {0})}));
  Value* shape = out0(g.add_node("Concat", {dim1, ints(g, {-1}), ints(g, {3})}, {{"axis", 0}}));
  Value* y = out0(g.add_node("Reshape", {x, shape}, {{"allowzero", allowzero}}, "view"));
  g.set_outputs({out0(g.add_node("Add", {y, y}))});
  g.infer_shapes(/*allow_unknown=*/true);
  return g;
}

TEST(ReshapeCopiedDims, TheBatchCopiedFromTheTensorItselfBecomesZero) {
  for (int64_t index : {0, -3}) {
    const Graph before = view_graph(false, index, 0);
    Graph after = before.clone();
    EXPECT_TRUE(run_pass(reshape_copied_dims_pass(), after));
    const Value* shape = after.find_node("view")->inputs[1];
    ASSERT_TRUE(shape->is_constant());
    EXPECT_EQ(shape->constant.to_vector<int64_t>(), (std::vector<int64_t>{0, -1, 3}));
    run_pass(dead_node_elimination_pass(), after);
    EXPECT_EQ(count_op(after, "Shape"), 0u);
    EXPECT_EQ(count_op(after, "Concat"), 0u);
    expect_same_outputs(before, after, 0, 0);
  }
}

TEST(ReshapeCopiedDims, OtherShapesAreLeftAlone) {
  for (const auto& [other, index, allowzero] :
       std::vector<std::tuple<bool, int64_t, int64_t>>{{true, 0, 0}, {false, 1, 0}, {false, 0, 1}}) {
    Graph g = view_graph(other, index, allowzero);
    EXPECT_FALSE(run_pass(reshape_copied_dims_pass(), g)) << other << " " << index << " " << allowzero;
  }
}

}  // namespace
}  // namespace kiln::graph
