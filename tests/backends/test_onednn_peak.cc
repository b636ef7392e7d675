// measure_matmul_peak_gflops reports a rate this core can reach: below what its widest units do per
// cycle (from /proc/cpuinfo's flags: float32 32 FLOP with two AVX2 FMA pipes, 64 with AVX-512;
// bfloat16 128 with AVX512_BF16, 1,024 with AMX; int8 128 operations with AVX2, 256 with AVX-512
// VNNI or BW, 2,048 with AMX) at 6 GHz, and above a tenth of that width at 1 GHz, so a FLOP
// miscounted by a factor shows either way; and it refuses dtypes and arguments it cannot measure
// with a kiln::Error. What it measures on a machine is bench/peak_gflops' business: a comparison
// of timings would fail whenever other processes load the cores.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "backends/onednn/cpu_features.h"
#include "backends/onednn/peak.h"
#include "kiln/error.hpp"
#include "test_support.h"

namespace kiln::onednn {
namespace {

std::set<std::string> cpu_flags() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

// Operations per cycle of the widest units of this core for `dtype`.
double widest_per_cycle(DType dtype) {
  const std::set<std::string> f = cpu_flags();
  const bool avx512 = f.count("avx512f") > 0;
  if (dtype == DType::kFloat32) return avx512 ? 64 : 32;
  if (dtype == DType::kBFloat16) return f.count("amx_bf16") ? 1024 : 128;
  return f.count("amx_int8") ? 2048 : (f.count("avx512_vnni") || f.count("avx512bw") ? 256 : 128);
}

void expect_reachable(double gflops, DType dtype) {
  const double width = widest_per_cycle(dtype);
  EXPECT_LT(gflops, width * 6.0) << dtype << ": more than " << width << " per cycle at 6 GHz";
  EXPECT_GT(gflops, width * 1.0 / 10) << dtype << ": less than a tenth of " << width << " per cycle at 1 GHz";
}

TEST(OnednnPeak, Float32PeakIsARateACoreCanReach) {
  expect_reachable(measure_matmul_peak_gflops(1, DType::kFloat32, 0.2), DType::kFloat32);
}

// Where oneDNN has no bfloat16 arithmetic (AVX2 CPUs) there is no bfloat16 peak, and the
// measurement says so instead of timing something else.
TEST(OnednnPeak, BFloat16PeakIsARateACoreCanReach) {
  if (!cpu_computes_bf16()) {
    EXPECT_EQ(testing::code_of([] { measure_matmul_peak_gflops(1, DType::kBFloat16, 0.2); }),
              ErrorCode::kUnsupported);
    return;
  }
  expect_reachable(measure_matmul_peak_gflops(1, DType::kBFloat16, 0.2), DType::kBFloat16);
}

TEST(OnednnPeak, Int8PeakIsARateACoreCanReach) {
  expect_reachable(measure_matmul_peak_gflops(1, DType::kInt8, 0.2), DType::kInt8);
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
