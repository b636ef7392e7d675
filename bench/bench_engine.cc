// The engine's overhead per pushed op: empty ops, so only the scheduling is timed.
//   independent: each op writes its own var (they may run in parallel);
//   chain: every op writes the same var (strict order, handed from op to op);
//   small_chain: the chain pushed as WorkSize::kSmall, so each op runs inside push();
//   ndarray_small: a one-element NDArray Add, i.e. inference + allocation + push + kernel.
#include <benchmark/benchmark.h>

#include "engine/engine.h"
#include "kiln/ndarray.hpp"

namespace {

constexpr int kOpsPerIteration = 10000;

void BM_PushIndependent(benchmark::State& state) {
  auto& engine = kiln::engine::get();
  std::vector<kiln::engine::VarPtr> vars;
  for (int i = 0; i < 64; ++i) vars.push_back(kiln::engine::new_var());
  for (auto _ : state) {
    for (int i = 0; i < kOpsPerIteration; ++i)
      engine.push([] {}, {}, {vars[static_cast<size_t>(i % 64)]}, "noop");
    engine.wait_all();
  }
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations()) * kOpsPerIteration,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_PushChain(benchmark::State& state) {
  auto& engine = kiln::engine::get();
  auto var = kiln::engine::new_var();
  for (auto _ : state) {
    for (int i = 0; i < kOpsPerIteration; ++i) engine.push([] {}, {}, {var}, "noop");
    engine.wait_all();
  }
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations()) * kOpsPerIteration,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_PushSmallChain(benchmark::State& state) {
  auto& engine = kiln::engine::get();
  auto var = kiln::engine::new_var();
  for (auto _ : state) {
    for (int i = 0; i < kOpsPerIteration; ++i)
      engine.push([] {}, {}, {var}, "noop", kiln::engine::WorkSize::kSmall);
    engine.wait_all();
  }
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations()) * kOpsPerIteration,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_NDArraySmallAdd(benchmark::State& state) {
  auto a = kiln::nd::ones({1}), b = kiln::nd::ones({1});
  for (auto _ : state) {
    for (int i = 0; i < kOpsPerIteration; ++i) benchmark::DoNotOptimize(a + b);
    kiln::nd::waitall();
  }
  state.counters["ns_per_op"] = benchmark::Counter(static_cast<double>(state.iterations()) * kOpsPerIteration,
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

}  // namespace

BENCHMARK(BM_PushIndependent)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PushChain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_PushSmallChain)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_NDArraySmallAdd)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
