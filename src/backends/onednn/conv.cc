// Conv (1 to 3 spatial axes, grouped and depthwise, with bias) and FusedConv (plus a residual
// and an activation, as post-ops) on oneDNN's convolution primitive. The primitive picks its
// layouts (format `any`) and, under a bf16 or fp16 plan, computes in that type: the weight is
// reordered into its layout once at compile time, and the output is left in the primitive's
// layout for the next kernel (runtime::ValueLayout) unless it is a graph output. An input stored
// in another layout than the primitive reads is reordered on each call.
#include <cstring>
#include <memory>

#include "backends/onednn/onednn_common.h"
#include "ops/conv_util.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

struct ConvKernel {
  Prepared<dnnl::convolution_forward> conv;
  Port x, y;  // activations: as stored, and as the primitive reads and writes them
  dnnl::memory::desc weights_desc, bias_desc;
  dnnl::memory weights;  // prepared
  bool has_bias = false;
  // FusedConv's Z (the output's shape): placed in the output before the call, which a sum
  // post-op then accumulates into; every fast convolution implements that one. Copied when it
  // is stored as the primitive writes, else reordered.
  std::optional<dnnl::memory::desc> residual;
  std::optional<Reorder> residual_reorder;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> x_bytes, y_bytes;
    const void* src = read_port(ctx, x, ctx.input(0), x_bytes);
    void* dst = write_port(y, ctx.output(0), y_bytes);
    if (residual_reorder) {
      reorder(ctx, *residual_reorder, ctx.input(3).raw_data(), dst);
    } else if (residual) {
      std::memcpy(dst, ctx.input(3).raw_data(), y.used.get_size());
    }
    const void* bias = has_bias ? ctx.input(2).raw_data() : nullptr;
    if (has_bias) {
      execute(ctx, conv,
              {{DNNL_ARG_SRC, x.used, src},
               {DNNL_ARG_WEIGHTS, weights_desc, weights.get_data_handle()},
               {DNNL_ARG_BIAS, bias_desc, bias},
               {DNNL_ARG_DST, y.used, dst}});
    } else {
      execute(ctx, conv,
              {{DNNL_ARG_SRC, x.used, src},
               {DNNL_ARG_WEIGHTS, weights_desc, weights.get_data_handle()},
               {DNNL_ARG_DST, y.used, dst}});
    }
    finish_write(ctx, y, dst, ctx.output(0));
  }
};

runtime::KernelChoice make_conv_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const Attrs& attrs = query.attrs;
  const Tensor* w_constant = constant_input(node, 1);
  if (w_constant == nullptr) return {};  // weights computed at run time: the reference kernel
  const auto& x = input_info(node, 0);
  const auto& y = output_info(node, 0);
  const Shape& w = w_constant->shape();
  const ops::WindowAttrs window = ops::read_window_attrs(attrs, w);
  const int spatial = x.shape.ndim() - 2;
  dnnl::memory::dims strides, dilations, pad_begin, pad_end;
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    // Leading pads as given, or as SAME_* puts them; the trailing pad is whatever makes the
    // output size come out (so VALID and SAME need no special case).
    const int64_t total = (y.shape[a + 2] - 1) * window.strides[i] + extent - x.shape[a + 2];
    int64_t begin = window.pads[i];
    if (window.auto_pad == ops::AutoPad::kSameUpper || window.auto_pad == ops::AutoPad::kSameLower) {
      begin = ops::same_pad_begin(window.auto_pad, total);
    } else if (window.auto_pad == ops::AutoPad::kValid) {
      begin = 0;
    }
    // A negative trailing pad (a window that does not fit at the end is dropped, as VALID and
    // floor rounding do) is oneDNN's to accept or refuse.
    const int64_t end = total - begin;
    if (begin < 0) return {};
    strides.push_back(window.strides[i]);
    dilations.push_back(window.dilations[i] - 1);  // oneDNN counts the gaps
    pad_begin.push_back(begin);
    pad_end.push_back(end);
  }

  const std::optional<dnnl::memory::desc> x_stored = stored_desc(query, 0);
  if (!x_stored) return {};
  const auto type = compute_type(query, x.dtype);
  dnnl::memory::dims w_dims = to_dims(w);
  const int64_t groups = window.group;
  if (groups > 1) {  // (G, OC/G, IC/G, k...)
    w_dims[0] /= groups;
    w_dims.insert(w_dims.begin(), groups);
  }
  auto kernel = std::make_shared<ConvKernel>();
  kernel->has_bias = has_input(node, 2);
  // FusedConv: the residual, then the activation, as post-ops on the output.
  dnnl::primitive_attr attr = base_attr();
  dnnl::post_ops post;
  if (has_input(node, 3)) {
    if (input_info(node, 3).dtype != y.dtype || input_info(node, 3).shape != y.shape) return {};
    kernel->residual = stored_desc(query, 3);
    if (!kernel->residual) return {};
    post.append_sum(1.f);
  }
  append_activation(post, attrs);
  attr.set_post_ops(post);
  const dnnl::memory::desc x_any(to_dims(x.shape), type, tag::any);
  const dnnl::memory::desc y_any(to_dims(y.shape), type, tag::any);
  const dnnl::memory::desc w_any(w_dims, type, tag::any);
  dnnl::convolution_forward::primitive_desc pd;
  if (kernel->has_bias) {
    kernel->bias_desc = plain_desc(input_info(node, 2).shape, input_info(node, 2).dtype);
    pd = dnnl::convolution_forward::primitive_desc(
        cpu_engine(), dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, x_any, w_any,
        kernel->bias_desc, y_any, strides, dilations, pad_begin, pad_end, attr);
  } else {
    pd = dnnl::convolution_forward::primitive_desc(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                   dnnl::algorithm::convolution_direct, x_any, w_any, y_any,
                                                   strides, dilations, pad_begin, pad_end, attr);
  }
  if (is_generic_impl(pd)) return {};
  // 2 multiply-adds' worth per output element and weight tap of its group.
  const double flops = 2.0 * static_cast<double>(y.shape.numel()) * static_cast<double>(w.numel() / w[0]);
  kernel->conv = Prepared<dnnl::convolution_forward>(pd, flops);
  const dnnl::memory::desc w_plain = plain_desc(w, w_constant->dtype()).reshape(w_dims);
  kernel->weights_desc = pd.weights_desc();
  kernel->weights = prepare_constant(wrap(w_plain, *w_constant), kernel->weights_desc);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->x = input_port(*x_stored, pd.src_desc());
  kernel->y = output_port(output_store(query, 0, pd.dst_desc(), choice.output_layouts[0]), pd.dst_desc());
  if (kernel->residual && *kernel->residual != pd.dst_desc())
    kernel->residual_reorder = make_reorder(*kernel->residual, pd.dst_desc());
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Conv, make_conv_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(FusedConv, make_conv_kernel);

}  // namespace kiln::onednn
