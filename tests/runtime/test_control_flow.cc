// Control flow through the Predictor: If on an input value (branches of different shapes), Loop
// with a trip count, a condition, loop-carried values, scan outputs and a value read from outside,
// a Loop whose carried value grows, Scan backwards with its output stacked along axis 1, and an If
// nested in a Loop reading a model input two scopes out. Checked against the same computation
// written out in C++; then the errors: a negative trip count, a loop that would not end, a subgraph
// that does not fit its node, a condition that is not one bool, with the Predictor usable after.
#include <gtest/gtest.h>

#include <memory>

#include "kiln/predictor.hpp"
#include "runtime_test_util.h"
#include "test_support.h"

namespace kiln::runtime {
namespace {

using namespace testing;
using graph::Node;
using kiln::testing::expect_error;

const TensorInfo kBoolScalar{DType::kBool, Shape{}};
const TensorInfo kInt64Scalar{DType::kInt64, Shape{}};

Tensor floats(const std::vector<float>& values, const Shape& shape) {
  return Tensor::from_vector(values, shape);
}
Tensor boolean(bool value) {
  return Tensor::scalar(value ? 1.0 : 0.0, DType::kBool);
}
Tensor int64_scalar(int64_t value) {
  return Tensor::scalar(static_cast<double>(value), DType::kInt64);
}

Node* control_flow(Graph& g, const std::string& op, std::vector<Value*> inputs, const std::string& name,
                   std::vector<std::string> outputs,
                   std::map<std::string, std::shared_ptr<const Graph>> subgraphs, int num_captured,
                   AttrMap attrs = {}) {
  Node* n = g.add_node_with_outputs(op, std::move(inputs), std::move(attrs), name, outputs);
  n->subgraphs = std::move(subgraphs);
  n->num_captured = num_captured;
  return n;
}

// cond (bool), x (f32 [?, 3]) -> Neg(If(cond, then: x + x [?, 3], else: ReduceSum(x, axis 1) [?])).
Graph if_on_input() {
  auto then_branch = std::make_shared<Graph>();
  then_branch->name = "then";
  Value* tx = then_branch->add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3}});
  then_branch->set_outputs({then_branch->add_node("Add", {tx, tx}, {}, "double")->outputs[0]});
  auto else_branch = std::make_shared<Graph>();
  else_branch->name = "else";
  Value* ex = else_branch->add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3}});
  Value* axes = else_branch->add_initializer("axes", Tensor::from_vector(std::vector<int64_t>{1}, Shape{1}));
  else_branch->set_outputs(
      {else_branch->add_node("ReduceSum", {ex, axes}, {{"keepdims", int64_t{0}}}, "sum")->outputs[0]});

  Graph g;
  g.name = "if_on_input";
  Value* cond = g.add_input("cond", kBoolScalar);
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3}});
  Node* n = control_flow(g, "If", {cond, x}, "if", {"chosen"},
                         {{"then_branch", then_branch}, {"else_branch", else_branch}}, 1);
  g.set_outputs({g.add_node("Neg", {n->outputs[0]}, {}, "neg")->outputs[0]});
  return g;
}

TEST(ControlFlow, IfTakesTheBranchTheInputSaysAndTheirShapesDiffer) {
  Predictor p(if_on_input());
  const Tensor x = floats({1, 2, 3, -4, 5, 6}, Shape{2, 3});
  for (int round = 0; round < 2; ++round) {
    const Tensor doubled = p.predict({boolean(true), x})[0];
    ASSERT_EQ(doubled.shape(), (Shape{2, 3}));
    EXPECT_EQ(doubled.to_vector<float>(), (std::vector<float>{-2, -4, -6, 8, -10, -12}));
    const Tensor summed = p.predict({boolean(false), x})[0];
    ASSERT_EQ(summed.shape(), (Shape{2}));
    EXPECT_EQ(summed.to_vector<float>(), (std::vector<float>{-6, -7}));
  }
  EXPECT_EQ(p.num_cached_plans(), 1u);  // one input signature; the branches are planned inside
  expect_error(
      [&] {
        p.predict({Tensor::from_vector(std::vector<bool>{true, false}, Shape{2}), x});
      },
      ErrorCode::kShapeMismatch, {"cond"});
}

