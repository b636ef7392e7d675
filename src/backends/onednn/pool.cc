// MaxPool (without the Indices output), AveragePool, GlobalAveragePool and GlobalMaxPool on
// oneDNN's pooling primitive, over 1 to 3 spatial axes (global pooling over any number: the
// spatial axes are one axis to it), and the gradients MaxPoolGrad and AveragePoolGrad on its
// backward primitive.
//
// The window geometry is ONNX's (ops/pool_util.h). oneDNN asks for explicit trailing pads that
// make the output size come out, so ceil_mode is extra trailing padding, and floor rounding
// that drops trailing input elements is negative trailing padding. Padding never contributes a
// value; AveragePool's count_include_pad divides by the whole window, which is ONNX's divisor
// only while no window reaches past the explicit pads, so ceil_mode's extra padding with
// count_include_pad stays with the reference kernel, as do windows whose taps (dilated) all
// miss the input. oneDNN 3.2 pools dilated windows only with its generic implementation, which
// is declined like every generic one (it is many times slower than the reference kernel).
//
// oneDNN's maximum is not NaN-propagating (a NaN tap may be skipped), unlike the reference's.
//
// FusedQLinearAveragePool (int8 chains) pools the 8-bit values as they are stored (the
// channels-last layout of the int8 convolution before it) into the 8-bit output, the
// requantization y = mean(x) * x_scale / y_scale + (y_zero - x_zero * x_scale / y_scale) a linear
// post-op on the float mean; oneDNN then rounds half to even and saturates. The reference rounds
// the same way, but its mean is of dequantized values, so a mean within a float32 rounding error
// of a half may land on the other neighbouring step. oneDNN pads with 8-bit zeros, not with the
// zero point, so count_include_pad with padding and a non-zero x_zero stays with the reference.
#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>

#include "backends/onednn/onednn_common.h"
#include "ops/pool_util.h"

namespace kiln::onednn {
namespace {

using algo = dnnl::algorithm;

struct PoolKernel {
  Prepared<dnnl::pooling_forward> pool;
  dnnl::memory::desc x_desc;
  Port y;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> y_bytes;
    void* dst = write_port(y, ctx.output(0), y_bytes);
    execute(ctx, pool, {{DNNL_ARG_SRC, x_desc, ctx.input(0).raw_data()}, {DNNL_ARG_DST, y.used, dst}});
    finish_write(ctx, y, dst, ctx.output(0));
  }
};

// A dense descriptor of `dims` whose axes are laid out in the order of `like`'s strides.
dnnl::memory::desc same_order_desc(const dnnl::memory::desc& like, const dnnl::memory::dims& dims,
                                   dnnl::memory::data_type type) {
  const dnnl::memory::dims like_strides = like.get_strides();
  std::vector<size_t> order(dims.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return like_strides[a] > like_strides[b]; });
  dnnl::memory::dims strides(dims.size());
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= dims[*it];
  }
  return dnnl::memory::desc(dims, type, strides);
}

