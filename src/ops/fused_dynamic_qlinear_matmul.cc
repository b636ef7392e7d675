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
#include "ops/fused_quantized_inputs.h"
#include "ops/fused_quantized_util.h"
#include "ops/infer_util.h"
#include "ops/quantize_util.h"

namespace kiln::ops {
namespace {

using namespace dynamic_qlinear_matmul_input;

std::vector<TensorInfo> infer_fused_dynamic_qlinear_matmul(InferContext& ctx) {
  parse_fused_activation(ctx.attrs().get_string("activation"), ctx.attrs().get_floats("activation_params"));
  const DType float32[] = {DType::kFloat32};
  require_dtype(ctx, kA, float32);
  require_dtype(ctx, kB, kQuantizedDTypes);
  require_dtype(ctx, kBScale, kScaleDTypes);
  return {TensorInfo{DType::kFloat32, quantized_matmul_shape(ctx, kA, kB, kBScale, kBias)}};
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
