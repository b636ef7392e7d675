// Times the oneDNN primitives Kiln's models spend their time in, so that oneDNN builds can be
// compared on this machine: every distinct convolution of ResNet-50 (torchvision's v1.5, batch 1),
// MobileNetV2 depthwise 3x3 convolutions and BERT-base's matmuls, in float32 and bfloat16. Layouts
// are left to oneDNN (format_tag::any), as a framework that propagates blocked layouts would run
// them; the inputs are reordered once, outside the timing. Standalone (no Kiln), and written for
// both the 2.x and the 3.x API, so that bench/onednn_versions/run.sh can build it against each
// installed oneDNN. Threads: the library's own default (OMP_NUM_THREADS for OpenMP builds).
//
//   onednn_versions [--only SUBSTRING] [--seconds S]
// prints one tab-separated line per case: name, dtype, MFLOP, best ms, median ms, GFLOPS (at the best
// time), implementation. The machine is shared, so the best of several batches is the figure that
// other processes disturb least; the median shows how much they did.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;
using dims = dnnl::memory::dims;

struct Conv {
  const char* name;
  int channels_in, channels_out, kernel, stride, size_in;  // square images and kernels
  int groups;
  int count;  // how often the network has this convolution (for the whole-network sum)
  int pad() const { return kernel / 2; }
  int size_out() const { return (size_in + 2 * pad() - kernel) / stride + 1; }
  double flops() const {
    return 2.0 * size_out() * size_out() * channels_out * (channels_in / groups) * kernel * kernel;
  }
};

// torchvision's ResNet-50 (stride in the 3x3 convolution), with how often each shape occurs: 53
// convolutions, 8.2 GFLOP at batch 1.
const std::vector<Conv> kResnet50 = {
    {"rn50 conv1 7x7/2 3-64 @224", 3, 64, 7, 2, 224, 1, 1},
    {"rn50 1x1 64-64 @56", 64, 64, 1, 1, 56, 1, 1},
    {"rn50 3x3 64-64 @56", 64, 64, 3, 1, 56, 1, 3},
    {"rn50 1x1 64-256 @56", 64, 256, 1, 1, 56, 1, 4},
    {"rn50 1x1 256-64 @56", 256, 64, 1, 1, 56, 1, 2},
    {"rn50 1x1 256-128 @56", 256, 128, 1, 1, 56, 1, 1},
    {"rn50 3x3/2 128-128 @56", 128, 128, 3, 2, 56, 1, 1},
    {"rn50 1x1/2 256-512 @56", 256, 512, 1, 2, 56, 1, 1},
    {"rn50 1x1 128-512 @28", 128, 512, 1, 1, 28, 1, 4},
    {"rn50 1x1 512-128 @28", 512, 128, 1, 1, 28, 1, 3},
    {"rn50 3x3 128-128 @28", 128, 128, 3, 1, 28, 1, 3},
    {"rn50 1x1 512-256 @28", 512, 256, 1, 1, 28, 1, 1},
    {"rn50 3x3/2 256-256 @28", 256, 256, 3, 2, 28, 1, 1},
    {"rn50 1x1/2 512-1024 @28", 512, 1024, 1, 2, 28, 1, 1},
    {"rn50 1x1 256-1024 @14", 256, 1024, 1, 1, 14, 1, 6},
    {"rn50 1x1 1024-256 @14", 1024, 256, 1, 1, 14, 1, 5},
    {"rn50 3x3 256-256 @14", 256, 256, 3, 1, 14, 1, 5},
    {"rn50 1x1 1024-512 @14", 1024, 512, 1, 1, 14, 1, 1},
    {"rn50 3x3/2 512-512 @14", 512, 512, 3, 2, 14, 1, 1},
    {"rn50 1x1/2 1024-2048 @14", 1024, 2048, 1, 2, 14, 1, 1},
    {"rn50 1x1 512-2048 @7", 512, 2048, 1, 1, 7, 1, 3},
    {"rn50 1x1 2048-512 @7", 2048, 512, 1, 1, 7, 1, 2},
    {"rn50 3x3 512-512 @7", 512, 512, 3, 1, 7, 1, 2},
};

// Three of MobileNetV2's depthwise convolutions: early (large image), middle and late.
const std::vector<Conv> kDepthwise = {
    {"mnv2 dw3x3/2 96 @112", 96, 96, 3, 2, 112, 96, 1},
    {"mnv2 dw3x3 144 @56", 144, 144, 3, 1, 56, 144, 1},
    {"mnv2 dw3x3 576 @14", 576, 576, 3, 1, 14, 576, 1},
};