// Builds the pooling of `x_dims` into `y_dims` (both N, C, spatial...). The input is read as it
// is stored (row-major, or the layout a previous oneDNN kernel left it in; `x_dims` are then the
// tensor's own); the output takes the layout the primitive picks to go with it.
runtime::KernelChoice make_pool(const runtime::KernelQuery& query, algo algorithm,
                                const dnnl::memory::dims& x_dims, const dnnl::memory::dims& y_dims,
                                const dnnl::memory::dims& kernel_dims, const dnnl::memory::dims& strides,
                                const dnnl::memory::dims& dilations, const dnnl::memory::dims& pad_begin,
                                const dnnl::memory::dims& pad_end,
                                const dnnl::primitive_attr& attr = base_attr()) {
  const DType dtype = input_info(query.node, 0).dtype;
  const DType y_dtype = output_info(query.node, 0).dtype;
  auto kernel = std::make_shared<PoolKernel>();
  const std::optional<dnnl::memory::desc> stored = stored_desc(query, 0);
  if (!stored) return {};
  const bool reshaped = x_dims != stored->get_dims();
  if (reshaped && query.input_layouts[0] != nullptr) return {};
  kernel->x_desc =
      reshaped ? plain_desc(Shape(std::vector<int64_t>(x_dims.begin(), x_dims.end())), dtype) : *stored;
  dnnl::memory::desc y_plain =
      plain_desc(Shape(std::vector<int64_t>(y_dims.begin(), y_dims.end())), output_info(query.node, 0).dtype);
  // Float outputs take the stored input's type (narrower in bf16 plans); 8-bit ones their own.
  const dnnl::memory::data_type y_type =
      is_float(y_dtype) ? kernel->x_desc.get_data_type() : *to_dnnl(y_dtype);
  const dnnl::memory::desc y_any(y_dims, y_type, dnnl::memory::format_tag::any);
  const bool row_major = query.output_row_major[0] || reshaped || query.input_layouts[0] == nullptr;
  // oneDNN's int8 pooling reads and writes one layout: a row-major output of 1x1 planes has the
  // same bytes as the channels-last one, so it is written in the input's order of axes.
  if (row_major && query.input_layouts[0] != nullptr && !is_float(y_dtype) &&
      stored->get_inner_nblks() == 0 &&
      std::all_of(y_dims.begin() + 2, y_dims.end(), [](int64_t d) { return d == 1; }))
    y_plain = same_order_desc(*stored, y_dims, y_type);
  const dnnl::pooling_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, algorithm,
                                                 kernel->x_desc, row_major ? y_plain : y_any, strides,
                                                 kernel_dims, dilations, pad_begin, pad_end, attr);
  if (is_generic_impl(pd)) return {};
  kernel->pool = Prepared<dnnl::pooling_forward>(pd);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  const dnnl::memory::desc y_stored =
      row_major ? pd.dst_desc() : output_store(query, 0, pd.dst_desc(), choice.output_layouts[0]);
  kernel->y = output_port(y_stored, pd.dst_desc());
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

// True when some window's taps all fall into the padding (dilation can step over the input).
bool has_empty_window(const ops::PoolWindow& w, size_t axis) {
  const int64_t in = w.input[axis], k = w.kernel[axis], s = w.strides[axis], d = w.dilations[axis];
  for (int64_t o = 0; o < w.output[axis]; ++o) {
    const int64_t start = o * s - w.pad_begin[axis];
    bool hit = false;
    for (int64_t t = 0; t < k && !hit; ++t) hit = start + t * d >= 0 && start + t * d < in;
    if (!hit) return true;
  }
  return false;
}

// The window of MaxPool / AveragePool (or their gradients) in oneDNN's terms, or nothing for what
// the reference kernel keeps (see the file comment).
struct WindowGeometry {
  algo algorithm;
  dnnl::memory::dims kernel, strides, dilations, pad_begin, pad_end;
};

std::optional<WindowGeometry> window_geometry(const Attrs& attrs, const Shape& x, bool is_max) {
  const ops::PoolWindow w = ops::pool_window(attrs, x, "input 0 (X)");
  const bool include_pad = !is_max && attrs.get_int("count_include_pad") == 1;
  WindowGeometry g;
  g.algorithm = is_max        ? algo::pooling_max
                : include_pad ? algo::pooling_avg_include_padding
                              : algo::pooling_avg_exclude_padding;
  g.kernel.assign(w.kernel.begin(), w.kernel.end());
  for (size_t i = 0; i < w.input.size(); ++i) {
    // The trailing pad that makes the output size come out (see the file comment).
    const int64_t end =
        (w.output[i] - 1) * w.strides[i] + w.extent(static_cast<int>(i)) - w.input[i] - w.pad_begin[i];
    if (has_empty_window(w, i) || (include_pad && end > w.pad_end[i])) return std::nullopt;
    g.strides.push_back(w.strides[i]);
    g.dilations.push_back(w.dilations[i] - 1);  // oneDNN counts the gaps
    g.pad_begin.push_back(w.pad_begin[i]);
    g.pad_end.push_back(end);
  }
  return g;
}

