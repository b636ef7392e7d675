// fuse_gelu: the erf formula of Gelu, in the orders exporters write it, becomes one Gelu node
// that computes the same outputs (the reference interpreter runs both graphs); near misses (a
// wrong constant, a value read twice) are left alone.
#include <cmath>

#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

Value* scalar(Graph& g, double v) {
  return g.add_initializer(g.fresh_name("c"), Tensor::scalar(v, DType::kFloat32));
}

// x * (1 + erf(x / sqrt2)) * 0.5 in one of the written forms.
enum class Form { kDivThenHalfLast, kMulInverseThenHalfLast, kHalfFirst, kSwappedOperands };

Graph gelu_graph(Form form, double sqrt2 = M_SQRT2, bool erf_also_output = false) {
  Graph g;
  g.name = "gelu";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 6}});
  Value* scaled = form == Form::kMulInverseThenHalfLast ? out0(g.add_node("Mul", {x, scalar(g, 1 / sqrt2)}))
                  : form == Form::kSwappedOperands      ? out0(g.add_node("Mul", {scalar(g, 1 / sqrt2), x}))
                                                        : out0(g.add_node("Div", {x, scalar(g, sqrt2)}));
  Value* erf = out0(g.add_node("Erf", {scaled}));
  Value* one_plus = form == Form::kSwappedOperands ? out0(g.add_node("Add", {scalar(g, 1), erf}))
                                                   : out0(g.add_node("Add", {erf, scalar(g, 1)}));
  Value* y = nullptr;
  if (form == Form::kHalfFirst) {
    Value* half_x = out0(g.add_node("Mul", {x, scalar(g, 0.5)}));
    y = out0(g.add_node("Mul", {half_x, one_plus}));
  } else if (form == Form::kSwappedOperands) {
    y = out0(g.add_node("Mul", {scalar(g, 0.5), out0(g.add_node("Mul", {one_plus, x}))}));
  } else {
    y = out0(g.add_node("Mul", {out0(g.add_node("Mul", {x, one_plus})), scalar(g, 0.5)}));
  }
  g.add_output(out0(g.add_node("Relu", {y})));
  if (erf_also_output) g.add_output(erf);
  g.infer_shapes();
  return g;
}

TEST(FuseGelu, EveryWrittenFormBecomesOneGelu) {
  for (Form form :
       {Form::kDivThenHalfLast, Form::kMulInverseThenHalfLast, Form::kHalfFirst, Form::kSwappedOperands}) {
    SCOPED_TRACE(static_cast<int>(form));
    const Graph before = gelu_graph(form);
    Graph after = before.clone();
    EXPECT_TRUE(run_pass(fuse_gelu_pass(), after));
    EXPECT_EQ(count_op(after, "Gelu"), 1u);
    EXPECT_EQ(count_op(after, "Erf"), 0u);
    EXPECT_EQ(after.num_nodes(), 2u);  // Gelu, Relu
    expect_same_outputs(before, after, 1e-6, 1e-5);
  }
}

TEST(FuseGelu, NearMissesAreLeftAlone) {
  Graph wrong_constant = gelu_graph(Form::kDivThenHalfLast, 1.5);
  EXPECT_FALSE(run_pass(fuse_gelu_pass(), wrong_constant));
  Graph read_twice = gelu_graph(Form::kDivThenHalfLast, M_SQRT2, /*erf_also_output=*/true);
  EXPECT_FALSE(run_pass(fuse_gelu_pass(), read_twice));
  EXPECT_EQ(count_op(read_twice, "Erf"), 1u);
}

}  // namespace
}  // namespace kiln::graph
