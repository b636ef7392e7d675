// The Predictor's overhead over a bare Executor on an MLP 784-256-128-10 at batch 1: input
// checks, the shape-signature lookup in the plan cache and borrowing an Executor from the pool.
// The same pair on a tiny MLP (16-8) shows the fixed cost per call. Also a second signature alternating with
// the first (two cached plans) and 4 threads sharing one Predictor.
#include <benchmark/benchmark.h>

#include <random>

#include "graph/graph.h"
#include "kiln/predictor.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace {

using namespace kiln;

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-0.1f, 0.1f);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& x : v) x = dist(rng);
  return Tensor::from_vector(v, shape);
}

graph::Graph mlp(const std::vector<int64_t>& dims = {784, 256, 128, 10}) {
  std::mt19937 rng(1);
  graph::Graph g;
  g.name = "mlp";
  graph::Value* h = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{-1, dims[0]}});
  for (size_t i = 1; i < dims.size(); ++i) {
    const std::string l = "fc" + std::to_string(i);
    graph::Value* w = g.add_initializer(l + "/W", random_tensor({dims[i - 1], dims[i]}, rng));
    graph::Value* b = g.add_initializer(l + "/b", random_tensor({dims[i]}, rng));
    h = g.add_node("MatMul", {h, w}, {}, l + "/matmul")->outputs[0];
    h = g.add_node("Add", {h, b}, {}, l + "/add")->outputs[0];
    h = g.add_node("Relu", {h}, {}, l + "/relu")->outputs[0];
  }
  g.set_outputs({h});
  return g;
}

const Tensor& input(int64_t batch) {
  static std::mt19937 rng(2);
  static const Tensor one = random_tensor({1, 784}, rng), two = random_tensor({2, 784}, rng);
  return batch == 1 ? one : two;
}

void BM_Executor(benchmark::State& state) {
  runtime::Executor exec(runtime::compile(runtime::bind_input_shapes(mlp(), {{"x", Shape{1, 784}}})));
  const std::vector<Tensor> in = {input(1)};
  for (auto _ : state) benchmark::DoNotOptimize(exec.run(in));
}
BENCHMARK(BM_Executor);

void BM_Predictor(benchmark::State& state) {
  const Predictor p(mlp(), {.opt_level = "none"});
  const std::vector<Tensor> in = {input(1)};
  for (auto _ : state) benchmark::DoNotOptimize(p.predict(in));
}
BENCHMARK(BM_Predictor);

void BM_TinyExecutor(benchmark::State& state) {
  runtime::Executor exec(runtime::compile(runtime::bind_input_shapes(mlp({16, 8}), {{"x", Shape{1, 16}}})));
  const std::vector<Tensor> in = {Tensor::zeros({1, 16}, DType::kFloat32)};
  for (auto _ : state) benchmark::DoNotOptimize(exec.run(in));
}
BENCHMARK(BM_TinyExecutor);

void BM_TinyPredictor(benchmark::State& state) {
  const Predictor p(mlp({16, 8}), {.opt_level = "none"});
  const std::vector<Tensor> in = {Tensor::zeros({1, 16}, DType::kFloat32)};
  for (auto _ : state) benchmark::DoNotOptimize(p.predict(in));
}
BENCHMARK(BM_TinyPredictor);

void BM_PredictorByName(benchmark::State& state) {
  const Predictor p(mlp(), {.opt_level = "none"});
  const std::map<std::string, Tensor> in = {{"x", input(1)}};
  for (auto _ : state) benchmark::DoNotOptimize(p.predict(in));
}
BENCHMARK(BM_PredictorByName);

void BM_PredictorTwoSignatures(benchmark::State& state) {
  const Predictor p(mlp(), {.opt_level = "none"});
  const std::vector<Tensor> one = {input(1)}, two = {input(2)};
  bool first = true;
  for (auto _ : state) {
    benchmark::DoNotOptimize(p.predict(first ? one : two));
    first = !first;
  }
}
BENCHMARK(BM_PredictorTwoSignatures);

void BM_PredictorShared(benchmark::State& state) {
  static const Predictor p(mlp(), {.opt_level = "none"});
  const std::vector<Tensor> in = {input(1)};
  for (auto _ : state) benchmark::DoNotOptimize(p.predict(in));
}
BENCHMARK(BM_PredictorShared)->Threads(4)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