runtime::KernelChoice make_window_pool(const runtime::KernelQuery& query, bool is_max) {
  const graph::Node& node = query.node;
  const auto& x = input_info(node, 0);
  const auto& y = output_info(node, 0);
  // The maximum of 8-bit values is exact: int8 chains (fuse_quantized_ops) pool without dequantizing.
  const bool is_8bit = x.dtype == DType::kInt8 || x.dtype == DType::kUInt8;
  if (node.outputs.size() != 1 || !(is_float(x.dtype) || (is_max && is_8bit)) || y.shape.numel() == 0)
    return {};
  const std::optional<WindowGeometry> g = window_geometry(query.attrs, x.shape, is_max);
  if (!g) return {};
  return make_pool(query, g->algorithm, to_dims(x.shape), to_dims(y.shape), g->kernel, g->strides,
                   g->dilations, g->pad_begin, g->pad_end);
}

runtime::KernelChoice make_max_pool(const runtime::KernelQuery& query) {
  return make_window_pool(query, true);
}

runtime::KernelChoice make_average_pool(const runtime::KernelQuery& query) {
  return make_window_pool(query, false);
}

// One window over all spatial axes. More than three spatial axes are flattened into one (the
// planes are contiguous, so the window covers the same elements).
runtime::KernelChoice make_global_pool(const runtime::KernelQuery& query, algo algorithm) {
  const auto& x = input_info(query.node, 0);
  if (!is_float(x.dtype) || x.shape.numel() == 0) return {};
  dnnl::memory::dims x_dims = to_dims(x.shape);
  if (x_dims.size() > 5) {
    int64_t plane = 1;
    for (size_t i = 2; i < x_dims.size(); ++i) plane *= x_dims[i];
    x_dims = {x_dims[0], x_dims[1], plane};
  }
  const size_t spatial = x_dims.size() - 2;
  dnnl::memory::dims y_dims(x_dims.begin(), x_dims.begin() + 2);
  y_dims.resize(x_dims.size(), 1);
  const dnnl::memory::dims kernel_dims(x_dims.begin() + 2, x_dims.end());
  const dnnl::memory::dims ones(spatial, 1), zeros(spatial, 0);
  return make_pool(query, algorithm, x_dims, y_dims, kernel_dims, ones, zeros, zeros, zeros);
}

runtime::KernelChoice make_global_average_pool(const runtime::KernelQuery& query) {
  return make_global_pool(query, algo::pooling_avg_exclude_padding);
}

runtime::KernelChoice make_global_max_pool(const runtime::KernelQuery& query) {
  return make_global_pool(query, algo::pooling_max);
}

// The one value of a per-tensor constant input as a double (0 for a missing zero point), or
// nothing when it is not a constant of one element.
std::optional<double> per_tensor_value(const graph::Node& node, int i, double missing) {
  if (!has_input(node, i)) return missing;
  const Tensor* t = constant_input(node, i);
  if (t == nullptr || t->numel() != 1) return std::nullopt;
  return t->cast(DType::kFloat64).to_vector<double>()[0];
}

runtime::KernelChoice make_qlinear_average_pool(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& x = input_info(node, 0);
  if (node.outputs.size() != 1 || output_info(node, 0).shape.numel() == 0) return {};
  const std::optional<double> x_scale = per_tensor_value(node, 1, 1), x_zero = per_tensor_value(node, 2, 0),
                              y_scale = per_tensor_value(node, 3, 1), y_zero = per_tensor_value(node, 4, 0);
  if (!x_scale || !x_zero || !y_scale || !y_zero || *y_scale == 0) return {};
  const std::optional<WindowGeometry> g = window_geometry(query.attrs, x.shape, false);
  if (!g) return {};
  const auto padded = [](const dnnl::memory::dims& pads) {
    return std::any_of(pads.begin(), pads.end(), [](int64_t p) { return p > 0; });
  };
  if (g->algorithm == algo::pooling_avg_include_padding && *x_zero != 0 &&
      (padded(g->pad_begin) || padded(g->pad_end)))
    return {};
  const double ratio = *x_scale / *y_scale;
  const double shift = *y_zero - *x_zero * ratio;
  dnnl::primitive_attr attr = base_attr();
  if (ratio != 1 || shift != 0) {
    dnnl::post_ops ops;
    ops.append_eltwise(algo::eltwise_linear, static_cast<float>(ratio), static_cast<float>(shift));
    attr.set_post_ops(ops);
  }
  return make_pool(query, g->algorithm, to_dims(x.shape), to_dims(output_info(node, 0).shape), g->kernel,
                   g->strides, g->dilations, g->pad_begin, g->pad_end, attr);
}

