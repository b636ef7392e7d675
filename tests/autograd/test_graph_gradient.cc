// build_gradient on hand-built graphs: the backward graph's gradients equal the imperative tape's
// for the same ops, only what the backward reads is saved, and a missing rule names the node.
#include <map>

#include <gtest/gtest.h>

#include "autograd/gradient_checker.h"
#include "autograd/graph_gradient.h"
#include "kiln/kiln.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace kiln {
namespace {

using autograd::GradientGraphs;
using testing::random_array;

// y = Tanh(x W^T) * x2 + Exp(x2) with x2 = x used twice (gradients from two paths add up).
graph::Graph small_graph(const std::string& extra_op = "") {
  graph::Graph g;
  g.name = "small";
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat64, Shape{2, 3}});
  graph::Value* w = g.add_input("w", ops::TensorInfo{DType::kFloat64, Shape{3, 3}});
  graph::Value* h = g.add_node("Gemm", {x, w}, {{"transB", int64_t{1}}}, "fc")->outputs[0];
  if (!extra_op.empty()) h = g.add_node(extra_op, {h}, {}, "odd")->outputs[0];
  graph::Value* t = g.add_node("Tanh", {h}, {}, "tanh")->outputs[0];
  graph::Value* m = g.add_node("Mul", {t, x}, {}, "mul")->outputs[0];
  graph::Value* e = g.add_node("Exp", {x}, {}, "exp")->outputs[0];
  g.add_output(g.add_node("Add", {m, e}, {}, "sum")->outputs[0]);
  g.infer_shapes();
  return g;
}

std::vector<Tensor> backward_feed(const GradientGraphs& gg, const std::vector<Tensor>& inputs,
                                  const std::vector<Tensor>& outputs, const std::vector<Tensor>& heads) {
  std::vector<Tensor> feed;
  for (const auto& s : gg.backward_inputs) {
    const auto i = static_cast<size_t>(s.index);
    feed.push_back(s.kind == GradientGraphs::Source::Kind::kForwardInput    ? inputs[i]
                   : s.kind == GradientGraphs::Source::Kind::kForwardOutput ? outputs[i]
                                                                            : heads[i]);
  }
  return feed;
}

TEST(GraphGradient, MatchesImperativeTape) {
  const graph::Graph g = small_graph();
  const GradientGraphs gg =
      autograd::build_gradient(g, {.heads = {{"sum_output", false}}, .wrt = {"x", "w"}});
  EXPECT_EQ(gg.num_forward_outputs, 1);
  EXPECT_EQ(gg.backward.outputs().size(), 2u);

  NDArray x = random_array(Shape{2, 3}), w = random_array(Shape{3, 3}), head = random_array(Shape{2, 3});
  runtime::Executor forward(runtime::compile(gg.forward));
  runtime::Executor backward(runtime::compile(gg.backward));
  const std::vector<Tensor> inputs{x.tensor(), w.tensor()};
  const std::vector<Tensor> outputs = forward.run(inputs);
  const std::vector<Tensor> grads = backward.run(backward_feed(gg, inputs, outputs, {head.tensor()}));

  x.attach_grad();
  w.attach_grad();
  {
    auto recording = autograd::record();
    NDArray h = nd::invoke1("Gemm", {x, w}, {{"transB", int64_t{1}}});
    NDArray y = nd::invoke1("Tanh", {h}) * x + nd::invoke1("Exp", {x});
    y.backward(head);
  }
  const std::vector<double> gx = grads[0].to_vector<double>(), gw = grads[1].to_vector<double>();
  const std::vector<double> ex = x.grad().to_vector<double>(), ew = w.grad().to_vector<double>();
  for (size_t i = 0; i < ex.size(); ++i) EXPECT_NEAR(gx[i], ex[i], 1e-12);
  for (size_t i = 0; i < ew.size(); ++i) EXPECT_NEAR(gw[i], ew[i], 1e-12);
}

