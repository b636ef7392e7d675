// The practical peak measurement; see peak.h.
#include "backends/onednn/peak.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <unordered_map>
#include <vector>

#include "backends/onednn/cpu_features.h"
#include "backends/onednn/onednn_common.h"
#include "kiln/error.hpp"

namespace kiln::onednn {
namespace {

// Square, 512: the float32 weight (1 MiB) stays in one core's 2 MiB L2 while oneDNN's kernel
// streams the rows of the input past it, and the three operands (3 MiB) fit the 32 MiB L3, so the
// measure is of the vector units, not of memory. Measured here at one thread: 512^3 reaches 113
// GFLOPS in float32 where 768^3 and larger (weights spilling from L2) reach about 80.
constexpr int64_t kSize = 512;

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// A memory of `desc` (any layout and type) holding uniform values in [-1, 1) converted to its type
// (an integer type rounds them; the timing does not depend on the values).
dnnl::memory random_memory(const dnnl::memory::desc& desc, dnnl::stream& stream) {
  dnnl::memory source({{kSize, kSize}, dt::f32, tag::ab}, cpu_engine());
  float* values = static_cast<float*>(source.get_data_handle());
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (int64_t i = 0; i < kSize * kSize; ++i) values[i] = dist(rng);
  dnnl::memory target(desc, cpu_engine());
  dnnl::reorder(source, target).execute(stream, source, target);
  stream.wait();
  return target;
}

// OpenMP's thread count is a setting of the calling thread: set for the measurement, then put
// back, so that the caller's later oneDNN calls keep theirs.
class OmpThreads {
 public:
  explicit OmpThreads(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreads() { omp_set_num_threads(saved_); }
  OmpThreads(const OmpThreads&) = delete;
  OmpThreads& operator=(const OmpThreads&) = delete;

 private:
  int saved_;
};

}  // namespace

double measure_matmul_peak_gflops(int threads, DType dtype, double seconds) {
  KILN_CHECK(dtype == DType::kFloat32 || dtype == DType::kBFloat16 || dtype == DType::kInt8,
             ErrorCode::kUnsupported,
             "measure_matmul_peak_gflops: expected dtype float32, bfloat16 or int8, got ", dtype_name(dtype));
  KILN_CHECK(threads >= 1, ErrorCode::kInvalidArgument,
             "measure_matmul_peak_gflops: expected at least 1 thread, got ", threads);
  KILN_CHECK(seconds > 0, ErrorCode::kInvalidArgument,
             "measure_matmul_peak_gflops: expected a positive time in seconds, got ", seconds);
  KILN_CHECK(dtype != DType::kBFloat16 || cpu_computes_bf16(), ErrorCode::kUnsupported,
             "measure_matmul_peak_gflops: oneDNN computes no bfloat16 on this CPU (it needs AVX-512 or "
             "AVX-NE-CONVERT)");
  const OmpThreads omp_threads(threads);
  // int8 is what Kiln's quantized kernels run: unsigned 8-bit activations times signed 8-bit
  // weights, summed in int32 (VNNI's vpdpbusd, AMX's tdpbusd).
  const bool int8 = dtype == DType::kInt8;
  const dt source_type = int8 ? dt::u8 : *to_dnnl(dtype), result_type = int8 ? dt::s32 : source_type;
  // The weight in the layout oneDNN prefers, as Kiln prepares constant weights.
  const dnnl::memory::desc a({kSize, kSize}, source_type, tag::ab),
      b({kSize, kSize}, *to_dnnl(dtype), tag::any), c({kSize, kSize}, result_type, tag::ab);
  const dnnl::matmul::primitive_desc pd(cpu_engine(), a, b, c);
  KILN_CHECK(!is_generic_impl(pd), ErrorCode::kUnsupported, "measure_matmul_peak_gflops: oneDNN has only ",
             pd.impl_info_str(), " for a ", dtype_name(dtype), " matmul on this CPU, not a peak measure");
  const dnnl::matmul matmul(pd);
  dnnl::stream stream(cpu_engine());
  std::unordered_map<int, dnnl::memory> args = {{DNNL_ARG_SRC, random_memory(pd.src_desc(), stream)},
                                                {DNNL_ARG_WEIGHTS, random_memory(pd.weights_desc(), stream)},
                                                {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), cpu_engine())}};
  if (pd.scratchpad_desc().get_size() != 0)
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd.scratchpad_desc(), cpu_engine());

  using clock = std::chrono::steady_clock;
  const auto call_seconds = [&] {
    const auto start = clock::now();
    matmul.execute(stream, args);
    stream.wait();
    return std::chrono::duration<double>(clock::now() - start).count();
  };
  // Warm-up: kernel generation, first touch of the output and scratchpad, caches and clocks.
  const auto begin = clock::now();
  for (int i = 0; i < 2 || clock::now() - begin < std::chrono::duration<double>(0.1 * seconds); ++i)
    call_seconds();
  std::vector<double> times;
  const auto timed_begin = clock::now();
  while (times.size() < 5 || clock::now() - timed_begin < std::chrono::duration<double>(0.9 * seconds))
    times.push_back(call_seconds());
  std::nth_element(times.begin(), times.begin() + static_cast<ptrdiff_t>(times.size() / 2), times.end());
  const double median = times[times.size() / 2];
  return 2.0 * static_cast<double>(kSize * kSize * kSize) / median / 1e9;
}

}  // namespace kiln::onednn