// ---- MaxPoolGrad and AveragePoolGrad (dY, X) -> dX, row-major, on the backward primitive ----
// Max pooling's backward reads the forward's workspace (where each maximum was), so the kernel
// runs the forward in training mode first, into scratch bytes, from X.

struct PoolGradKernel {
  std::optional<Prepared<dnnl::pooling_forward>> forward;  // max pooling only
  Prepared<dnnl::pooling_backward> backward;
  dnnl::memory::desc x, y;  // row-major: X and dX, Y and dY

  void operator()(ops::KernelContext& ctx) const {
    if (!forward) {
      execute(ctx, backward,
              {{DNNL_ARG_DIFF_DST, y, ctx.input(0).raw_data()},
               {DNNL_ARG_DIFF_SRC, x, ctx.output(0).raw_data()}});
      return;
    }
    const dnnl::memory::desc workspace = forward->pd.workspace_desc();
    std::shared_ptr<Storage> y_bytes, ws_bytes;
    void* pooled = temporary_bytes(y.get_size(), y_bytes);
    void* ws = temporary_bytes(workspace.get_size(), ws_bytes);
    execute(ctx, *forward,
            {{DNNL_ARG_SRC, x, ctx.input(1).raw_data()},
             {DNNL_ARG_DST, y, pooled},
             {DNNL_ARG_WORKSPACE, workspace, ws}});
    execute(ctx, backward,
            {{DNNL_ARG_DIFF_DST, y, ctx.input(0).raw_data()},
             {DNNL_ARG_WORKSPACE, workspace, ws},
             {DNNL_ARG_DIFF_SRC, x, ctx.output(0).raw_data()}});
  }
};

ops::KernelFn make_pool_grad(const graph::Node& node, const Attrs& attrs, bool is_max) {
  const auto& dy = input_info(node, 0);
  const auto& x = input_info(node, 1);
  if (!is_float(x.dtype) || dy.dtype != x.dtype || x.shape.numel() == 0 || dy.shape.numel() == 0) return {};
  const std::optional<WindowGeometry> g = window_geometry(attrs, x.shape, is_max);
  if (!g) return {};
  auto kernel = std::make_shared<PoolGradKernel>();
  kernel->x = plain_desc(x.shape, x.dtype);
  kernel->y = plain_desc(dy.shape, dy.dtype);
  const dnnl::pooling_forward::primitive_desc hint(cpu_engine(), dnnl::prop_kind::forward_training,
                                                   g->algorithm, kernel->x, kernel->y, g->strides, g->kernel,
                                                   g->dilations, g->pad_begin, g->pad_end, base_attr());
  const dnnl::pooling_backward::primitive_desc pd(cpu_engine(), g->algorithm, kernel->x, kernel->y,
                                                  g->strides, g->kernel, g->dilations, g->pad_begin,
                                                  g->pad_end, hint, base_attr());
  if (is_generic_impl(hint) || is_generic_impl(pd)) return {};
  if (is_max) kernel->forward = Prepared<dnnl::pooling_forward>(hint, streamed_flops(kernel->x));
  kernel->backward = Prepared<dnnl::pooling_backward>(pd, streamed_flops(kernel->x));
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

ops::KernelFn make_max_pool_grad(const graph::Node& node, const Attrs& attrs) {
  return make_pool_grad(node, attrs, true);
}

ops::KernelFn make_average_pool_grad(const graph::Node& node, const Attrs& attrs) {
  return make_pool_grad(node, attrs, false);
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(MaxPool, make_max_pool);
KILN_ONEDNN_LAYOUT_KERNEL(AveragePool, make_average_pool);
KILN_ONEDNN_LAYOUT_KERNEL(GlobalAveragePool, make_global_average_pool);
KILN_ONEDNN_KERNEL(MaxPoolGrad, make_max_pool_grad);
KILN_ONEDNN_KERNEL(AveragePoolGrad, make_average_pool_grad);
KILN_ONEDNN_LAYOUT_KERNEL(GlobalMaxPool, make_global_max_pool);
KILN_ONEDNN_LAYOUT_KERNEL(FusedQLinearAveragePool, make_qlinear_average_pool);

}  // namespace kiln::onednn
