// How a Conv node's window maps onto oneDNN's convolution primitives, shared by the forward
// kernel (conv.cc) and the gradient kernels (conv_grad.cc): strides, dilations as oneDNN counts
// them (gaps), both pads, and the weight's dimensions with the group axis split off.
#pragma once

#include <optional>

#include "kiln/attrs.hpp"
#include "kiln/shape.hpp"
#include "oneapi/dnnl/dnnl.hpp"

namespace kiln::onednn {

struct ConvGeometry {
  dnnl::memory::dims strides, dilations, pad_begin, pad_end;
  dnnl::memory::dims weight_dims;  // (M, C/group, k...), or (group, M/group, C/group, k...)
  double flops = 0;                // 2 per multiply-add, the same for the forward and both gradients
};

// The geometry of Conv with attributes `attrs` from X of shape `x` to Y of shape `y` with weight
// `w`, or nothing when oneDNN cannot express it (a negative leading pad).
std::optional<ConvGeometry> conv_geometry(const Attrs& attrs, const Shape& x, const Shape& y, const Shape& w);

}  // namespace kiln::onednn
