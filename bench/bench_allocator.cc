// The caching allocator's benefit: an allocation-heavy loop (temporaries of activation size,
// written once, as an op's output would be) with the pool on and with it off (limit 0).
#include <benchmark/benchmark.h>

#include <cstring>

#include "kiln/allocator.hpp"
#include "kiln/tensor.hpp"

namespace {

void run_loop(benchmark::State& state, bool pooled) {
  const size_t saved_limit = kiln::pool_limit();
  kiln::set_pool_limit(pooled ? size_t{1} << 30 : 0);
  const int64_t elements = state.range(0);
  const kiln::AllocatorStats before = kiln::allocator_stats();
  for (auto _ : state) {
    // Three live temporaries per step, like a small chain of ops.
    kiln::Tensor a = kiln::Tensor::empty({elements}, kiln::DType::kFloat32);
    kiln::Tensor b = kiln::Tensor::empty({elements}, kiln::DType::kFloat32);
    std::memset(a.raw_data(), 0, a.nbytes());
    std::memset(b.raw_data(), 1, b.nbytes());
    kiln::Tensor c = kiln::Tensor::empty({elements}, kiln::DType::kFloat32);
    std::memcpy(c.raw_data(), a.raw_data(), c.nbytes());
    benchmark::DoNotOptimize(c.raw_data());
  }
  const kiln::AllocatorStats after = kiln::allocator_stats();
  const double allocations = static_cast<double>(after.num_allocations - before.num_allocations);
  state.counters["pool_hit_rate"] =
      allocations > 0 ? static_cast<double>(after.num_pool_hits - before.num_pool_hits) / allocations : 0.0;
  state.SetBytesProcessed(state.iterations() * 4 * elements * 4);
  kiln::set_pool_limit(saved_limit);
  kiln::release_cached();
}

void BM_AllocLoopPooled(benchmark::State& state) {
  run_loop(state, true);
}
void BM_AllocLoopUnpooled(benchmark::State& state) {
  run_loop(state, false);
}

}  // namespace

BENCHMARK(BM_AllocLoopPooled)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);
BENCHMARK(BM_AllocLoopUnpooled)->Arg(1 << 10)->Arg(1 << 16)->Arg(1 << 20);
BENCHMARK_MAIN();