// M (int64), cond (bool), y0 (f32 [2]), step (f32 [2], read by the body from outside) ->
//   while i < M and cond: y += step; cond = sum(y) < 10; scan: y * i
Graph loop_with_scan() {
  auto body = std::make_shared<Graph>();
  body->name = "body";
  Value* i = body->add_input("i", kInt64Scalar);
  body->add_input("c", kBoolScalar);
  Value* y = body->add_input("y", TensorInfo{DType::kFloat32, Shape{2}});
  Value* body_step = body->add_input("step", TensorInfo{DType::kFloat32, Shape{2}});
  Value* ten = body->add_initializer("ten", Tensor::scalar(10.0, DType::kFloat32));
  Value* y_next = body->add_node("Add", {y, body_step}, {}, "add")->outputs[0];
  Value* total = body->add_node("ReduceSum", {y_next}, {{"keepdims", int64_t{0}}}, "total")->outputs[0];
  Value* more = body->add_node("Less", {total, ten}, {}, "more")->outputs[0];
  Value* i_float = body->add_node("Cast", {i}, {{"to", int64_t{1}}}, "i_float")->outputs[0];
  Value* scan = body->add_node("Mul", {y_next, i_float}, {}, "scaled")->outputs[0];
  body->set_outputs({more, y_next, scan});

  Graph g;
  g.name = "loop_with_scan";
  Value* m = g.add_input("M", kInt64Scalar);
  Value* cond = g.add_input("cond", kBoolScalar);
  Value* y0 = g.add_input("y0", TensorInfo{DType::kFloat32, Shape{2}});
  Value* step = g.add_input("step", TensorInfo{DType::kFloat32, Shape{2}});
  Node* n = control_flow(g, "Loop", {m, cond, y0, step}, "loop", {"y_final", "scanned"}, {{"body", body}}, 1);
  g.set_outputs({n->outputs[0], n->outputs[1]});
  return g;
}

// The same loop, written out.
std::pair<std::vector<float>, std::vector<float>> loop_by_hand(int64_t m, bool cond, std::vector<float> y,
                                                               const std::vector<float>& step) {
  std::vector<float> scanned;
  for (int64_t i = 0; i < m && cond; ++i) {
    for (size_t k = 0; k < 2; ++k) y[k] += step[k];
    cond = y[0] + y[1] < 10;
    for (size_t k = 0; k < 2; ++k) scanned.push_back(y[k] * static_cast<float>(i));
  }
  return {y, scanned};
}

TEST(ControlFlow, LoopThreadsItsValuesAndStacksItsScanOutputs) {
  Predictor p(loop_with_scan());
  const std::vector<float> y0{0.5f, 1}, step{1, 0.25f};
  for (auto [m, cond] :
       std::vector<std::pair<int64_t, bool>>{{3, true}, {100, true}, {5, false}, {0, true}}) {
    const auto out =
        p.predict({int64_scalar(m), boolean(cond), floats(y0, Shape{2}), floats(step, Shape{2})});
    const auto [y_want, scan_want] = loop_by_hand(m, cond, y0, step);
    EXPECT_EQ(out[0].to_vector<float>(), y_want) << "M=" << m;
    ASSERT_EQ(out[1].shape(), (Shape{static_cast<int64_t>(scan_want.size() / 2), 2})) << "M=" << m;
    EXPECT_EQ(out[1].to_vector<float>(), scan_want) << "M=" << m;
  }
}

// x (f32 [1, 2]), M -> Concat(acc, x) M times, starting from x: the carried value grows, so its
// body is planned once per length it meets.
Graph growing_loop() {
  auto body = std::make_shared<Graph>();
  body->name = "grow";
  body->add_input("i", kInt64Scalar);
  Value* c = body->add_input("c", kBoolScalar);
  Value* acc = body->add_input("acc", TensorInfo{DType::kFloat32, Shape{-1, 2}});
  Value* piece = body->add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2}});
  Value* longer = body->add_node("Concat", {acc, piece}, {{"axis", int64_t{0}}}, "concat")->outputs[0];
  Value* same = body->add_node("Identity", {c}, {}, "keep_going")->outputs[0];
  body->set_outputs({same, longer});

  Graph g;
  g.name = "growing_loop";
  Value* m = g.add_input("M", kInt64Scalar);
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2}});
  Node* n = control_flow(g, "Loop", {m, nullptr, x, x}, "grow", {"all"}, {{"body", body}}, 1);
  g.set_outputs({n->outputs[0]});
  return g;
}

