// Conv's gradients on oneDNN's backward convolution primitives: ConvGradData (dX from dY and W)
// on convolution_backward_data and ConvGradWeight (dW from X and dY) on
// convolution_backward_weights. Both are described by the forward convolution they differentiate
// (a forward_training primitive descriptor, never run, is their hint) and pick their layouts as
// the forward kernel does: activations stored in a oneDNN layout are read as they are, others are
// reordered on each call; dX may be left in the primitive's layout for the next kernel, dW is
// written row-major for the optimizer. The bias gradient stays a ReduceSum.
#include <memory>

#include "backends/onednn/conv_geometry.h"
#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

// The forward convolution from X (shape `x`) to Y (`y`) with weight `w`, in `type`, with oneDNN's
// choice of layouts: what the backward primitives are created against.
dnnl::convolution_forward::primitive_desc forward_hint(const ConvGeometry& g, const Shape& x, const Shape& y,
                                                       dnnl::memory::data_type type) {
  return dnnl::convolution_forward::primitive_desc(
      cpu_engine(), dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
      dnnl::memory::desc(to_dims(x), type, tag::any), dnnl::memory::desc(g.weight_dims, type, tag::any),
      dnnl::memory::desc(to_dims(y), type, tag::any), g.strides, g.dilations, g.pad_begin, g.pad_end,
      base_attr());
}

struct GradDataKernel {
  Prepared<dnnl::convolution_backward_data> backward;
  Port dy, w, dx;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> dy_bytes, w_bytes, dx_bytes;
    const void* diff_dst = read_port(ctx, dy, ctx.input(0), dy_bytes);
    const void* weights = read_port(ctx, w, ctx.input(1), w_bytes);
    void* diff_src = write_port(dx, ctx.output(0), dx_bytes);
    execute(ctx, backward,
            {{DNNL_ARG_DIFF_DST, dy.used, diff_dst},
             {DNNL_ARG_WEIGHTS, w.used, weights},
             {DNNL_ARG_DIFF_SRC, dx.used, diff_src}});
    finish_write(ctx, dx, diff_src, ctx.output(0));
  }
};

struct GradWeightKernel {
  Prepared<dnnl::convolution_backward_weights> backward;
  Port x, dy, dw;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> x_bytes, dy_bytes, dw_bytes;
    const void* src = read_port(ctx, x, ctx.input(0), x_bytes);
    const void* diff_dst = read_port(ctx, dy, ctx.input(1), dy_bytes);
    void* diff_weights = write_port(dw, ctx.output(0), dw_bytes);
    execute(ctx, backward,
            {{DNNL_ARG_SRC, x.used, src},
             {DNNL_ARG_DIFF_DST, dy.used, diff_dst},
             {DNNL_ARG_DIFF_WEIGHTS, dw.used, diff_weights}});
    finish_write(ctx, dw, diff_weights, ctx.output(0));
  }
};

// ConvGradData(dY, W, like): dX has like's shape (Conv's X).
runtime::KernelChoice make_grad_data_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& dy = input_info(node, 0);
  const auto& w = input_info(node, 1);
  const auto& dx = output_info(node, 0);
  const std::optional<ConvGeometry> g = conv_geometry(query.attrs, dx.shape, dy.shape, w.shape);
  const std::optional<dnnl::memory::desc> dy_stored = stored_desc(query, 0), w_stored = stored_desc(query, 1);
  const dnnl::memory::desc w_plain = plain_desc(w.shape, w.dtype);
  if (!g || !dy_stored || w_stored != w_plain) return {};
  const auto type = compute_type(query, dx.dtype);
  const auto hint = forward_hint(*g, dx.shape, dy.shape, type);
  const dnnl::convolution_backward_data::primitive_desc pd(
      cpu_engine(), dnnl::algorithm::convolution_direct,
      dnnl::memory::desc(to_dims(dx.shape), type, tag::any),
      dnnl::memory::desc(g->weight_dims, type, tag::any),
      dnnl::memory::desc(to_dims(dy.shape), type, tag::any), g->strides, g->dilations, g->pad_begin,
      g->pad_end, hint, base_attr());
  if (is_generic_impl(pd)) return {};
  auto kernel = std::make_shared<GradDataKernel>();
  kernel->backward = Prepared<dnnl::convolution_backward_data>(pd, g->flops);
  kernel->dy = input_port(*dy_stored, pd.diff_dst_desc());
  kernel->w = input_port(w_plain.reshape(g->weight_dims), pd.weights_desc());
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->dx =
      output_port(output_store(query, 0, pd.diff_src_desc(), choice.output_layouts[0]), pd.diff_src_desc());
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

// ConvGradWeight(X, dY, like): dW has like's shape (Conv's W).
runtime::KernelChoice make_grad_weight_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& x = input_info(node, 0);
  const auto& dy = input_info(node, 1);
  const auto& dw = output_info(node, 0);
  const std::optional<ConvGeometry> g = conv_geometry(query.attrs, x.shape, dy.shape, dw.shape);
  const std::optional<dnnl::memory::desc> x_stored = stored_desc(query, 0), dy_stored = stored_desc(query, 1);
  if (!g || !x_stored || !dy_stored) return {};
  const auto type = compute_type(query, dw.dtype);
  const auto hint = forward_hint(*g, x.shape, dy.shape, type);
  const dnnl::convolution_backward_weights::primitive_desc pd(
      cpu_engine(), dnnl::algorithm::convolution_direct, dnnl::memory::desc(to_dims(x.shape), type, tag::any),
      dnnl::memory::desc(g->weight_dims, type, tag::any),
      dnnl::memory::desc(to_dims(dy.shape), type, tag::any), g->strides, g->dilations, g->pad_begin,
      g->pad_end, hint, base_attr());
  if (is_generic_impl(pd)) return {};
  auto kernel = std::make_shared<GradWeightKernel>();
  kernel->backward = Prepared<dnnl::convolution_backward_weights>(pd, g->flops);
  kernel->x = input_port(*x_stored, pd.src_desc());
  kernel->dy = input_port(*dy_stored, pd.diff_dst_desc());
  kernel->dw = output_port(plain_desc(dw.shape, dw.dtype).reshape(g->weight_dims), pd.diff_weights_desc());
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(ConvGradData, make_grad_data_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(ConvGradWeight, make_grad_weight_kernel);

}  // namespace kiln::onednn
