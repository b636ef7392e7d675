// FusedQLinearConv (src/ops/fused_qlinear_conv.cc) on oneDNN's int8 convolution: u8 or s8
// activations with a per-tensor scale and zero point, s8 weights (zero point 0) with per-tensor or
// per-output-channel scales, reordered once at compile time into the primitive's layout, a float
// bias, ONNX Runtime's requantization before a residual as a chain of eltwise post-ops, the
// residual as a sum post-op with its own scale and zero point (accumulated in place when the plan
// lets the output take over the residual's buffer, else copied into the output first; a binary
// post-op into a float32 output), the activation as an eltwise post-op (before the residual
// with residual_after_activation), and the output
// requantized (u8 or s8) or left in float32. Scales and zero points are oneDNN 3 run-time
// arguments (DNNL_ARG_ATTR_SCALES / DNNL_ARG_ATTR_ZERO_POINTS), kept by the kernel since they are
// constants of the graph. The output stays in the primitive's layout (channels last for int8) for
// the next kernel, as Conv's does.
//
// An ungrouped convolution small enough for one thread takes the first implementation oneDNN lists
// that is not brgemm-based, when there is one: a brgemm convolution sets up its batch of kernel
// calls on every call (batch offsets, virtual padding), which for the few hundred output pixels of
// a small CNN costs more than the direct JIT kernel's whole run (the digits CNN's int8 model at
// batch 8: 15.9 -> 13.5 us, at batch 1: 5.8 -> 5.4 us; 1 thread).
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

#include "backends/onednn/conv_geometry.h"
#include "backends/onednn/cpu_features.h"
#include "backends/onednn/onednn_common.h"
#include "ops/fused_quantized_inputs.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

using namespace ops::qlinear_conv_input;

bool is_brgemm(const dnnl::primitive_desc_base& pd) {
  return std::string_view(pd.impl_info_str()).find("brg") != std::string_view::npos;
}

std::vector<float> floats_of(const Tensor& t) {
  return t.cast(DType::kFloat32).contiguous().to_vector<float>();
}

int32_t zero_point_of(const graph::Node& node, int i) {
  if (!has_input(node, i)) return 0;
  const Tensor* t = constant_input(node, i);
  return t ? t->cast(DType::kInt32).to_vector<int32_t>()[0] : 0;
}

struct QConvKernel {
  Prepared<dnnl::convolution_forward> conv;
  Port x, y;
  dnnl::memory::desc weights_desc, bias_desc;
  dnnl::memory weights;
  bool has_bias = false;
  // Run-time arguments: scales (f32) and zero points (s32), with their descriptors.
  std::vector<float> src_scale, weight_scales, dst_scale;
  int32_t src_zero = 0, dst_zero = 0;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, channels_f32, scalar_s32{{1}, dt::s32, tag::a};
  // The residual, copied (or reordered) into the output before the call; the sum post-op then
  // adds z_scale * (Z - z_zero_point) to the result. A float32 output cannot hold 8-bit Z's
  // bytes: there Z is a binary post-op's second input instead (`binary_residual`, its index).
  std::optional<dnnl::memory::desc> residual;
  std::optional<Reorder> residual_reorder;
  std::optional<int> binary_residual;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> x_bytes, y_bytes;
    const void* src = read_port(ctx, x, ctx.input(kX), x_bytes);
    void* dst = write_port(y, ctx.output(0), y_bytes);
    // In place (the plan gave the output Z's buffer when Z has no later reader), Z is there.
    const void* z = residual ? ctx.input(kZ).raw_data() : nullptr;
    if (residual_reorder) {
      reorder(ctx, *residual_reorder, z, dst);
    } else if (residual && !binary_residual && z != dst) {
      std::memcpy(dst, z, residual->get_size());
    }
    std::vector<Arg> args{{DNNL_ARG_SRC, x.used, src},
                          {DNNL_ARG_WEIGHTS, weights_desc, weights.get_data_handle()},
                          {DNNL_ARG_DST, y.used, dst},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scalar_f32, src_scale.data()},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, channels_f32, weight_scales.data()}};
    if (has_bias) args.push_back({DNNL_ARG_BIAS, bias_desc, ctx.input(kBias).raw_data()});
    if (!dst_scale.empty())
      args.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, scalar_f32, dst_scale.data()});
    if (src_zero != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, scalar_s32, &src_zero});
    if (dst_zero != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, scalar_s32, &dst_zero});
    if (binary_residual)
      args.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(*binary_residual) | DNNL_ARG_SRC_1, *residual,
                      ctx.input(kZ).raw_data()});
    execute(ctx, conv, std::span<const Arg>(args));
    finish_write(ctx, y, dst, ctx.output(0));
  }
};