struct Matmul {
  const char* name;
  int m, k, n;
  double flops() const { return 2.0 * m * k * n; }
};

// BERT-base at sequence length 128: the QKV/output projections and the two feed-forward layers.
const std::vector<Matmul> kBert = {
    {"bert 128x768x768", 128, 768, 768},
    {"bert 128x768x3072", 128, 768, 3072},
    {"bert 128x3072x768", 128, 3072, 768},
};

struct Result {
  double best_ms = 0, median_ms = 0;
  std::string impl;
};

// A memory of `desc` filled with uniform values in [-1, 1), written as float32 in `plain` layout
// and reordered into `desc` (which may be blocked and of another type).
dnnl::memory random_memory(const dnnl::engine& eng, dnnl::stream& strm, const dnnl::memory::desc& desc,
                           const dims& shape, tag plain, std::mt19937& rng) {
  dnnl::memory source({shape, dt::f32, plain}, eng);
  float* values = static_cast<float*>(source.get_data_handle());
  const size_t n = source.get_desc().get_size() / sizeof(float);
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  for (size_t i = 0; i < n; ++i) values[i] = dist(rng);
  dnnl::memory target(desc, eng);
  dnnl::reorder(source, target).execute(strm, source, target);
  strm.wait();
  return target;
}

// The time of one call (best and median over 20 batches of calls, each batch running calls until
// `seconds / 20` have passed), after a warm-up (first touch of buffers, kernel generation, caches).
// Batches end by the clock, not by a count of calls, so that a stall of the shared machine (an
// OpenMP thread waiting for a core) cannot stretch a batch without bound.
Result time_calls(const dnnl::primitive& prim, std::unordered_map<int, dnnl::memory>& args,
                  dnnl::stream& strm, double seconds, const char* impl) {
  using clock = std::chrono::steady_clock;
  auto run = [&](double batch_seconds) {
    const auto start = clock::now();
    int calls = 0;
    std::chrono::duration<double> elapsed{0};
    do {
      prim.execute(strm, args);
      strm.wait();
      ++calls;
      elapsed = clock::now() - start;
    } while (elapsed.count() < batch_seconds);
    return elapsed.count() * 1e3 / calls;
  };
  const int batches = 20;
  run(seconds / batches);
  std::vector<double> ms;
  for (int b = 0; b < batches; ++b) ms.push_back(run(seconds / batches));
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2], impl};
}

Result time_conv(const dnnl::engine& eng, dnnl::stream& strm, const Conv& c, dt type, double seconds) {
  const dims src_dims = {1, c.channels_in, c.size_in, c.size_in};
  const dims dst_dims = {1, c.channels_out, c.size_out(), c.size_out()};
  const dims weights_dims =
      c.groups == 1 ? dims{c.channels_out, c.channels_in, c.kernel, c.kernel}
                    : dims{c.groups, c.channels_out / c.groups, c.channels_in / c.groups, c.kernel, c.kernel};
  const dims bias_dims = {c.channels_out};
  const dims strides = {c.stride, c.stride}, padding = {c.pad(), c.pad()};
  const dnnl::memory::desc src(src_dims, type, tag::any), weights(weights_dims, type, tag::any),
      bias(bias_dims, dt::f32, tag::a), dst(dst_dims, type, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc pd(eng, dnnl::prop_kind::forward_inference,
                                               dnnl::algorithm::convolution_direct, src, weights, bias, dst,
                                               strides, padding, padding);
#else
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                      src, weights, bias, dst, strides, padding, padding),
      eng);
#endif
  std::mt19937 rng(1);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, random_memory(eng, strm, pd.src_desc(), src_dims, tag::nchw, rng)},
      {DNNL_ARG_WEIGHTS, random_memory(eng, strm, pd.weights_desc(), weights_dims,
                                       c.groups == 1 ? tag::oihw : tag::goihw, rng)},
      {DNNL_ARG_BIAS, random_memory(eng, strm, pd.bias_desc(), bias_dims, tag::a, rng)},
      {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng)}};
  if (pd.scratchpad_desc().get_size() != 0)
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd.scratchpad_desc(), eng);
  return time_calls(dnnl::convolution_forward(pd), args, strm, seconds, pd.impl_info_str());
}

