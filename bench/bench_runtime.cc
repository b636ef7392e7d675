// The graph runtime's cost per inference. The MLP 784-256-128-10 at batch 1 runs three ways:
// through Executor::run, as the bare kernel calls on preallocated tensors (the floor: the
// difference is the executor's overhead), and op by op with run_reference (no plan: inference,
// allocation and attribute binding on every call). A chain of 64 tiny Relus, run both ways,
// isolates the cost per step. The small CNN reports its planned and naive arena bytes as
// counters.
#include <benchmark/benchmark.h>

#include <map>
#include <random>

#include "runtime/executor.h"

namespace {

using kiln::DType;
using kiln::Shape;
using kiln::Tensor;
using kiln::graph::Graph;
using kiln::graph::Value;
using kiln::ops::TensorInfo;

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float scale) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = dist(rng);
  return Tensor::from_vector(values, shape);
}

Graph mlp(int64_t batch) {
  std::mt19937 rng(1);
  const std::vector<int64_t> dims = {784, 256, 128, 10};
  Graph g;
  g.name = "mlp";
  Value* h = g.add_input("x", TensorInfo{DType::kFloat32, Shape{batch, dims[0]}});
  for (size_t i = 1; i < dims.size(); ++i) {
    Value* w = g.add_initializer(g.fresh_name("W"), random_tensor({dims[i - 1], dims[i]}, rng, 0.1f));
    Value* b = g.add_initializer(g.fresh_name("b"), random_tensor({dims[i]}, rng, 0.1f));
    h = g.add_node("MatMul", {h, w})->outputs[0];
    h = g.add_node("Add", {h, b})->outputs[0];
    h = g.add_node("Relu", {h})->outputs[0];
  }
  g.set_outputs({h});
  return g;
}

Value* conv_bn_relu(Graph& g, Value* x, int64_t cin, int64_t cout, std::mt19937& rng) {
  Value* w = g.add_initializer(g.fresh_name("W"), random_tensor({cout, cin, 3, 3}, rng, 0.3f));
  x = g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}})->outputs[0];
  std::vector<Value*> bn_inputs = {x};
  for (float scale : {1.f, 0.1f, 0.1f, 1.f})
    bn_inputs.push_back(g.add_initializer(g.fresh_name("bn"), Tensor::full({cout}, scale, DType::kFloat32)));
  x = g.add_node("BatchNormalization", bn_inputs)->outputs[0];
  return g.add_node("Relu", {x})->outputs[0];
}

// data (1, 3, 32, 32) -> 2 x [Conv, BatchNormalization, Relu, MaxPool] -> GlobalAveragePool ->
// Flatten -> Gemm -> Softmax.
Graph small_cnn() {
  std::mt19937 rng(2);
  Graph g;
  g.name = "small_cnn";
  Value* x = g.add_input("data", TensorInfo{DType::kFloat32, Shape{1, 3, 32, 32}});
  int64_t cin = 3;
  for (int64_t cout : {16, 32}) {
    x = conv_bn_relu(g, x, cin, cout, rng);
    x = g.add_node("MaxPool", {x}, {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}})->outputs[0];
    cin = cout;
  }
  x = g.add_node("GlobalAveragePool", {x})->outputs[0];
  x = g.add_node("Flatten", {x})->outputs[0];
  Value* w = g.add_initializer("fc/W", random_tensor({10, 32}, rng, 0.3f));
  Value* b = g.add_initializer("fc/b", random_tensor({10}, rng, 0.3f));
  x = g.add_node("Gemm", {x, w, b}, {{"transB", 1}})->outputs[0];
  g.set_outputs({g.add_node("Softmax", {x})->outputs[0]});
  return g;
}

Graph relu_chain(int steps) {
  Graph g;
  Value* v = g.add_input("x", TensorInfo{DType::kFloat32, Shape{16}});
  for (int i = 0; i < steps; ++i) v = g.add_node("Relu", {v})->outputs[0];
  g.set_outputs({v});
  return g;
}

void run_executor(benchmark::State& state, const Graph& g, const Shape& input_shape) {
  std::mt19937 rng(3);
  kiln::runtime::Executor exec(kiln::runtime::compile(g));
  const std::vector<Tensor> inputs = {random_tensor(input_shape, rng, 1.f)};
  for (auto _ : state) benchmark::DoNotOptimize(exec.run(inputs));
  const auto& plan = exec.plan();
  state.counters["steps"] = static_cast<double>(plan.steps.size());
  state.counters["planned_bytes"] = static_cast<double>(plan.memory.planned_bytes);
  state.counters["naive_bytes"] = static_cast<double>(plan.memory.naive_bytes);
}

void BM_MlpExecutor(benchmark::State& state) {
  run_executor(state, mlp(1), {1, 784});
}

// The plan's kernels on tensors allocated once, called straight from a loop.
void run_kernels_only(benchmark::State& state, const Graph& g) {
  std::mt19937 rng(3);
  const auto plan = kiln::runtime::compile(g);
  std::vector<Tensor> values(plan->values.size());
  for (size_t id = 0; id < values.size(); ++id) {
    const auto& v = plan->values[id];
    values[id] = v.kind == kiln::runtime::PlanValue::Kind::kConstant
                     ? plan->constants[static_cast<size_t>(v.index)]
                     : random_tensor(v.info.shape, rng, 1.f);
  }
  std::vector<std::vector<Tensor>> ins, outs;
  for (const auto& step : plan->steps) {
    ins.emplace_back();
    outs.emplace_back();
    for (int id : step.inputs) ins.back().push_back(values[static_cast<size_t>(id)]);
    for (int id : step.outputs) outs.back().push_back(values[static_cast<size_t>(id)]);
  }
  for (auto _ : state) {
    for (size_t s = 0; s < plan->steps.size(); ++s) {
      kiln::ops::KernelContext ctx{plan->steps[s].attrs, ins[s], outs[s]};
      plan->steps[s].kernel(ctx);
    }
    benchmark::ClobberMemory();
  }
}

void BM_MlpKernelsOnly(benchmark::State& state) {
  run_kernels_only(state, mlp(1));
}

// No plan: every call binds attributes, infers shapes and allocates each node's outputs.
void BM_MlpOpByOp(benchmark::State& state) {
  std::mt19937 rng(3);
  const Graph g = mlp(1);
  const Tensor x = random_tensor({1, 784}, rng, 1.f);
  const auto order = g.topological_order();
  for (auto _ : state) {
    std::map<const Value*, Tensor> env;
    for (const Value* v : g.initializers()) env[v] = v->constant;
    env[g.inputs()[0]] = x;
    for (const auto* n : order) {
      std::vector<Tensor> in;
      for (const Value* v : n->inputs) in.push_back(env.at(v));
      const auto& schema = n->schema();
      env[n->outputs[0]] = schema.run_reference(schema.bind(n->attrs), in)[0];
    }
    benchmark::DoNotOptimize(env.at(g.outputs()[0]));
  }
}

void BM_ReluChain64Executor(benchmark::State& state) {
  run_executor(state, relu_chain(64), {16});
}

void BM_ReluChain64KernelsOnly(benchmark::State& state) {
  run_kernels_only(state, relu_chain(64));
}

void BM_SmallCnnExecutor(benchmark::State& state) {
  run_executor(state, small_cnn(), {1, 3, 32, 32});
}

}  // namespace

BENCHMARK(BM_MlpExecutor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpKernelsOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpOpByOp)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReluChain64Executor)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ReluChain64KernelsOnly)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_SmallCnnExecutor)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
