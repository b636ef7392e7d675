// QuantizeLinear (src/ops/quantize.cc) of float32 to uint8 or int8 per tensor on oneDNN's reorder,
// y = saturate(round(x / y_scale) + y_zero_point) with the scale and zero point as the reorder's
// destination scale and zero point. The reorder also changes the layout: a 4-D input is written
// channels last when the output may stay in a oneDNN layout, the layout the int8 convolutions
// read (fuse_quantized_ops leaves a QuantizeLinear at the float borders of an int8 chain, such as
// a model's input), so the quantization is the only pass over the tensor.
//
// Where the result can differ from the reference's, by one step: oneDNN multiplies by the
// reciprocal of the scale where the reference divides (a quotient within a rounding error of a
// half may round the other way), and adds the zero point before rounding, so an exact half goes
// to the other neighbour when the zero point is odd.
#include <memory>
#include <optional>
#include <vector>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

enum Input { kX, kScale, kZero };

struct QuantizeKernel {
  Prepared<dnnl::reorder> reorder;
  dnnl::memory::desc x_desc, y_desc;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, scalar_s32{{1}, dt::s32, tag::a};
  float scale = 1.f;
  int32_t zero_point = 0;

  void operator()(ops::KernelContext& ctx) const {
    std::vector<Arg> args{{DNNL_ARG_FROM, x_desc, ctx.input(kX).raw_data()},
                          {DNNL_ARG_TO, y_desc, ctx.output(0).raw_data()},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, scalar_f32, &scale}};
    if (zero_point != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, scalar_s32, &zero_point});
    execute(ctx, reorder, std::span<const Arg>(args));
  }
};

// The one value of a per-tensor parameter, or nothing when it is not a constant of one element.
const Tensor* per_tensor_constant(const graph::Node& node, int i) {
  const Tensor* t = constant_input(node, i);
  return t != nullptr && t->numel() == 1 ? t : nullptr;
}

runtime::KernelChoice make_quantize_kernel(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& x = input_info(node, kX);
  const auto& y = output_info(node, 0);
  // Per-tensor float32 quantization, divided in float32 (the default precision) like the reference.
  if (x.dtype != DType::kFloat32 || query.attrs.get_int("precision") != 0) return {};
  const Tensor* scale = per_tensor_constant(node, kScale);
  if (scale == nullptr || scale->dtype() != DType::kFloat32) return {};
  const Tensor* zero = has_input(node, kZero) ? per_tensor_constant(node, kZero) : nullptr;
  if (has_input(node, kZero) && zero == nullptr) return {};
  const std::optional<dnnl::memory::desc> x_stored = stored_desc(query, kX);
  // A blocked layout has no 8-bit twin of the same strides; the runtime reorders it to row-major.
  if (!x_stored || x_stored->get_inner_nblks() != 0) return {};

  auto kernel = std::make_shared<QuantizeKernel>();
  kernel->scale = scale->contiguous().to_vector<float>()[0];
  kernel->zero_point = zero ? zero->cast(DType::kInt32).to_vector<int32_t>()[0] : 0;
  kernel->x_desc = *x_stored;
  const dt y_type = *to_dnnl(y.dtype);
  const dnnl::memory::dims dims = to_dims(x.shape);
  dnnl::memory::desc written = plain_desc(y.shape, y.dtype);
  if (!query.output_row_major[0] && query.input_layouts[kX] != nullptr)
    written = dnnl::memory::desc(dims, y_type, x_stored->get_strides());
  else if (!query.output_row_major[0] && x.shape.ndim() == 4)
    written = dnnl::memory::desc(dims, y_type, tag::acdb);

  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_DST, 0);
  if (kernel->zero_point != 0) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
  const double flops = streamed_flops(kernel->x_desc);
  create_for(flops);
  const dnnl::reorder::primitive_desc pd(cpu_engine(), kernel->x_desc, cpu_engine(), written, attr);
  if (is_generic_impl(pd)) return {};
  kernel->reorder = Prepared<dnnl::reorder>(pd, flops);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->y_desc = output_store(query, 0, written, choice.output_layouts[0]);
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(QuantizeLinear, make_quantize_kernel);

}  // namespace kiln::onednn
