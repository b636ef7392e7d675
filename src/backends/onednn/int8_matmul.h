// The int8 matmul FusedQLinearMatMul and FusedDynamicQLinearMatMul share: row-major A (u8 or s8,
// batched over leading axes) times a constant s8 (K, N) weight reordered once into the
// primitive's layout, with per-tensor or per-column weight scales and an optional float bias, both
// broadcast over A's leading axes; the caller's attributes add the rest (source and destination
// scales and zero points, post-ops).
#pragma once

#include <optional>
#include <vector>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {

struct Int8Matmul {
  Prepared<dnnl::matmul> matmul;
  dnnl::memory::desc a_desc, b_desc, bias_desc, out_desc;
  dnnl::memory weights;  // prepared
  bool has_bias = false;
  std::vector<float> weight_scales;
  dnnl::memory::desc columns_f32;  // the weight scales' descriptor

  // The arguments of every call: A's bytes, the weight and its scales, the output, the bias (when
  // there is one); callers append their own scales and zero points.
  std::vector<Arg> arguments(const void* a, void* out, const void* bias) const;
};

// The matmul of A (`a`, read as `a_dtype`) into `y` with the constant weight `b` and
// `weight_scales`; `attr` holds the caller's attributes (the weight-scale mask is set here).
// Nothing when oneDNN has no fast int8 implementation of the combination.
std::optional<Int8Matmul> make_int8_matmul(const ops::TensorInfo& a, DType a_dtype, const Tensor& b,
                                           std::vector<float> weight_scales, const ops::TensorInfo& y,
                                           bool has_bias, dnnl::primitive_attr attr);

}  // namespace kiln::onednn
