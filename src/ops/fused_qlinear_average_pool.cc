// FusedQLinearAveragePool: the int8 average pooling the graph pass fuse_quantized_ops makes out of a
// QDQ graph's DequantizeLinear -> AveragePool | GlobalAveragePool -> QuantizeLinear:
//
//   y = Q(AveragePool(DQ(x)))        x, y: uint8 or int8, quantized per tensor
//
// with AveragePool's attributes (GlobalAveragePool is the window of all spatial axes). The
// reference kernel runs those steps with the reference kernels of DequantizeLinear, AveragePool
// and QuantizeLinear; backends pool the 8-bit values (src/backends/onednn/pool.cc).
#include "ops/fused_quantized_util.h"
#include "ops/infer_util.h"
#include "ops/pool_util.h"
#include "ops/quantize_util.h"

namespace kiln::ops {
namespace {

enum Input { kX, kXScale, kXZero, kYScale, kYZero };

std::vector<TensorInfo> infer_fused_qlinear_average_pool(InferContext& ctx) {
  require_dtype(ctx, kX, kQuantizedDTypes);
  require_dtype(ctx, kXScale, kScaleDTypes);
  require_per_tensor(ctx, kXScale);
  KILN_CHECK(ctx.has_input(kYScale), ErrorCode::kInvalidArgument, ctx.input_label(kYScale),
             ": required (the output is 8-bit)");
  const std::vector<TensorInfo> pooled =
      schema_of("AveragePool")
          .infer_types(ctx.attrs(), {TensorInfo{DType::kFloat32, ctx.shape(kX)}}, {nullptr});
  return {TensorInfo{requantized_dtype(ctx, kYScale, kYZero), pooled[0].shape}};
}

void fused_qlinear_average_pool_kernel(KernelContext& ctx) {
  const OpSchema& pool = schema_of("AveragePool");
  AttrMap given;
  for (const auto& [name, value] : ctx.attrs.values()) given.emplace(name, value);
  const Tensor y = pool.run_reference(pool.bind(given), {dequantize(ctx, kX, kXScale, kXZero, 1)})[0];
  ctx.output(0).copy_from(quantize(y, ctx, kYScale, kYZero));
}

}  // namespace

KILN_REGISTER_OP(FusedQLinearAveragePool)
    .doc("Q(AveragePool(DQ(x))): average pooling of 8-bit values, requantized to y_zero_point's type.")
    .input("x")
    .input("x_scale")
    .input("x_zero_point", Arity::kOptional)
    .input("y_scale")
    .input("y_zero_point", Arity::kOptional)
    .output("y")
    .attr("auto_pad", AttrType::kString, "NOTSET", validate_auto_pad)
    .attr("ceil_mode", AttrType::kInt, 0, require_flag)
    .optional_attr("dilations", AttrType::kInts)
    .required_attr("kernel_shape", AttrType::kInts)
    .optional_attr("pads", AttrType::kInts)
    .optional_attr("strides", AttrType::kInts)
    .attr("count_include_pad", AttrType::kInt, 0, require_flag)
    .infer(infer_fused_qlinear_average_pool)
    .kernel(fused_qlinear_average_pool_kernel);

}  // namespace kiln::ops
