// measure_matmul_peak_gflops reports a rate a core can reach (positive, below what the widest
// units of any x86 core do per cycle at 6 GHz: 64 float32 FLOP with two AVX-512 FMA pipes, 1,024
// bfloat16 FLOP and 2,048 int8 operations with AMX), so a miscounted FLOP or time shows; and it refuses
// dtypes and arguments it cannot measure with a kiln::Error. What it measures on a machine is
// bench/peak_gflops' business: a comparison of timings would fail whenever other processes load the cores.
#include <gtest/gtest.h>

#include "backends/onednn/cpu_features.h"
#include "backends/onednn/peak.h"
#include "kiln/error.hpp"
#include "test_support.h"

namespace kiln::onednn {
namespace {

TEST(OnednnPeak, Float32PeakIsARateACoreCanReach) {
  const double peak = measure_matmul_peak_gflops(1, DType::kFloat32, 0.2);
  EXPECT_GT(peak, 0.0);
  EXPECT_LT(peak, 64 * 6.0);
}

// Where oneDNN has no bfloat16 arithmetic (AVX2 CPUs) there is no bfloat16 peak, and the
// measurement says so instead of timing something else.
TEST(OnednnPeak, BFloat16PeakIsARateACoreCanReach) {
  if (!cpu_computes_bf16()) {
    EXPECT_EQ(testing::code_of([] { measure_matmul_peak_gflops(1, DType::kBFloat16, 0.2); }),
              ErrorCode::kUnsupported);
    return;
  }
  const double peak = measure_matmul_peak_gflops(1, DType::kBFloat16, 0.2);
  EXPECT_GT(peak, 0.0);
  EXPECT_LT(peak, 1024 * 6.0);
}

TEST(OnednnPeak, Int8PeakIsARateACoreCanReach) {
  const double peak = measure_matmul_peak_gflops(1, DType::kInt8, 0.2);
  EXPECT_GT(peak, 0.0);
  EXPECT_LT(peak, 2048 * 6.0);
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
