// Plain loops over small 4-D tensors in oneDNN's layouts (row-major, channels last, or blocked by
// channels), for work too small to repay a oneDNN call: each call costs 0.3-0.8 us of fixed
// overhead, several times the work of pooling or converting the feature maps of a small CNN.
#pragma once

#include <optional>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {

// The largest tensors (elements) the plain loops take. They are scalar or 16-byte vector code (the
// build targets baseline x86-64): about 0.25 ns per input element for float32 max pooling, 1 ns per
// element for a conversion and 3 ns for quantizing (a division and a rounding), measured on the
// digits CNN, against a oneDNN call's fixed 0.3-0.5 us and its AVX-512 loops; these sizes are about
// where the two cost the same. oneDNN's 8-bit pooling of channels-last values is slow for few
// channels (3.5 us for 8x16x8x8 values, against 1.2 us in float32), so 8-bit pooling loops go
// further.
inline constexpr int64_t kLoopPoolElements = 2048;
inline constexpr int64_t kLoop8BitPoolElements = 32768;
inline constexpr int64_t kLoopCopyElements = 512;
inline constexpr int64_t kLoopQuantizeElements = 128;

// Where element (n, c, h, w) of a 4-D tensor lies, in elements: n * n_stride + (c / block) *
// block_stride + h * h_stride + w * w_stride + c % block. A channel-blocked layout has its block;
// a channels-last one is one block of all channels (channel stride 1); a row-major one blocks of 1.
struct LoopLayout {
  int64_t block = 1, n_stride = 0, block_stride = 0, h_stride = 0, w_stride = 0;
};

// The loop layout of a 4-D descriptor, or nothing for one the loops do not walk.
std::optional<LoopLayout> loop_layout(const dnnl::memory::desc& desc);

// A conversion of a 4-D tensor from a oneDNN layout to row-major (same dims and type), prepared
// once: plain loops for at most kLoopCopyElements elements, else a reorder.
class ToRowMajor {
 public:
  ToRowMajor(const dnnl::memory::desc& from, const dnnl::memory::desc& to);
  void run(ops::KernelContext& ctx, const void* from, void* to) const;

 private:
  Reorder reorder_;
  std::optional<LoopLayout> loop_;
  dnnl::memory::dims dims_;
  size_t element_size_ = 0;
};

}  // namespace kiln::onednn
