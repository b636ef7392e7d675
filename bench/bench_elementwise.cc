// Elementwise Add on 16 M floats against the machine's memory bandwidth, measured here by a
// memcpy of the same size split across the same threads. Bytes counted are bytes moved:
// memcpy reads and writes N floats (8N bytes), Add reads two and writes one (12N bytes).
#include <benchmark/benchmark.h>

#include <cstring>

#include "core/thread_pool.h"
#include "kiln/ndarray.hpp"
#include "ops/op_schema.h"

namespace {

constexpr int64_t kN = 16 << 20;

void BM_MemcpyParallel(benchmark::State& state) {
  kiln::Tensor src = kiln::Tensor::full({kN}, 1.0, kiln::DType::kFloat32);
  kiln::Tensor dst = kiln::Tensor::zeros({kN}, kiln::DType::kFloat32);
  const auto* s = static_cast<const char*>(src.raw_data());
  auto* d = static_cast<char*>(dst.raw_data());
  for (auto _ : state) {
    kiln::parallel_for(0, kN * 4, 1 << 20,
                       [&](int64_t b, int64_t e) { std::memcpy(d + b, s + b, static_cast<size_t>(e - b)); });
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kN * 8);
}

void BM_AddKernel(benchmark::State& state) {
  const auto& add = kiln::ops::OpRegistry::global().get("Add");
  const kiln::Attrs attrs = add.bind({});
  std::vector<kiln::Tensor> inputs{kiln::Tensor::full({kN}, 1.0, kiln::DType::kFloat32),
                                   kiln::Tensor::full({kN}, 2.0, kiln::DType::kFloat32)};
  std::vector<kiln::Tensor> outputs{kiln::Tensor::zeros({kN}, kiln::DType::kFloat32)};
  for (auto _ : state) {
    kiln::ops::KernelContext ctx{attrs, inputs, outputs};
    add.reference_kernel()(ctx);
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * kN * 12);
}

// The same through the NDArray API: shape inference, a pooled output allocation, the engine.
void BM_AddNDArray(benchmark::State& state) {
  auto a = kiln::nd::ones({kN}), b = kiln::nd::ones({kN});
  for (auto _ : state) {
    auto c = a + b;
    c.wait_to_read();
  }
  state.SetBytesProcessed(state.iterations() * kN * 12);
}

// In place: no output allocation at all.
void BM_AddInPlaceNDArray(benchmark::State& state) {
  auto a = kiln::nd::ones({kN}), b = kiln::nd::ones({kN});
  for (auto _ : state) {
    a += b;
    a.wait_to_read();
  }
  state.SetBytesProcessed(state.iterations() * kN * 12);
}

}  // namespace

BENCHMARK(BM_MemcpyParallel)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddKernel)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddNDArray)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_AddInPlaceNDArray)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_MAIN();
