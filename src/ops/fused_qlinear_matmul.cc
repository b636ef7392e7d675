// FusedQLinearMatMul: the int8 matrix product the graph pass fuse_quantized_ops makes out of a QDQ
// graph's DequantizeLinear -> MatMul or Gemm (-> bias Add) (-> activation) (-> QuantizeLinear):
//
//   y = Q(act(MatMul(DQ(a), DQ(b)) + bias))        bias: float32, one value per column
//
// a: uint8 or int8 per tensor, of rank >= 2 (batches of rows); b: a (K, N) int8 or uint8 matrix
// quantized per tensor or per column (axis 1); Q: per tensor to y_zero_point's type, or none (a
// float32 y) without y_scale. The activation is a fused op's (`activation`, `activation_params`).
// The reference kernel runs those steps with the reference kernels of DequantizeLinear,
// FusedMatMul and QuantizeLinear; backends compute it in integers
// (src/backends/onednn/qlinear_matmul.cc).
#include "ops/fused_activation.h"
#include "ops/fused_quantized_inputs.h"
#include "ops/fused_quantized_util.h"
#include "ops/infer_util.h"
#include "ops/quantize_util.h"

namespace kiln::ops {
namespace {

using namespace qlinear_matmul_input;

std::vector<TensorInfo> infer_fused_qlinear_matmul(InferContext& ctx) {
  parse_fused_activation(ctx.attrs().get_string("activation"), ctx.attrs().get_floats("activation_params"));
  require_dtype(ctx, kA, kQuantizedDTypes);
  require_dtype(ctx, kB, kQuantizedDTypes);
  for (int i : {kAScale, kBScale}) require_dtype(ctx, i, kScaleDTypes);
  require_per_tensor(ctx, kAScale);
  return {TensorInfo{requantized_dtype(ctx, kYScale, kYZero),
                     quantized_matmul_shape(ctx, kA, kB, kBScale, kBias)}};
}

void fused_qlinear_matmul_kernel(KernelContext& ctx) {
  std::vector<Tensor> inputs{dequantize(ctx, kA, kAScale, kAZero, 0),
                             dequantize(ctx, kB, kBScale, kBZero, 1)};
  if (ctx.has_input(kBias)) inputs.push_back(ctx.input(kBias));
  const OpSchema& fused = schema_of("FusedMatMul");
  AttrMap given;
  for (const auto& [name, value] : ctx.attrs.values()) given.emplace(name, value);
  Tensor y = fused.run_reference(fused.bind(given), inputs)[0];
  if (ctx.has_input(kYScale)) y = quantize(y, ctx, kYScale, kYZero);
  ctx.output(0).copy_from(y);
}

}  // namespace

KILN_REGISTER_OP(FusedQLinearMatMul)
    .doc(
        "Q(act(MatMul(DQ(a), DQ(b)) + bias)): an int8 matrix product with a float per-column bias and an "
        "activation, requantized to y_zero_point's type, or float32 without y_scale.")
    .input("a")
    .input("a_scale")
    .input("a_zero_point", Arity::kOptional)
    .input("b")
    .input("b_scale")
    .input("b_zero_point", Arity::kOptional)
    .input("y_scale", Arity::kOptional)
    .input("y_zero_point", Arity::kOptional)
    .input("bias", Arity::kOptional)
    .output("y")
    .attr("activation", AttrType::kString, "")
    .attr("activation_params", AttrType::kFloats, std::vector<double>{})
    .infer(infer_fused_qlinear_matmul)
    .kernel(fused_qlinear_matmul_kernel);

}  // namespace kiln::ops