TEST(ControlFlow, LoopCarriedValuesMayChangeShape) {
  Predictor p(growing_loop());
  for (int64_t m : {4, 2, 4}) {
    const Tensor out = p.predict({int64_scalar(m), floats({1, 2}, Shape{1, 2})})[0];
    ASSERT_EQ(out.shape(), (Shape{m + 1, 2}));
    for (int64_t r = 0; r <= m; ++r) {
      EXPECT_EQ(out.to_vector<float>()[static_cast<size_t>(2 * r)], 1.f);
      EXPECT_EQ(out.to_vector<float>()[static_cast<size_t>(2 * r + 1)], 2.f);
    }
  }
}

// s0 (f32 [2]), x (f32 [2, T]) -> Scan backwards along axis 1: s += x[:, t]; each s stacked along
// axis 1 of the scan output (so out[:, t] is the sum of x[:, t:]).
Graph reverse_scan() {
  auto body = std::make_shared<Graph>();
  body->name = "suffix_sum";
  Value* s = body->add_input("s", TensorInfo{DType::kFloat32, Shape{2}});
  Value* column = body->add_input("column", TensorInfo{DType::kFloat32, Shape{2}});
  Value* next = body->add_node("Add", {s, column}, {}, "add")->outputs[0];
  Value* copy = body->add_node("Identity", {next}, {}, "copy")->outputs[0];
  body->set_outputs({next, copy});

  Graph g;
  g.name = "reverse_scan";
  Value* s0 = g.add_input("s0", TensorInfo{DType::kFloat32, Shape{2}});
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, -1}});
  AttrMap attrs{{"num_scan_inputs", int64_t{1}},
                {"scan_input_axes", std::vector<int64_t>{1}},
                {"scan_input_directions", std::vector<int64_t>{1}},
                {"scan_output_axes", std::vector<int64_t>{-1}},
                {"scan_output_directions", std::vector<int64_t>{1}}};
  Node* n = control_flow(g, "Scan", {s0, x}, "scan", {"s_final", "suffix"}, {{"body", body}}, 0, attrs);
  g.set_outputs({n->outputs[0], n->outputs[1]});
  return g;
}

TEST(ControlFlow, ScanWalksItsAxisBackwardsAndStacksAlongTheOutputAxis) {
  Predictor p(reverse_scan());
  const std::vector<float> x{1, 2, 3, 4, 10, 20, 30, 40};  // [2, 4]
  const auto out = p.predict({floats({0, 0}, Shape{2}), floats(x, Shape{2, 4})});
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{10, 100}));
  ASSERT_EQ(out[1].shape(), (Shape{2, 4}));
  // Reversed in and out: position t holds the sum of x[:, t:].
  EXPECT_EQ(out[1].to_vector<float>(), (std::vector<float>{10, 9, 7, 4, 100, 90, 70, 40}));
}

// M, y0 (f32 [2]), bias (f32 [2]) -> Loop: y = If(i is even, y + bias, y - bias). The If inside the
// body reads y from the body and bias from the model, two scopes out.
Graph nested_if_in_loop() {
  const TensorInfo vec{DType::kFloat32, Shape{2}};
  auto plus = std::make_shared<Graph>();
  plus->name = "plus";
  Value* py = plus->add_input("y", vec);
  Value* pb = plus->add_input("bias", vec);
  plus->set_outputs({plus->add_node("Add", {py, pb}, {}, "add")->outputs[0]});
  auto minus = std::make_shared<Graph>();
  minus->name = "minus";
  Value* my = minus->add_input("y", vec);
  Value* mb = minus->add_input("bias", vec);
  minus->set_outputs({minus->add_node("Sub", {my, mb}, {}, "sub")->outputs[0]});

  auto body = std::make_shared<Graph>();
  body->name = "body";
  Value* i = body->add_input("i", kInt64Scalar);
  Value* c = body->add_input("c", kBoolScalar);
  Value* y = body->add_input("y", vec);
  Value* bias = body->add_input("bias", vec);
  Value* two = body->add_initializer("two", Tensor::scalar(2.0, DType::kInt64));
  Value* zero = body->add_initializer("zero", Tensor::scalar(0.0, DType::kInt64));
  Value* rem = body->add_node("Mod", {i, two}, {}, "rem")->outputs[0];
  Value* even = body->add_node("Equal", {rem, zero}, {}, "even")->outputs[0];
  Node* pick = control_flow(*body, "If", {even, y, bias}, "pick", {"y_next"},
                            {{"then_branch", plus}, {"else_branch", minus}}, 2);
  Value* keep = body->add_node("Identity", {c}, {}, "keep")->outputs[0];
  body->set_outputs({keep, pick->outputs[0]});

  Graph g;
  g.name = "nested";
  Value* m = g.add_input("M", kInt64Scalar);
  Value* y0 = g.add_input("y0", vec);
  Value* b = g.add_input("bias", vec);
  Node* n = control_flow(g, "Loop", {m, nullptr, y0, b}, "loop", {"y"}, {{"body", body}}, 1);
  g.set_outputs({n->outputs[0]});
  return g;
}

