// What the quantization family shares (QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear
// in quantize.cc; MatMulInteger, QLinearMatMul, ConvInteger and QLinearConv in
// quantized_matmul.cc): Kiln's quantized types and the one rounding rule ONNX fixes for all of
// them, y = saturate(round_half_to_even(v) + zero_point).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "infer_util.h"

namespace kiln::ops {

// The quantized types of Kiln's int8 ops (QLinear*, the fused ops). ONNX also quantizes to 4- and
// 2-bit integers and to 8-, 6- and 4-bit floats; Kiln has no such tensors.
inline constexpr DType kQuantizedDTypes[] = {DType::kInt8, DType::kUInt8};
// What QuantizeLinear writes and DequantizeLinear reads: the 8-bit types and the 16-bit ones.
inline constexpr DType kLinearQuantizedDTypes[] = {DType::kInt8, DType::kUInt8, DType::kInt16,
                                                   DType::kUInt16};

// The types of scales that multiply (DequantizeLinear, QLinearMatMul).
inline constexpr DType kScaleDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};

// Dimensions that may be equal: equal, or either unknown (-1) during inference.
inline bool dims_agree(int64_t a, int64_t b) {
  return a == b || a < 0 || b < 0;
}

// Elements of work per parallel task in the elementwise loops of this family.
inline constexpr int64_t kQuantizeGrain = int64_t{1} << 15;

// saturate(round_half_to_even(value) + zero_point) in Q's range. NaN gives Q's minimum, as the
// ONNX reference and ONNX Runtime do on x86 (the spec leaves it open).
template <class Q>
Q saturate_round(double value, int32_t zero_point) {
  constexpr double lo = std::numeric_limits<Q>::min(), hi = std::numeric_limits<Q>::max();
  if (std::isnan(value)) return std::numeric_limits<Q>::min();
  // nearbyint rounds half to even in the default rounding mode, which Kiln never changes. The
  // sum is exact: a rounded double that is not exact lies far outside Q's range anyway.
  return static_cast<Q>(std::clamp(std::nearbyint(value) + zero_point, lo, hi));
}

}  // namespace kiln::ops
