// The Executor against a plain reference evaluation (each node's run_reference in order) on
// random inputs; input validation; no allocations on the hot path; shared plans across threads.
#include <gtest/gtest.h>

#include <thread>

#include "kiln/allocator.hpp"
#include "runtime/executor.h"
#include "runtime_test_util.h"

namespace kiln::runtime {
namespace {

using namespace testing;

// Compiles `g` for `shape` on its one input and checks a few random inputs against the reference.
std::shared_ptr<const Plan> check_against_reference(const Graph& g, const Shape& shape, std::mt19937& rng) {
  const Graph bound = bind_input_shapes(g, {{g.inputs()[0]->name, shape}});
  auto plan = compile(bound);
  Executor exec(plan);
  for (int i = 0; i < 3; ++i) {
    const Tensor x = random_tensor(shape, rng);
    expect_same(exec.run({x}), reference_evaluate(bound, {x}));
  }
  return plan;
}

TEST(Executor, MlpMatchesTheReference) {
  std::mt19937 rng(11);
  check_against_reference(mlp({784, 256, 128, 10}, rng), Shape{4, 784}, rng);
  check_against_reference(mlp({784, 256, 128, 10}, rng), Shape{1, 784}, rng);
}

TEST(Executor, SmallCnnMatchesTheReferenceInLessMemory) {
  std::mt19937 rng(12);
  const auto plan = check_against_reference(small_cnn(rng), Shape{2, 3, 32, 32}, rng);
  EXPECT_LT(plan->memory.planned_bytes, plan->memory.naive_bytes);
  EXPECT_EQ(plan->arena_bytes, plan->memory.planned_bytes);
  EXPECT_GT(plan->memory.num_inplace, 0);  // BatchNormalization -> Relu
}

TEST(Executor, BranchAndResidualMatchTheReference) {
  std::mt19937 rng(13);
  check_against_reference(branch_residual(rng), Shape{5, 32}, rng);
}

TEST(Executor, AnOutputThatIsAlsoAnIntermediate) {
  // h = Relu(x W) is an output and is read by y = Add(h, b); outputs are (h, y, h, x).
  std::mt19937 rng(14);
  Graph g;
  g.name = "two_outputs";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{3, 8}});
  Value* w = g.add_initializer("W", random_tensor({8, 8}, rng));
  Value* b = g.add_initializer("b", random_tensor({8}, rng));
  Value* h = g.add_node("Relu", {g.add_node("MatMul", {x, w})->outputs[0]}, {}, "h")->outputs[0];
  Value* y = g.add_node("Add", {h, b}, {}, "y")->outputs[0];
  g.set_outputs({h, y, h, x});
  const auto plan = compile(g);
  Executor exec(plan);
  const Tensor in = random_tensor({3, 8}, rng);
  const std::vector<Tensor> out = exec.run({in});
  expect_same(out, reference_evaluate(g, {in}));
  EXPECT_EQ(out[0].raw_data(), out[2].raw_data());  // the same value, one tensor
  EXPECT_NE(out[3].raw_data(), in.raw_data());      // an input returned as an output is a copy
}

TEST(Executor, OutputsSurviveLaterRuns) {
  std::mt19937 rng(15);
  const Graph g = bind_input_shapes(branch_residual(rng), {{"x", Shape{2, 32}}});
  Executor exec(compile(g));
  const Tensor x1 = random_tensor({2, 32}, rng), x2 = random_tensor({2, 32}, rng);
  const std::vector<Tensor> first = exec.run({x1});
  const std::vector<float> kept = first[0].to_vector<float>();
  exec.run({x2});
  EXPECT_EQ(first[0].to_vector<float>(), kept);
}

TEST(Executor, NonContiguousInputsAreAccepted) {
  std::mt19937 rng(16);
  const Graph g = bind_input_shapes(mlp({8, 4}, rng), {{"x", Shape{3, 8}}});
  Executor exec(compile(g));
  const Tensor wide = random_tensor({8, 3}, rng);
  const Tensor view = wide.transpose({1, 0});
  ASSERT_FALSE(view.is_contiguous());
  expect_same(exec.run({view}), reference_evaluate(g, {view.contiguous()}));
}

// Allocations of the process-wide CPU allocator made by `runs` calls of exec.run.
size_t allocations_during(Executor& exec, const std::vector<Tensor>& inputs, int runs) {
  exec.run(inputs);  // warm the allocator's pool for the outputs' size class
  const size_t before = allocator_stats().num_allocations;
  for (int i = 0; i < runs; ++i) exec.run(inputs);
  return allocator_stats().num_allocations - before;
}

