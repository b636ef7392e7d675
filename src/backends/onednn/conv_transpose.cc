// ConvTranspose (1 to 3 spatial axes, grouped, strided, dilated, with output_padding,
// output_shape, pads or auto_pad, and bias) on oneDNN's deconvolution primitive. As for Conv, the
// primitive picks its layouts: the constant weight is reordered into its layout once at compile
// time, and blocked activations are reordered on the way in and out of each call.
//
// oneDNN relates the sizes as Y = (X - 1) * stride + extent - pad_begin - pad_end, so the pads it
// is given are ONNX's leading pad and whatever trailing pad makes Y come out; output_padding
// beyond the trailing pad would make that negative, which oneDNN refuses (the reference kernel
// takes the node).
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"
#include "ops/conv_util.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

struct DeconvKernel {
  Prepared<dnnl::deconvolution_forward> deconv;
  Port x, y;  // row-major as stored; the layouts the primitive chose
  dnnl::memory::desc weights_desc, bias_desc;
  dnnl::memory weights;  // prepared
  bool has_bias = false;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> x_bytes, y_bytes;
    const void* src = read_port(ctx, x, ctx.input(0), x_bytes);
    void* dst = write_port(y, ctx.output(0), y_bytes);
    const Arg source{DNNL_ARG_SRC, x.used, src},
        weight{DNNL_ARG_WEIGHTS, weights_desc, weights.get_data_handle()}, target{DNNL_ARG_DST, y.used, dst};
    if (has_bias) {
      execute(ctx, deconv, {source, weight, Arg{DNNL_ARG_BIAS, bias_desc, ctx.input(2).raw_data()}, target});
    } else {
      execute(ctx, deconv, {source, weight, target});
    }
    finish_write(ctx, y, dst, ctx.output(0));
  }
};

// The ONNX weight (C, M/group, k...) as oneDNN's (group, M/group, C/group, k...) (no group axis
// when group is 1), by strides over the bytes as stored.
dnnl::memory::desc weight_desc(const Shape& w, int64_t group, DType dtype) {
  const int64_t in_per_group = w[0] / group, out_per_group = w[1];
  int64_t taps = 1;
  for (int i = 2; i < w.ndim(); ++i) taps *= w[i];
  dnnl::memory::dims dims{out_per_group, in_per_group}, strides{taps, out_per_group * taps};
  int64_t stride = taps;
  for (int i = 2; i < w.ndim(); ++i) {
    stride /= w[i];
    dims.push_back(w[i]);
    strides.push_back(stride);
  }
  if (group > 1) {
    dims.insert(dims.begin(), group);
    strides.insert(strides.begin(), in_per_group * out_per_group * taps);
  }
  return dnnl::memory::desc(dims, *to_dnnl(dtype), strides);
}

ops::KernelFn make_conv_transpose_kernel(const graph::Node& node, const Attrs& attrs) {
  const Tensor* w_constant = constant_input(node, 1);
  if (w_constant == nullptr) return {};  // weights computed at run time: the reference kernel
  const auto& x = input_info(node, 0);
  const auto& y = output_info(node, 0);
  if (y.shape.numel() == 0) return {};
  const Shape& w = w_constant->shape();
  const ops::WindowAttrs window = ops::read_window_attrs(attrs, w);
  const int spatial = x.shape.ndim() - 2;
  dnnl::memory::dims strides, dilations, pad_begin, pad_end;
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t extent = (window.kernel[i] - 1) * window.dilations[i] + 1;
    const int64_t in = x.shape[a + 2], out = y.shape[a + 2];
    const int64_t reach = (in - 1) * window.strides[i] + extent;  // the placements' full extent
    int64_t begin = window.pads[i];
    if (window.auto_pad == ops::AutoPad::kSameUpper || window.auto_pad == ops::AutoPad::kSameLower) {
      // ONNX splits the difference between the full extent (with output_padding) and Y.
      const int64_t output_padding = attrs.has("output_padding") ? attrs.get_ints("output_padding")[i] : 0;
      begin = ops::same_pad_begin(window.auto_pad, reach + output_padding - out);
    } else if (window.auto_pad == ops::AutoPad::kValid) {
      begin = 0;
    }
    const int64_t end = reach - begin - out;
    if (begin < 0 || end < 0) return {};
    strides.push_back(window.strides[i]);
    dilations.push_back(window.dilations[i] - 1);  // oneDNN counts the gaps
    pad_begin.push_back(begin);
    pad_end.push_back(end);
  }

  const auto type = *to_dnnl(x.dtype);
  auto kernel = std::make_shared<DeconvKernel>();
  kernel->has_bias = has_input(node, 2);
  const dnnl::memory::desc w_stored = weight_desc(w, window.group, w_constant->dtype());
  const dnnl::memory::desc x_any(to_dims(x.shape), type, tag::any);
  const dnnl::memory::desc y_any(to_dims(y.shape), type, tag::any);
  const dnnl::memory::desc w_any(w_stored.get_dims(), type, tag::any);
  const auto algorithm = dnnl::algorithm::deconvolution_direct;
  const auto prop = dnnl::prop_kind::forward_inference;
  dnnl::deconvolution_forward::primitive_desc pd;
  if (kernel->has_bias) {
    kernel->bias_desc = plain_desc(input_info(node, 2).shape, input_info(node, 2).dtype);
    pd = dnnl::deconvolution_forward::primitive_desc(cpu_engine(), prop, algorithm, x_any, w_any,
                                                     kernel->bias_desc, y_any, strides, dilations, pad_begin,
                                                     pad_end, base_attr());
  } else {
    pd = dnnl::deconvolution_forward::primitive_desc(cpu_engine(), prop, algorithm, x_any, w_any, y_any,
                                                     strides, dilations, pad_begin, pad_end, base_attr());
  }
  if (is_generic_impl(pd)) return {};
  kernel->deconv = Prepared<dnnl::deconvolution_forward>(pd);
  kernel->x = input_port(plain_desc(x.shape, x.dtype), pd.src_desc());
  kernel->y = output_port(plain_desc(y.shape, y.dtype), pd.dst_desc());
  kernel->weights_desc = pd.weights_desc();
  kernel->weights = prepare_constant(wrap(w_stored, *w_constant), kernel->weights_desc);
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

}  // namespace

KILN_ONEDNN_KERNEL(ConvTranspose, make_conv_transpose_kernel);

}  // namespace kiln::onednn
