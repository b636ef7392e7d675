// Conv (1 to 3 spatial axes, grouped and depthwise, with bias) and FusedConv (plus a residual
// and an activation, as post-ops) on oneDNN's convolution primitive. The primitive picks its
// layouts (format `any`) and, under a bf16 or fp16 plan, computes in that type: a constant weight
// is reordered into its layout once at compile time (one computed at run time, as in training, on
// each call), and the output is left in the primitive's layout for the next kernel
// (runtime::ValueLayout) unless it is a graph output. An input stored in another layout than the
// primitive reads is reordered on each call; a convolution small enough for one thread first asks
// for a primitive that reads the input as it is stored, since for it that per-call reorder (a
// oneDNN call of fixed cost) can take longer than the convolution gains from its favourite layout.
// FusedConv's residual is accumulated in place when the plan gives the output its buffer.
#include <cstring>
#include <memory>

#include "backends/onednn/conv_geometry.h"
#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

struct ConvKernel {
  Prepared<dnnl::convolution_forward> conv;
  Port x, y;  // activations: as stored, and as the primitive reads and writes them
  dnnl::memory::desc weights_desc, bias_desc;
  PackedConstant weights;  // prepared, for a constant weight; else read through the port w
  std::optional<Port> w;
  bool has_bias = false;
  // FusedConv's Z (the output's shape): placed in the output before the call, which a sum
  // post-op then accumulates into; every fast convolution implements that one. Nothing to place
  // when the plan lets the output take over Z's buffer (a residual stored as the primitive writes
  // and read by no later step); else copied when stored as the primitive writes, or reordered.
  std::optional<dnnl::memory::desc> residual;
  std::optional<Reorder> residual_reorder;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> x_bytes, w_bytes, y_bytes;
    const void* src = read_port(ctx, x, ctx.input(0), x_bytes);
    const void* weight = w ? read_port(ctx, *w, ctx.input(1), w_bytes) : weights.memory.get_data_handle();
    void* dst = write_port(y, ctx.output(0), y_bytes);
    if (residual_reorder) {
      reorder(ctx, *residual_reorder, ctx.input(3).raw_data(), dst);
    } else if (residual && ctx.input(3).raw_data() != dst) {
      std::memcpy(dst, ctx.input(3).raw_data(), y.used.get_size());
    }
    const void* bias = has_bias ? ctx.input(2).raw_data() : nullptr;
    if (has_bias) {
      execute(ctx, conv,
              {{DNNL_ARG_SRC, x.used, src},
               {DNNL_ARG_WEIGHTS, weights_desc, weight},
               {DNNL_ARG_BIAS, bias_desc, bias},
               {DNNL_ARG_DST, y.used, dst}});
    } else {
      execute(ctx, conv,
              {{DNNL_ARG_SRC, x.used, src},
               {DNNL_ARG_WEIGHTS, weights_desc, weight},
               {DNNL_ARG_DST, y.used, dst}});
    }
    finish_write(ctx, y, dst, ctx.output(0));
  }
};

