// A plain loop for float32 matrix products too small to repay a oneDNN call (a small model's Dense
// layers at batch 1): oneDNN's per-call set-up (argument map, execution context, brgemm batch) is
// 0.7-1.0 us, many times the arithmetic of a 64x64 or 64x10 layer.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "backends/onednn/onednn_common.h"
#include "ops/fused_activation.h"

namespace kiln::onednn {

// The most multiply-adds (M * N * K) the loop takes. It is the compiler's vector code for the
// baseline x86-64 target, about 12-20 GMAC/s, against oneDNN's AVX-512 kernels and their 0.7-1.0 us
// of fixed cost per call: measured on the digits CNN and the MLP (docs/BENCHMARKS.md), the loop
// wins at 8192 (128x64 at batch 1) and loses at 32768 (256x128 at batch 1, 64x64 at batch 8).
inline constexpr int64_t kLoopMatmulMacs = 16384;

// alpha * A B + addend, then an activation, with a constant B copied row-major once. Made by
// make_small_matmul; const after that, so that several executors may run it at once.
struct SmallMatmul {
  int64_t m = 0, n = 0, k = 0;
  int64_t a_row_stride = 0;  // in elements; A's rows are contiguous
  std::vector<float> bt;     // B transposed: (N, K) row-major
  float alpha = 1;
  bool has_addend = false;
  bool addend_per_column = true;  // else one value for every element
  ops::FusedActivation activation;

  // out (M, N) row-major; addend: N values, or one, or nullptr.
  void run(const float* a, const float* addend, float* out) const;
};

// The loop for a x b -> out (as oneDNN descriptors of the stored operands) when every operand is
// float32, B is the constant `b_constant`, A and out are matrices (a batch of rows folded into M
// when A is row-major), the addend (`addend_dims`, right-aligned to the output's rank) is
// per-column or a scalar, and the work is at most kLoopMatmulMacs; else nothing.
std::shared_ptr<const SmallMatmul> make_small_matmul(const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                                                     const Tensor& b_constant,
                                                     const std::optional<dnnl::memory::dims>& addend_dims,
                                                     const dnnl::memory::desc& out, double alpha,
                                                     const Attrs& attrs);

}  // namespace kiln::onednn
