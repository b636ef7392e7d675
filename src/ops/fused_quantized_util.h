// What the fused int8 ops (fused_qlinear_conv.cc, fused_qlinear_matmul.cc and
// fused_dynamic_qlinear_matmul.cc) share: the per-tensor check of a scale, the output type of an
// optional requantization, and the DequantizeLinear and QuantizeLinear steps their reference
// kernels run through the registered reference kernels.
#pragma once

#include <vector>

#include "ops/infer_util.h"
#include "ops/quantize_util.h"

namespace kiln::ops {

inline const OpSchema& schema_of(const char* name) {
  return OpRegistry::global().get(name);
}

// Throws unless input i holds one value (per-tensor quantization).
inline void require_per_tensor(const InferContext& ctx, int i) {
  const Shape& s = ctx.shape(i);
  KILN_CHECK(s.ndim() == 0 || (s.ndim() == 1 && (s[0] == 1 || s[0] < 0)), ErrorCode::kShapeMismatch,
             ctx.input_label(i), ": expected one value (per-tensor quantization), got shape ", s);
}

// The output type: float32 without a y_scale, else y_zero_point's type (uint8 without one).
inline DType requantized_dtype(const InferContext& ctx, int y_scale, int y_zero) {
  if (!ctx.has_input(y_scale)) return DType::kFloat32;
  require_per_tensor(ctx, y_scale);
  if (!ctx.has_input(y_zero)) return DType::kUInt8;
  require_dtype(ctx, y_zero, kQuantizedDTypes);
  return ctx.dtype(y_zero);
}

// The operand checks of the quantized MatMuls: A of rank >= 2, B a (K, N) matrix with A's last
// dimension K, B's scale one value or one per column, an optional float32 bias of one value per
// column. Returns the output shape (A's, with N last).
inline Shape quantized_matmul_shape(const InferContext& ctx, int a_input, int b_input, int b_scale_input,
                                    int bias_input) {
  const Shape& a = ctx.shape(a_input);
  const Shape& b = ctx.shape(b_input);
  KILN_CHECK(a.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(a_input), ": expected rank >= 2, got ",
             a);
  KILN_CHECK(b.ndim() == 2, ErrorCode::kShapeMismatch, ctx.input_label(b_input),
             ": expected a (K, N) matrix, got ", b);
  KILN_CHECK(dims_agree(a[a.ndim() - 1], b[0]), ErrorCode::kShapeMismatch, ctx.input_label(a_input), " ", a,
             " and ", ctx.input_label(b_input), " ", b, ": the inner dimensions differ");
  const Shape& b_scale = ctx.shape(b_scale_input);
  KILN_CHECK(
      b_scale.ndim() == 0 || (b_scale.ndim() == 1 && (b_scale[0] == 1 || dims_agree(b_scale[0], b[1]))),
      ErrorCode::kShapeMismatch, ctx.input_label(b_scale_input), ": expected one value or one per column (",
      b[1], "), got shape ", b_scale);
  if (ctx.has_input(bias_input)) {
    const DType float32[] = {DType::kFloat32};
    require_dtype(ctx, bias_input, float32);
    const Shape& bias = ctx.shape(bias_input);
    KILN_CHECK(bias.ndim() == 1 && dims_agree(bias[0], b[1]), ErrorCode::kShapeMismatch,
               ctx.input_label(bias_input), ": expected one value per column (", b[1], "), got ", bias);
  }
  Shape y = a;
  y[y.ndim() - 1] = b[1];
  return y;
}

// DequantizeLinear(input q, its scale, its optional zero point) along `axis`.
inline Tensor dequantize(const KernelContext& ctx, int q, int scale, int zero_point, int64_t axis) {
  const OpSchema& dq = schema_of("DequantizeLinear");
  std::vector<Tensor> inputs{ctx.input(q), ctx.input(scale)};
  if (ctx.has_input(zero_point)) inputs.push_back(ctx.input(zero_point));
  return dq.run_reference(dq.bind({{"axis", axis}}), inputs)[0];
}

// QuantizeLinear(y, the input `scale`, its optional zero point), per tensor.
inline Tensor quantize(const Tensor& y, const KernelContext& ctx, int scale, int zero_point) {
  const OpSchema& q = schema_of("QuantizeLinear");
  std::vector<Tensor> inputs{y, ctx.input(scale)};
  if (ctx.has_input(zero_point)) inputs.push_back(ctx.input(zero_point));
  return q.run_reference(q.bind({}), inputs)[0];
}

}  // namespace kiln::ops
