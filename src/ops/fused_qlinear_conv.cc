// FusedQLinearConv: the int8 convolution the graph pass fuse_quantized_ops makes out of a QDQ
// graph's DequantizeLinear -> Conv (-> Add of a dequantized residual) (-> activation)
// (-> QuantizeLinear). QLinearConv's inputs come first, then what QLinearConv lacks:
//
//   y = Q(act(Conv(DQ(x), DQ(w), B) + DQ(Z)))        B: float32, one value per output channel
//
// or, with residual_after_activation = 1 (YOLOv5's bottleneck: x + SiLU(Conv(...))),
//
//   y = Q(act(Conv(DQ(x), DQ(w), B)) + DQ(Z))
//
// With mid_scale (and mid_zero_point, whose type is the 8-bit type), the convolution's result is
// first quantized and dequantized with them, as ONNX Runtime's QDQ models write a Conv whose
// output is quantized before a residual Add: y = Q(act(DQ(Q_mid(Conv(...))) + DQ(Z))).
//
// x, Z: uint8 or int8 per tensor; w: int8 or uint8 per tensor or per output channel (axis 0);
// Q: per tensor to y_zero_point's type, or no quantization (a float32 y) when y_scale is absent,
// where the graph goes on in float. The activation is a fused op's (`activation`,
// `activation_params`, see fused_activation.h). The reference kernel runs exactly those steps
// with the reference kernels of DequantizeLinear, FusedConv and QuantizeLinear, so it is the
// QDQ graph's own result; backends compute it in integers (src/backends/onednn/qlinear_conv.cc).
#include "ops/conv_util.h"
#include "ops/fused_activation.h"
#include "ops/fused_quantized_inputs.h"
#include "ops/fused_quantized_util.h"
#include "ops/infer_util.h"
#include "ops/quantize_util.h"