TEST(GraphGradient, SeedsWithOnesAndGivesZerosWhereNothingFlows) {
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat64, Shape{3}});
  g.add_input("unused", ops::TensorInfo{DType::kFloat64, Shape{2}});
  g.add_output(g.add_node("Mul", {x, x}, {}, "square")->outputs[0]);
  g.infer_shapes();
  const GradientGraphs gg =
      autograd::build_gradient(g, {.heads = {{"square_output", true}}, .wrt = {"x", "unused"}});
  // The backward reads only x: d(x*x)/dx = 2x with ones as the head.
  ASSERT_EQ(gg.backward_inputs.size(), 1u);
  EXPECT_EQ(gg.backward_inputs[0].kind, GradientGraphs::Source::Kind::kForwardInput);
  const NDArray xv = nd::array<double>({1, -2, 3}, Shape{3});
  const std::vector<Tensor> grads = runtime::Executor(runtime::compile(gg.backward)).run({xv.tensor()});
  EXPECT_EQ(grads[0].to_vector<double>(), (std::vector<double>{2, -4, 6}));
  EXPECT_EQ(grads[1].to_vector<double>(), (std::vector<double>{0, 0}));
}

// GatherND with batch_dims 1 in a graph whose batch dimension is free: the rule builds its shapes
// with Shape nodes, bound at run time. Expected: each head slice added where its tuple points
// within its batch (numpy's np.add.at per batch).
TEST(GraphGradient, GatherNDWithBatchDimsAndAFreeBatch) {
  graph::Graph g;
  graph::Value* data = g.add_input("data", ops::TensorInfo{DType::kFloat64, Shape{-1, 3, 2}});
  graph::Value* indices = g.add_input("indices", ops::TensorInfo{DType::kInt64, Shape{-1, 4, 1}});
  g.add_output(g.add_node("GatherND", {data, indices}, {{"batch_dims", int64_t{1}}}, "gather")->outputs[0]);
  g.infer_shapes();
  const GradientGraphs gg =
      autograd::build_gradient(g, {.heads = {{"gather_output", false}}, .wrt = {"data"}});
  const std::map<std::string, Shape> shapes{{"data", Shape{2, 3, 2}}, {"indices", Shape{2, 4, 1}}};
  std::map<std::string, Shape> backward_shapes;  // the forward inputs' shapes, or the head's
  for (size_t k = 0; k < gg.backward_inputs.size(); ++k) {
    const auto& source = gg.backward_inputs[k];
    ASSERT_NE(source.kind, GradientGraphs::Source::Kind::kForwardOutput);
    const bool head = source.kind == GradientGraphs::Source::Kind::kHeadGrad;
    const std::string& forward_name = g.inputs()[static_cast<size_t>(head ? 0 : source.index)]->name;
    backward_shapes.emplace(gg.backward.inputs()[k]->name, head ? Shape{2, 4, 2} : shapes.at(forward_name));
  }
  const NDArray x = random_array(Shape{2, 3, 2}), head = random_array(Shape{2, 4, 2});
  const std::vector<int64_t> rows{0, 2, 0, -1, 1, 1, 1, 0};
  const NDArray idx = testing::int64_array(rows, Shape{2, 4, 1});
  const std::vector<Tensor> inputs{x.tensor(), idx.tensor()};
  runtime::Executor forward(runtime::compile(runtime::bind_input_shapes(gg.forward, shapes)));
  runtime::Executor backward(runtime::compile(runtime::bind_input_shapes(gg.backward, backward_shapes)));
  const std::vector<Tensor> outputs = forward.run(inputs);
  const std::vector<double> grad =
      backward.run(backward_feed(gg, inputs, outputs, {head.tensor()}))[0].to_vector<double>();
  std::vector<double> expected(12, 0.0);
  const std::vector<double> h = head.to_vector<double>();
  for (int b = 0; b < 2; ++b)
    for (int t = 0; t < 4; ++t) {
      const int64_t row = (rows[static_cast<size_t>(b * 4 + t)] + 3) % 3;
      for (int c = 0; c < 2; ++c)
        expected[static_cast<size_t>((b * 3 + row) * 2 + c)] += h[static_cast<size_t>((b * 4 + t) * 2 + c)];
    }
  ASSERT_EQ(grad.size(), expected.size());
  for (size_t i = 0; i < grad.size(); ++i) EXPECT_NEAR(grad[i], expected[i], 1e-12) << i;
}

TEST(GraphGradient, MissingRuleNamesTheNode) {
  const graph::Graph g = small_graph("AutogradTestNoGradient");
  try {
    autograd::build_gradient(g, {.heads = {{"sum_output", false}}, .wrt = {"w"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("AutogradTestNoGradient 'odd'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(autograd::build_gradient(g, {.heads = {{"sum_output", false}}, .wrt = {"nope"}}), Error);
}

}  // namespace
}  // namespace kiln