Result time_matmul(const dnnl::engine& eng, dnnl::stream& strm, const Matmul& mm, dt type, double seconds) {
  const dims a_dims = {mm.m, mm.k}, b_dims = {mm.k, mm.n}, c_dims = {mm.m, mm.n};
  // The activation and the result stay row-major (what the next op of a transformer reads); the
  // weight takes the layout oneDNN prefers, as a constant prepared once.
  const dnnl::memory::desc a(a_dims, type, tag::ab), b(b_dims, type, tag::any), c(c_dims, type, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(eng, a, b, c);
#else
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), eng);
#endif
  std::mt19937 rng(1);
  std::unordered_map<int, dnnl::memory> args = {
      {DNNL_ARG_SRC, random_memory(eng, strm, pd.src_desc(), a_dims, tag::ab, rng)},
      {DNNL_ARG_WEIGHTS, random_memory(eng, strm, pd.weights_desc(), b_dims, tag::ab, rng)},
      {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), eng)}};
  if (pd.scratchpad_desc().get_size() != 0)
    args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd.scratchpad_desc(), eng);
  return time_calls(dnnl::matmul(pd), args, strm, seconds, pd.impl_info_str());
}

void print(const std::string& name, const char* dtype, double flops, const Result& r) {
  std::printf("%s\t%s\t%.1f\t%.4f\t%.4f\t%.1f\t%s\n", name.c_str(), dtype, flops / 1e6, r.best_ms,
              r.median_ms, flops / (r.best_ms * 1e6), r.impl.c_str());
  std::fflush(stdout);
}

// Runs `measure` and prints its line, or a line saying why the case did not run (oneDNN refuses
// some data types on some CPUs and versions).
template <typename Measure>
void run_case(const std::string& name, const char* dtype, double flops, Measure measure) {
  try {
    print(name, dtype, flops, measure());
  } catch (const dnnl::error& e) {
    std::printf("%s\t%s\t%.1f\t-\t-\t-\tunsupported: %s\n", name.c_str(), dtype, flops / 1e6, e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string only;
  double seconds = 0.3;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--only") == 0) {
      only = argv[i + 1];
    } else if (std::strcmp(argv[i], "--seconds") == 0) {
      seconds = std::atof(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: %s [--only SUBSTRING] [--seconds S]\n", argv[0]);
      return 2;
    }
  }
  try {
    const dnnl_version_t* v = dnnl_version();
    const char* runtime = v->cpu_runtime == DNNL_RUNTIME_OMP    ? "OpenMP"
                          : v->cpu_runtime == DNNL_RUNTIME_TBB  ? "TBB"
                          : v->cpu_runtime == DNNL_RUNTIME_SEQ  ? "sequential"
                          : v->cpu_runtime == DNNL_RUNTIME_SYCL ? "SYCL"
                                                                : "other";
    std::printf("# oneDNN %d.%d.%d, CPU runtime %s\n", v->major, v->minor, v->patch, runtime);
    dnnl::engine eng(dnnl::engine::kind::cpu, 0);
    dnnl::stream strm(eng);
    const std::vector<std::pair<dt, const char*>> types = {{dt::f32, "f32"}, {dt::bf16, "bf16"}};
    auto wanted = [&](const std::string& name, const char* dtype) {
      return only.empty() || (name + " " + dtype).find(only) != std::string::npos;
    };
    for (const auto& [type, dtype] : types) {
      Result network{0, 0, "-"};
      double network_flops = 0;
      bool whole_network = true;
      for (const Conv& c : kResnet50) {
        if (!wanted(c.name, dtype)) {
          whole_network = false;
          continue;
        }
        Result r;
        run_case(c.name, dtype, c.flops(), [&] { return r = time_conv(eng, strm, c, type, seconds); });
        network.best_ms += c.count * r.best_ms;
        network.median_ms += c.count * r.median_ms;
        network_flops += c.count * c.flops();
        whole_network = whole_network && r.best_ms > 0;
      }
      if (whole_network) print("rn50 all 53 convs (sum)", dtype, network_flops, network);
      for (const Conv& c : kDepthwise)
        if (wanted(c.name, dtype))
          run_case(c.name, dtype, c.flops(), [&] { return time_conv(eng, strm, c, type, seconds); });
      for (const Matmul& mm : kBert)
        if (wanted(mm.name, dtype))
          run_case(mm.name, dtype, mm.flops(), [&] { return time_matmul(eng, strm, mm, type, seconds); });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onednn_versions: %s\n", e.what());
    return 1;
  }
  return 0;
}