runtime::KernelChoice make_conv_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const Attrs& attrs = query.attrs;
  const Tensor* w_constant = constant_input(node, 1);
  const auto& x = input_info(node, 0);
  const auto& y = output_info(node, 0);
  const Shape& w = input_info(node, 1).shape;
  const std::optional<ConvGeometry> geometry = conv_geometry(attrs, x.shape, y.shape, w);
  if (!geometry) return {};
  const std::optional<dnnl::memory::desc> x_stored = stored_desc(query, 0);
  if (!x_stored) return {};
  const auto type = compute_type(query, x.dtype);
  const dnnl::memory::dims& w_dims = geometry->weight_dims;
  // Weights computed at run time (training) are read row-major and reordered on each call.
  const std::optional<dnnl::memory::desc> w_stored = stored_desc(query, 1);
  const dnnl::memory::desc w_plain = plain_desc(w, input_info(node, 1).dtype);
  if (!w_constant && w_stored != w_plain) return {};
  auto kernel = std::make_shared<ConvKernel>();
  kernel->has_bias = has_input(node, 2);
  // FusedConv: the residual, then the activation, as post-ops on the output (the activation
  // first with residual_after_activation).
  dnnl::primitive_attr attr = base_attr();
  dnnl::post_ops post;
  const bool residual_last = node.op == "FusedConv" && attrs.get_int("residual_after_activation") != 0;
  if (residual_last) append_activation(post, attrs);
  if (has_input(node, 3)) {
    if (input_info(node, 3).dtype != y.dtype || input_info(node, 3).shape != y.shape) return {};
    kernel->residual = stored_desc(query, 3);
    if (!kernel->residual) return {};
    post.append_sum(1.f);
  }
  if (!residual_last) append_activation(post, attrs);
  attr.set_post_ops(post);
  const dnnl::memory::desc x_any(to_dims(x.shape), type, tag::any);
  const dnnl::memory::desc y_any(to_dims(y.shape), type, tag::any);
  const dnnl::memory::desc w_any(w_dims, type, tag::any);
  if (kernel->has_bias) kernel->bias_desc = plain_desc(input_info(node, 2).shape, input_info(node, 2).dtype);
  const auto make_pd = [&](const dnnl::memory::desc& x_desc) {
    if (kernel->has_bias)
      return dnnl::convolution_forward::primitive_desc(
          cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_desc,
          w_any, kernel->bias_desc, y_any, geometry->strides, geometry->dilations, geometry->pad_begin,
          geometry->pad_end, attr);
    return dnnl::convolution_forward::primitive_desc(
        cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_desc, w_any,
        y_any, geometry->strides, geometry->dilations, geometry->pad_begin, geometry->pad_end, attr);
  };
  create_for(geometry->flops);
  dnnl::convolution_forward::primitive_desc pd;
  if (geometry->flops < kSerialFlops && query.input_layouts[0] != nullptr &&
      x_stored->get_data_type() == type) {
    try {
      pd = make_pd(*x_stored);
      if (is_generic_impl(pd)) pd = {};
    } catch (const dnnl::error&) {
      pd = {};  // no implementation reads that layout: the primitive's own, through the port
    }
  }
  try {
    if (!pd) pd = make_pd(x_any);
  } catch (const dnnl::error&) {
    return {};  // a post-op chain no implementation takes stays with the reference kernel
  }
  if (is_generic_impl(pd)) return {};
  kernel->conv = Prepared<dnnl::convolution_forward>(pd, geometry->flops);
  kernel->weights_desc = pd.weights_desc();
  runtime::KernelChoice choice;
  if (w_constant) {
    // A packed copy of the weight's own type holds all of it: the runtime may let the given go.
    const dnnl::memory::desc stored = w_plain.reshape(w_dims);
    kernel->weights = pack_constant(*w_constant, stored, pd.weights_desc());
    if (stored.get_data_type() == pd.weights_desc().get_data_type() && w_constant->is_contiguous())
      choice.owned_constants.emplace_back(1, unpack_constant(kernel->weights, *w_constant, stored));
  } else {
    kernel->w = input_port(w_plain.reshape(w_dims), pd.weights_desc());
  }
  choice.output_layouts.resize(1);
  kernel->x = input_port(*x_stored, pd.src_desc());
  kernel->y = output_port(output_store(query, 0, pd.dst_desc(), choice.output_layouts[0]), pd.dst_desc());
  if (kernel->residual && *kernel->residual != pd.dst_desc())
    kernel->residual_reorder = make_reorder(*kernel->residual, pd.dst_desc());
  // Z already lies where the sum post-op reads it: the output may take over its buffer, which
  // saves a copy of the output's size per call (a serial memcpy: 22 MB per ResNet-50 image).
  if (kernel->residual && !kernel->residual_reorder && !kernel->y.reorder) choice.inplace_input = 3;
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Conv, make_conv_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(FusedConv, make_conv_kernel);

}  // namespace kiln::onednn