namespace kiln::ops {
namespace {

using namespace qlinear_conv_input;

// This op's attributes without the activation: Conv's.
Attrs conv_attrs(const Attrs& attrs) {
  AttrMap given;
  for (const auto& [name, value] : attrs.values())
    if (name != "activation" && name != "activation_params" && name != "residual_after_activation")
      given.emplace(name, value);
  return schema_of("Conv").bind(given);
}

std::vector<TensorInfo> infer_fused_qlinear_conv(InferContext& ctx) {
  parse_fused_activation(ctx.attrs().get_string("activation"), ctx.attrs().get_floats("activation_params"));
  require_dtype(ctx, kX, kQuantizedDTypes);
  require_dtype(ctx, kW, kQuantizedDTypes);
  for (int i : {kXScale, kWScale}) require_dtype(ctx, i, kScaleDTypes);
  require_per_tensor(ctx, kXScale);
  const std::vector<TensorInfo> conv = schema_of("Conv").infer_types(
      conv_attrs(ctx.attrs()),
      {TensorInfo{DType::kFloat32, ctx.shape(kX)}, TensorInfo{DType::kFloat32, ctx.shape(kW)}},
      {nullptr, nullptr});
  const Shape& y = conv[0].shape;
  const Shape& w_scale = ctx.shape(kWScale);
  const int64_t channels = ctx.shape(kW).ndim() > 0 ? ctx.shape(kW)[0] : -1;
  KILN_CHECK(
      w_scale.ndim() == 0 || (w_scale.ndim() == 1 && (w_scale[0] == 1 || dims_agree(w_scale[0], channels))),
      ErrorCode::kShapeMismatch, ctx.input_label(kWScale), ": expected one value or one per output channel (",
      channels, "), got shape ", w_scale);
  if (ctx.has_input(kBias)) {
    const DType float32[] = {DType::kFloat32};
    require_dtype(ctx, kBias, float32);
    KILN_CHECK(ctx.shape(kBias).ndim() == 1 && dims_agree(ctx.shape(kBias)[0], y.ndim() > 1 ? y[1] : -1),
               ErrorCode::kShapeMismatch, ctx.input_label(kBias),
               ": expected one value per output channel, got ", ctx.shape(kBias));
  }
  if (ctx.has_input(kZ)) {
    require_dtype(ctx, kZ, kQuantizedDTypes);
    KILN_CHECK(ctx.has_input(kZScale), ErrorCode::kInvalidArgument, ctx.input_label(kZ),
               ": a residual needs its scale (input 10, z_scale)");
    require_per_tensor(ctx, kZScale);
    KILN_CHECK(ctx.shape(kZ) == y || !ctx.shape(kZ).is_known() || !y.is_known(), ErrorCode::kShapeMismatch,
               ctx.input_label(kZ), ": expected the output's shape ", y, ", got ", ctx.shape(kZ));
  }
  if (ctx.has_input(kMidScale)) require_per_tensor(ctx, kMidScale);
  const int64_t residual_last = ctx.attrs().get_int("residual_after_activation");
  KILN_CHECK(residual_last == 0 || residual_last == 1, ErrorCode::kInvalidArgument,
             "residual_after_activation: expected 0 or 1, got ", residual_last);
  KILN_CHECK(
      residual_last == 0 || !ctx.has_input(kMidScale), ErrorCode::kInvalidArgument,
      "residual_after_activation: expected 0 with mid_scale (input 12), which puts the activation after "
      "the residual, got 1");
  return {TensorInfo{requantized_dtype(ctx, kYScale, kYZero), y}};
}

void fused_qlinear_conv_kernel(KernelContext& ctx) {
  const bool mid = ctx.has_input(kMidScale);
  const bool residual_last = ctx.attrs.get_int("residual_after_activation") != 0;
  std::vector<Tensor> conv_inputs{dequantize(ctx, kX, kXScale, kXZero, 1),
                                  dequantize(ctx, kW, kWScale, kWZero, 0),
                                  ctx.has_input(kBias) ? ctx.input(kBias) : Tensor()};
  if (ctx.has_input(kZ) && !mid && !residual_last)
    conv_inputs.push_back(dequantize(ctx, kZ, kZScale, kZZero, 1));
  const OpSchema& fused = schema_of("FusedConv");
  AttrMap given;
  for (const auto& [name, value] : ctx.attrs.values())
    if (name != "residual_after_activation") given.emplace(name, value);
  if (mid) {  // the residual and the activation come after the requantization
    given.insert_or_assign("activation", AttrValue(std::string()));
    given.insert_or_assign("activation_params", AttrValue(std::vector<double>{}));
  }
  Tensor y = fused.run_reference(fused.bind(given), conv_inputs)[0];
  if (mid) {
    const OpSchema& dq = schema_of("DequantizeLinear");
    std::vector<Tensor> inputs{quantize(y, ctx, kMidScale, kMidZero), ctx.input(kMidScale)};
    if (ctx.has_input(kMidZero)) inputs.push_back(ctx.input(kMidZero));
    y = dq.run_reference(dq.bind({}), inputs)[0];
    const Tensor z = ctx.has_input(kZ) ? dequantize(ctx, kZ, kZScale, kZZero, 1) : Tensor();
    const FusedActivation act =
        parse_fused_activation(ctx.attrs.get_string("activation"), ctx.attrs.get_floats("activation_params"));
    float* v = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i)
      v[i] = static_cast<float>(
          act(static_cast<double>(v[i]) + (z.defined() ? double{z.data<float>()[i]} : 0.0)));
  }
  if (residual_last && ctx.has_input(kZ)) {
    const Tensor z = dequantize(ctx, kZ, kZScale, kZZero, 1);
    float* v = y.data<float>();
    for (int64_t i = 0; i < y.numel(); ++i) v[i] += z.data<float>()[i];
  }
  if (ctx.has_input(kYScale)) y = quantize(y, ctx, kYScale, kYZero);
  ctx.output(0).copy_from(y);
}

}  // namespace

KILN_REGISTER_OP(FusedQLinearConv)
    .doc(
        "Q(act(Conv(DQ(x), DQ(w), B) + DQ(Z))): an int8 convolution with a float bias, a quantized residual "
        "and "
        "an activation, requantized to y_zero_point's type, or float32 without y_scale.")
    .input("x")
    .input("x_scale")
    .input("x_zero_point", Arity::kOptional)
    .input("w")
    .input("w_scale")
    .input("w_zero_point", Arity::kOptional)
    .input("y_scale", Arity::kOptional)
    .input("y_zero_point", Arity::kOptional)
    .input("B", Arity::kOptional)
    .input("Z", Arity::kOptional)
    .input("z_scale", Arity::kOptional)
    .input("z_zero_point", Arity::kOptional)
    .input("mid_scale", Arity::kOptional)
    .input("mid_zero_point", Arity::kOptional)
    .output("y")
    .with(conv_window_attrs)
    .attr("activation", AttrType::kString, "")
    .attr("activation_params", AttrType::kFloats, std::vector<double>{})
    .attr("residual_after_activation", AttrType::kInt, 0)
    .infer(infer_fused_qlinear_conv)
    .kernel(fused_qlinear_conv_kernel);

}  // namespace kiln::ops
