// FusedDynamicQLinearMatMul: dynamic quantization's matrix product, which the graph pass
// fuse_quantized_ops makes out of DynamicQuantizeLinear(a) -> DequantizeLinear -> MatMul or Gemm
// with a DequantizeLinear'd int8 weight (-> bias Add) (-> activation):
//
//   y = act(MatMul(DQ(DynamicQuantizeLinear(a)), DQ(b)) + bias)
//
// a: float32 of rank >= 2, quantized to uint8 on each call over its own range (ONNX's
// DynamicQuantizeLinear: the range widened to include 0, scale (max - min) / 255); b: a (K, N)
// int8 matrix quantized per tensor or per column; bias: float32, one value per column; y: float32.
// The reference kernel runs those ops' reference kernels; backends compute the product in integers
// (src/backends/onednn/dynamic_qlinear_matmul.cc).
#include "ops/fused_activation.h"
#include "ops/fused_quantized_util.h"
#include "ops/infer_util.h"
#include "ops/quantize_util.h"

namespace kiln::ops {
namespace {

enum Input { kA, kB, kBScale, kBZero, kBias };

std::vector<TensorInfo> infer_fused_dynamic_qlinear_matmul(InferContext& ctx) {
  parse_fused_activation(ctx.attrs().get_string("activation"), ctx.attrs().get_floats("activation_params"));
  const DType float32[] = {DType::kFloat32};
  require_dtype(ctx, kA, float32);
  require_dtype(ctx, kB, kQuantizedDTypes);
  require_dtype(ctx, kBScale, kScaleDTypes);
  const Shape& a = ctx.shape(kA);
  const Shape& b = ctx.shape(kB);
  KILN_CHECK(a.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(kA), ": expected rank >= 2, got ", a);
  KILN_CHECK(b.ndim() == 2, ErrorCode::kShapeMismatch, ctx.input_label(kB),
             ": expected a (K, N) matrix, got ", b);
  KILN_CHECK(dims_agree(a[a.ndim() - 1], b[0]), ErrorCode::kShapeMismatch, ctx.input_label(kA), " ", a,
             " and ", ctx.input_label(kB), " ", b, ": the inner dimensions differ");
  const Shape& b_scale = ctx.shape(kBScale);
  KILN_CHECK(
      b_scale.ndim() == 0 || (b_scale.ndim() == 1 && (b_scale[0] == 1 || dims_agree(b_scale[0], b[1]))),
      ErrorCode::kShapeMismatch, ctx.input_label(kBScale), ": expected one value or one per column (", b[1],
      "), got shape ", b_scale);
  if (ctx.has_input(kBias)) {
    require_dtype(ctx, kBias, float32);
    KILN_CHECK(ctx.shape(kBias).ndim() == 1 && dims_agree(ctx.shape(kBias)[0], b[1]),
               ErrorCode::kShapeMismatch, ctx.input_label(kBias), ": expected one value per column (", b[1],
               "), got ", ctx.shape(kBias));
  }
  Shape y = a;
  y[y.ndim() - 1] = b[1];
  return {TensorInfo{DType::kFloat32, y}};
}

void fused_dynamic_qlinear_matmul_kernel(KernelContext& ctx) {
  const OpSchema& dynamic = schema_of("DynamicQuantizeLinear");
  const std::vector<Tensor> q = dynamic.run_reference(dynamic.bind({}), {ctx.input(kA)});
  const OpSchema& dq = schema_of("DequantizeLinear");
  std::vector<Tensor> b_inputs{ctx.input(kB), ctx.input(kBScale)};
  if (ctx.has_input(kBZero)) b_inputs.push_back(ctx.input(kBZero));
  std::vector<Tensor> inputs{dq.run_reference(dq.bind({}), q)[0],
                             dq.run_reference(dq.bind({{"axis", int64_t{1}}}), b_inputs)[0]};
  if (ctx.has_input(kBias)) inputs.push_back(ctx.input(kBias));
  const OpSchema& fused = schema_of("FusedMatMul");
  AttrMap given;
  for (const auto& [name, value] : ctx.attrs.values()) given.emplace(name, value);
  ctx.output(0).copy_from(fused.run_reference(fused.bind(given), inputs)[0]);
}

}  // namespace

KILN_REGISTER_OP(FusedDynamicQLinearMatMul)
    .doc(
        "act(MatMul(DQ(DynamicQuantizeLinear(a)), DQ(b)) + bias): a float matrix product with an int8 "
        "weight, "
        "the activation quantized to uint8 over its own range on each call.")
    .input("a")
    .input("b")
    .input("b_scale")
    .input("b_zero_point", Arity::kOptional)
    .input("bias", Arity::kOptional)
    .output("y")
    .attr("activation", AttrType::kString, "")
    .attr("activation_params", AttrType::kFloats, std::vector<double>{})
    .infer(infer_fused_dynamic_qlinear_matmul)
    .kernel(fused_dynamic_qlinear_matmul_kernel);

}  // namespace kiln::ops
