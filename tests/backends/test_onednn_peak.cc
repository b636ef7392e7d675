// measure_matmul_peak_gflops against a naive triple-loop GEMM timed on the same machine: a real
// peak measure must report more than that (oneDNN's blocked AVX kernels run several times
// faster), and it refuses dtypes and arguments it cannot measure with a kiln::Error. Both are
// timed alternately and the best of each compared, so that a share of the cores lost to other
// processes during one measurement does not decide the outcome.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "backends/onednn/peak.h"
#include "kiln/error.hpp"

namespace kiln::onednn {
namespace {

// The GFLOPS of a plain i-k-j loop GEMM (n x n x n float32, one thread), median of 5 runs.
double naive_gemm_gflops(int n) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> a(static_cast<size_t>(n * n)), b(a.size()), c(a.size());
  for (float& v : a) v = dist(rng);
  for (float& v : b) v = dist(rng);
  std::vector<double> seconds;
  for (int run = 0; run < 5; ++run) {
    const auto start = std::chrono::steady_clock::now();
    std::fill(c.begin(), c.end(), 0.f);
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k)
        for (int j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  // Keeps the loop from being optimized away: the result is used.
  EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](float v) { return v == v; }));
  std::sort(seconds.begin(), seconds.end());
  return 2.0 * n * n * n / seconds[2] / 1e9;
}

// The best of three alternating measurements of the naive GEMM and of the peak in `dtype`.
void expect_peak_above_naive_gemm(DType dtype) {
  double naive = 0, peak = 0;
  for (int round = 0; round < 3; ++round) {
    naive = std::max(naive, naive_gemm_gflops(256));
    peak = std::max(peak, measure_matmul_peak_gflops(1, dtype, 0.3));
  }
  EXPECT_GT(peak, naive) << "naive GEMM " << naive << " GFLOPS";
}

TEST(OnednnPeak, Float32PeakIsAboveANaiveGemm) {
  expect_peak_above_naive_gemm(DType::kFloat32);
}

TEST(OnednnPeak, BFloat16PeakIsAboveANaiveFloat32Gemm) {
  expect_peak_above_naive_gemm(DType::kBFloat16);
}

TEST(OnednnPeak, RejectsOtherDtypesAndBadArguments) {
  const auto code_of = [](auto&& call) {
    try {
      call();
    } catch (const Error& e) {
      return e.code();
    }
    ADD_FAILURE() << "no kiln::Error thrown";
    return ErrorCode::kInternal;
  };
  EXPECT_EQ(code_of([] { measure_matmul_peak_gflops(1, DType::kInt32, 0.1); }), ErrorCode::kUnsupported);
  EXPECT_EQ(code_of([] { measure_matmul_peak_gflops(0, DType::kFloat32, 0.1); }),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of([] { measure_matmul_peak_gflops(1, DType::kFloat32, 0); }), ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace kiln::onednn