TEST(ControlFlow, NestedSubgraphsReadValuesFromEveryScopeAroundThem) {
  Predictor p(nested_if_in_loop());
  for (int64_t m : {0, 1, 2, 5}) {
    std::vector<float> want{1, 2};
    for (int64_t i = 0; i < m; ++i)
      for (size_t k = 0; k < 2; ++k) want[k] += (i % 2 == 0 ? 1.f : -1.f) * (k == 0 ? 0.5f : 3.f);
    const auto out = p.predict({int64_scalar(m), floats({1, 2}, Shape{2}), floats({0.5f, 3}, Shape{2})});
    EXPECT_EQ(out[0].to_vector<float>(), want) << "M=" << m;
  }
}

TEST(ControlFlow, BadTripCountsAndEndlessLoopsAreErrorsNamingTheNode) {
  Predictor p(loop_with_scan());
  const Tensor y0 = floats({0, 0}, Shape{2});
  expect_error(
      [&] {
        p.predict({int64_scalar(-3), boolean(true), y0, floats({1, 1}, Shape{2})});
      },
      ErrorCode::kInvalidArgument, {"Loop 'loop'", "trip count is -3"});
  // A step of zero keeps the condition true: bounded by max_loop_iterations.
  Predictor bounded(loop_with_scan(), {.max_loop_iterations = 50});
  expect_error(
      [&] {
        bounded.predict({int64_scalar(int64_t{1} << 62), boolean(true), y0, floats({0, 0}, Shape{2})});
      },
      ErrorCode::kOutOfRange, {"Loop 'loop'", "max_loop_iterations = 50"});
  // Both stay usable.
  for (const Predictor* q : {&p, &bounded}) {
    const auto out = q->predict({int64_scalar(2), boolean(true), y0, floats({1, 1}, Shape{2})});
    EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{2, 2}));
  }
  // Scan outputs stacked over the iterations count against max_dynamic_elements.
  Predictor small(loop_with_scan(), {.max_dynamic_elements = 10});
  expect_error(
      [&] {
        small.predict({int64_scalar(8), boolean(true), y0, floats({0.1f, 0.1f}, Shape{2})});
      },
      ErrorCode::kOutOfRange, {"Loop 'loop'", "max_dynamic_elements = 10"});
}

TEST(ControlFlow, SubgraphsThatDoNotFitTheirNodeAreRefusedAtLoad) {
  {
    Graph g = if_on_input();
    Node* n = g.find_node("if");
    auto wider = std::make_shared<Graph>(n->subgraphs.at("then_branch")->clone());
    wider->add_output(wider->inputs()[0]);
    n->subgraphs["then_branch"] = wider;
    expect_error([&] { Predictor{std::move(g)}; }, ErrorCode::kInvalidArgument,
                 {"If 'if'", "then_branch' outputs has 2, expected 1"});
  }
  {
    Graph g = loop_with_scan();
    Node* n = g.find_node("loop");
    auto body = std::make_shared<Graph>(n->subgraphs.at("body")->clone());
    body->inputs()[2]->info = TensorInfo{DType::kInt64, Shape{2}};
    n->subgraphs["body"] = body;
    expect_error([&] { Predictor{std::move(g)}; }, ErrorCode::kInvalidArgument,
                 {"Loop 'loop'", "loop-carried value 0", "int64", "float32"});
  }
  {
    Graph g = if_on_input();
    g.find_node("if")->subgraphs.erase("else_branch");
    expect_error([&] { Predictor{std::move(g)}; }, ErrorCode::kInvalidArgument, {"If 'if'", "else_branch"});
  }
}

}  // namespace
}  // namespace kiln::runtime