runtime::KernelChoice make_qlinear_conv_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const Tensor* w_constant = constant_input(node, kW);
  const Tensor* w_scale = constant_input(node, kWScale);
  const Tensor* x_scale = constant_input(node, kXScale);
  if (!w_constant || !w_scale || !x_scale || w_constant->dtype() != DType::kInt8) return {};
  if (!int8_products_exact(input_info(node, kX).dtype, *w_constant)) return {};
  if (has_input(node, kXZero) && !constant_input(node, kXZero)) return {};
  if (has_input(node, kYScale) && !constant_input(node, kYScale)) return {};
  if (has_input(node, kYZero) && !constant_input(node, kYZero)) return {};
  if (has_input(node, kWZero)) {  // oneDNN's weights have no zero point
    const Tensor* zero = constant_input(node, kWZero);
    if (!zero) return {};
    for (int32_t v : zero->cast(DType::kInt32).contiguous().to_vector<int32_t>())
      if (v != 0) return {};
  }
  const auto& x = input_info(node, kX);
  const auto& y = output_info(node, 0);
  const Shape& w = w_constant->shape();
  const std::optional<ConvGeometry> geo = conv_geometry(query.attrs, x.shape, y.shape, w);
  const std::optional<dnnl::memory::desc> x_stored = stored_desc(query, kX);
  if (!geo || !x_stored) return {};

  auto kernel = std::make_shared<QConvKernel>();
  const int64_t groups = query.attrs.get_int("group");
  const dnnl::memory::dims& w_dims = geo->weight_dims;
  kernel->src_scale = floats_of(*x_scale);
  kernel->weight_scales = floats_of(*w_scale);
  kernel->src_zero = zero_point_of(node, kXZero);
  const bool per_channel = kernel->weight_scales.size() > 1;
  kernel->channels_f32 =
      dnnl::memory::desc({static_cast<int64_t>(kernel->weight_scales.size())}, dt::f32, tag::a);

  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, per_channel ? (groups > 1 ? 3 : 1) : 0);
  if (kernel->src_zero != 0) attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
  if (has_input(node, kYScale)) {
    kernel->dst_scale = floats_of(*constant_input(node, kYScale));
    kernel->dst_zero = zero_point_of(node, kYZero);
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    if (kernel->dst_zero != 0) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
  }
  const auto y_type = *to_dnnl(y.dtype);
  dnnl::post_ops post;
  if (has_input(node, kMidScale)) {
    // The requantization before the residual, as eltwise post-ops: DQ(Q(v)) =
    // s * clip(round(v / s), lo - z, hi - z), rounding half to even like QuantizeLinear.
    const Tensor* mid_scale = constant_input(node, kMidScale);
    if (!mid_scale || (has_input(node, kMidZero) && !constant_input(node, kMidZero))) return {};
    const float s = floats_of(*mid_scale)[0];
    const float zero = static_cast<float>(zero_point_of(node, kMidZero));
    const bool is_signed = has_input(node, kMidZero) && input_info(node, kMidZero).dtype == DType::kInt8;
    const float lo = is_signed ? -128.f : 0.f, hi = is_signed ? 127.f : 255.f;
    post.append_eltwise(dnnl::algorithm::eltwise_linear, 1.f / s, 0.f);
    post.append_eltwise(dnnl::algorithm::eltwise_round, 0.f, 0.f);
    post.append_eltwise(dnnl::algorithm::eltwise_clip, lo - zero, hi - zero);
    post.append_eltwise(dnnl::algorithm::eltwise_linear, s, 0.f);
  }
  // YOLOv5's bottleneck adds the residual after the activation: the eltwise post-op goes first.
  const bool residual_last = query.attrs.get_int("residual_after_activation") != 0;
  if (residual_last) append_activation(post, query.attrs);
  std::optional<dt> z_type;
  if (has_input(node, kZ)) {
    const Tensor* z_scale = constant_input(node, kZScale);
    if (!z_scale || (has_input(node, kZZero) && !constant_input(node, kZZero))) return {};
    kernel->residual = stored_desc(query, kZ);
    if (!kernel->residual) return {};
    z_type = *to_dnnl(input_info(node, kZ).dtype);
    const float zs = floats_of(*z_scale)[0];
    const auto zz = static_cast<float>(zero_point_of(node, kZZero));
    if (dnnl::memory::data_type_size(*z_type) == dnnl::memory::data_type_size(y_type)) {
      post.append_sum(zs, zero_point_of(node, kZZero), *z_type);
    } else {
      // r + zs * (Z - zz) = zs * (r / zs - zz + Z), Z added as it is stored.
      post.append_eltwise(dnnl::algorithm::eltwise_linear, 1.f / zs, -zz);
      kernel->binary_residual = post.len();
      post.append_binary(dnnl::algorithm::binary_add, *kernel->residual);
      post.append_eltwise(dnnl::algorithm::eltwise_linear, zs, 0.f);
    }
  }
  if (!residual_last) append_activation(post, query.attrs);
  attr.set_post_ops(post);

  const dnnl::memory::desc x_any(to_dims(x.shape), *to_dnnl(x.dtype), tag::any);
  const dnnl::memory::desc y_any(to_dims(y.shape), y_type, tag::any);
  const dnnl::memory::desc w_any(w_dims, dt::s8, tag::any);
  kernel->has_bias = has_input(node, kBias);
  if (kernel->has_bias) kernel->bias_desc = plain_desc(input_info(node, kBias).shape, DType::kFloat32);
  const auto make_pd = [&] {
    if (kernel->has_bias)
      return dnnl::convolution_forward::primitive_desc(
          cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_any, w_any,
          kernel->bias_desc, y_any, geo->strides, geo->dilations, geo->pad_begin, geo->pad_end, attr);
    return dnnl::convolution_forward::primitive_desc(
        cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_any, w_any,
        y_any, geo->strides, geo->dilations, geo->pad_begin, geo->pad_end, attr);
  };
  dnnl::convolution_forward::primitive_desc pd;
  const double flops = 2.0 * static_cast<double>(y.shape.numel()) * static_cast<double>(w.numel() / w[0]);
  create_for(flops);
  try {
    pd = make_pd();
    // A fresh descriptor to walk the list with: next_impl() advances the one it is called on.
    if (flops < kSerialFlops && groups == 1 && is_brgemm(pd)) {
      dnnl::convolution_forward::primitive_desc candidate = make_pd();
      while (is_brgemm(candidate) && candidate.next_impl()) {
      }
      if (!is_brgemm(candidate) && !is_generic_impl(candidate)) pd = candidate;
    }
  } catch (const dnnl::error&) {
    return {};  // a combination oneDNN has no int8 implementation of
  }
  if (is_generic_impl(pd)) return {};
  kernel->conv = Prepared<dnnl::convolution_forward>(pd, flops);
  kernel->weights_desc = pd.weights_desc();
  kernel->weights =
      prepare_constant(wrap(plain_desc(w, DType::kInt8).reshape(w_dims), *w_constant), kernel->weights_desc);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->x = input_port(*x_stored, pd.src_desc());
  kernel->y = output_port(output_store(query, 0, pd.dst_desc(), choice.output_layouts[0]), pd.dst_desc());
  if (kernel->residual && !kernel->binary_residual) {
    // The output's layout in Z's element type: where the residual's bytes must lie.
    dnnl::memory::desc target = pd.dst_desc();
    if (*z_type != y_type) {
      if (target.get_format_kind() != dnnl::memory::format_kind::blocked || target.get_inner_nblks() != 0)
        return {};
      target = dnnl::memory::desc(target.get_dims(), *z_type, target.get_strides());
    }
    if (*kernel->residual != target) kernel->residual_reorder = make_reorder(*kernel->residual, target);
    // Z already lies where the sum reads it: the output may take over its buffer.
    if (*z_type == y_type && !kernel->residual_reorder && !kernel->y.reorder) choice.inplace_input = kZ;
  }
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(FusedQLinearConv, make_qlinear_conv_kernel);

}  // namespace kiln::onednn