TEST(Executor, RunAllocatesOnlyTheOutputs) {
  std::mt19937 rng(17);
  constexpr int kRuns = 20;
  {
    const Graph g = bind_input_shapes(mlp({784, 256, 128, 10}, rng), {{"x", Shape{1, 784}}});
    Executor exec(compile(g));
    EXPECT_EQ(allocations_during(exec, {random_tensor({1, 784}, rng)}, kRuns), size_t{kRuns});
  }
  {
    const Graph g = bind_input_shapes(small_cnn(rng), {{"data", Shape{1, 3, 32, 32}}});
    Executor exec(compile(g));
    EXPECT_EQ(allocations_during(exec, {random_tensor({1, 3, 32, 32}, rng)}, kRuns), size_t{kRuns});
  }
  {
    Graph g;  // two outputs, one of them read by a later step
    Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{16}});
    Value* h = g.add_node("Relu", {x})->outputs[0];
    g.set_outputs({h, g.add_node("Neg", {h})->outputs[0]});
    Executor exec(compile(g));
    EXPECT_EQ(allocations_during(exec, {random_tensor({16}, rng)}, kRuns), size_t{2 * kRuns});
  }
}

std::string error_of(Executor& exec, const std::vector<Tensor>& inputs) {
  try {
    exec.run(inputs);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Executor, BadInputsNameTheInputAndBothValuesAndLeaveItUsable) {
  std::mt19937 rng(18);
  const Graph g = bind_input_shapes(mlp({8, 4}, rng), {{"x", Shape{2, 8}}});
  Executor exec(compile(g));
  const Tensor good = random_tensor({2, 8}, rng);

  std::string msg = error_of(exec, {random_tensor({3, 8}, rng)});
  EXPECT_NE(msg.find("graph 'mlp': input 'x': expected float32 (2, 8), got float32 (3, 8)"),
            std::string::npos)
      << msg;
  expect_same(exec.run({good}), reference_evaluate(g, {good}));

  msg = error_of(exec, {good.cast(DType::kFloat64)});
  EXPECT_NE(msg.find("input 'x': expected float32 (2, 8), got float64 (2, 8)"), std::string::npos) << msg;
  expect_same(exec.run({good}), reference_evaluate(g, {good}));

  msg = error_of(exec, {});
  EXPECT_NE(msg.find("expected 1 input(s) ('x'), got 0: input 'x' is missing"), std::string::npos) << msg;
  msg = error_of(exec, {good, good});
  EXPECT_NE(msg.find("got 2: 1 extra tensor(s)"), std::string::npos) << msg;
  msg = error_of(exec, {Tensor()});
  EXPECT_NE(msg.find("input 'x': expected float32 (2, 8), got an undefined tensor"), std::string::npos)
      << msg;
  expect_same(exec.run({good}), reference_evaluate(g, {good}));
}

// A Relu that fails while `fail` is set, to check kernel errors name their node.
class FlakyRelu final : public KernelProvider {
 public:
  std::string name() const override { return "flaky"; }
  ops::KernelFn choose_kernel(const graph::Node& node, const Attrs&) const override {
    if (node.op != "Relu") return {};
    const ops::KernelFn reference = node.schema().reference_kernel();
    return [this, reference](ops::KernelContext& ctx) {
      KILN_CHECK(!fail, ErrorCode::kRuntime, "injected failure");
      reference(ctx);
    };
  }
  mutable bool fail = false;
};

TEST(Executor, KernelErrorsNameTheNodeAndLeaveItUsable) {
  std::mt19937 rng(19);
  const Graph g = bind_input_shapes(mlp({8, 4}, rng), {{"x", Shape{2, 8}}});
  FlakyRelu flaky;
  CompileOptions options;
  options.providers = {&flaky};
  Executor exec(compile(g, options));
  const Tensor x = random_tensor({2, 8}, rng);
  flaky.fail = true;
  const std::string msg = error_of(exec, {x});
  EXPECT_NE(msg.find("graph 'mlp': Relu 'fc1/relu': injected failure"), std::string::npos) << msg;
  flaky.fail = false;
  expect_same(exec.run({x}), reference_evaluate(g, {x}));
}

TEST(Executor, OnePlanServesManyThreads) {
  std::mt19937 rng(20);
  const Graph g = bind_input_shapes(small_cnn(rng), {{"data", Shape{1, 3, 32, 32}}});
  const std::shared_ptr<const Plan> plan = compile(g);
  constexpr int kThreads = 4;
  std::vector<Tensor> inputs;
  std::vector<std::vector<Tensor>> want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_tensor({1, 3, 32, 32}, rng));
    want.push_back(reference_evaluate(g, {inputs.back()}));
  }
  std::vector<std::vector<Tensor>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      Executor exec(plan);  // one workspace per thread
      for (int i = 0; i < 5; ++i) got[static_cast<size_t>(t)] = exec.run({inputs[static_cast<size_t>(t)]});
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) expect_same(got[static_cast<size_t>(t)], want[static_cast<size_t>(t)]);
}

}  // namespace
}  // namespace kiln::runtime
