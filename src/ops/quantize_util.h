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

// The quantized types of Kiln's int8 ops (QLinear*, the fused ops).
inline constexpr DType kQuantizedDTypes[] = {DType::kInt8, DType::kUInt8};
// What QuantizeLinear writes and DequantizeLinear reads: the 8- and 16-bit integers, and the
// storage types (dtype.hpp) but float8_e8m0fnu, which scales rather than quantizes.
inline constexpr DType kLinearQuantizedDTypes[] = {
    DType::kInt8,         DType::kUInt8,          DType::kInt16,      DType::kUInt16,
    DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2, DType::kFloat8E5M2FNUZ,
    DType::kFloat4E2M1,   DType::kInt4,           DType::kUInt4,      DType::kInt2,
    DType::kUInt2};

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
// The same in the range [lo, hi] (the 4- and 2-bit integers').
inline double saturate_round_in(double value, int32_t zero_point, double lo, double hi) {
  if (std::isnan(value)) return lo;
  // nearbyint rounds half to even in the default rounding mode, which Kiln never changes. The
  // sum is exact: a rounded double that is not exact lies far outside the range anyway.
  return std::clamp(std::nearbyint(value) + zero_point, lo, hi);
}

template <class Q>
Q saturate_round(double value, int32_t zero_point) {
  return static_cast<Q>(
      saturate_round_in(value, zero_point, std::numeric_limits<Q>::min(), std::numeric_limits<Q>::max()));
}

}  // namespace kiln::ops
