// FusedQLinearMatMul (src/ops/fused_qlinear_matmul.cc) on oneDNN's int8 matmul: u8 or s8 rows
// (batched over leading axes) with a per-tensor scale and zero point, an s8 (K, N) weight (zero
// point 0) with per-tensor or per-column scales, reordered once at compile time into the
// primitive's layout, a float bias, the activation as an eltwise post-op, and the output
// requantized (u8 or s8) or left in float32. Scales and zero points are oneDNN 3 run-time
// arguments kept by the kernel (constants of the graph). Operands are row-major.
#include <memory>
#include <vector>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

enum Input { kA, kAScale, kAZero, kB, kBScale, kBZero, kYScale, kYZero, kBias };

std::vector<float> floats_of(const Tensor& t) {
  return t.cast(DType::kFloat32).contiguous().to_vector<float>();
}

// The zero points of a constant input (0 when it is missing); nullopt when not a constant.
std::optional<std::vector<int32_t>> zero_points(const graph::Node& node, int i) {
  if (!has_input(node, i)) return std::vector<int32_t>{0};
  const Tensor* t = constant_input(node, i);
  if (!t) return std::nullopt;
  return t->cast(DType::kInt32).contiguous().to_vector<int32_t>();
}

struct QMatmulKernel {
  Prepared<dnnl::matmul> matmul;
  dnnl::memory::desc a_desc, b_desc, bias_desc, out_desc;
  dnnl::memory weights;
  bool has_bias = false;
  std::vector<float> src_scale, weight_scales, dst_scale;
  int32_t src_zero = 0, dst_zero = 0;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, columns_f32, scalar_s32{{1}, dt::s32, tag::a};

  void operator()(ops::KernelContext& ctx) const {
    std::vector<Arg> args{{DNNL_ARG_SRC, a_desc, ctx.input(kA).raw_data()},
                          {DNNL_ARG_WEIGHTS, b_desc, weights.get_data_handle()},
                          {DNNL_ARG_DST, out_desc, ctx.output(0).raw_data()},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scalar_f32, src_scale.data()},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, columns_f32, weight_scales.data()}};
    if (has_bias) args.push_back({DNNL_ARG_BIAS, bias_desc, ctx.input(kBias).raw_data()});
    if (!dst_scale.empty())
      args.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, scalar_f32, dst_scale.data()});
    if (src_zero != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, scalar_s32, &src_zero});
    if (dst_zero != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, scalar_s32, &dst_zero});
    execute(ctx, matmul, std::span<const Arg>(args));
  }
};

runtime::KernelChoice make_qlinear_matmul_kernel(const runtime::KernelQuery& query) {
  for (const runtime::LayoutPtr& layout : query.input_layouts)
    if (layout != nullptr) return {};
  const graph::Node& node = query.node;
  const Tensor* b = constant_input(node, kB);
  const Tensor* a_scale = constant_input(node, kAScale);
  const Tensor* b_scale = constant_input(node, kBScale);
  if (!b || !a_scale || !b_scale || b->dtype() != DType::kInt8) return {};
  const auto a_zero = zero_points(node, kAZero), b_zero = zero_points(node, kBZero),
             y_zero = zero_points(node, kYZero);
  if (!a_zero || !b_zero || !y_zero) return {};
  for (int32_t z : *b_zero)
    if (z != 0) return {};  // oneDNN's weights have no zero point
  if (has_input(node, kYScale) && !constant_input(node, kYScale)) return {};
  const auto& a = input_info(node, kA);
  const auto& y = output_info(node, 0);
  const int rank = a.shape.ndim();

  auto kernel = std::make_shared<QMatmulKernel>();
  kernel->src_scale = floats_of(*a_scale);
  kernel->weight_scales = floats_of(*b_scale);
  kernel->src_zero = (*a_zero)[0];
  kernel->columns_f32 =
      dnnl::memory::desc({static_cast<int64_t>(kernel->weight_scales.size())}, dt::f32, tag::a);
  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, kernel->weight_scales.size() > 1 ? 1 << (rank - 1) : 0);
  if (kernel->src_zero != 0) attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
  if (has_input(node, kYScale)) {
    kernel->dst_scale = floats_of(*constant_input(node, kYScale));
    kernel->dst_zero = (*y_zero)[0];
    attr.set_scales_mask(DNNL_ARG_DST, 0);
    if (kernel->dst_zero != 0) attr.set_zero_points_mask(DNNL_ARG_DST, 0);
  }
  dnnl::post_ops post;
  append_activation(post, query.attrs);
  attr.set_post_ops(post);

  // B and the bias broadcast over the leading axes of A: dims of one there.
  dnnl::memory::dims b_dims(static_cast<size_t>(rank - 2), 1), bias_dims(static_cast<size_t>(rank - 1), 1);
  b_dims.push_back(b->shape()[0]);
  b_dims.push_back(b->shape()[1]);
  bias_dims.push_back(b->shape()[1]);
  kernel->a_desc = plain_desc(a.shape, a.dtype);
  kernel->out_desc = plain_desc(y.shape, y.dtype);
  kernel->has_bias = has_input(node, kBias);
  const dnnl::memory::desc b_any(b_dims, dt::s8, tag::any);
  dnnl::matmul::primitive_desc pd;
  try {
    if (kernel->has_bias) {
      kernel->bias_desc = plain_desc(Shape(bias_dims), DType::kFloat32);
      pd = dnnl::matmul::primitive_desc(cpu_engine(), kernel->a_desc, b_any, kernel->bias_desc,
                                        kernel->out_desc, attr);
    } else {
      pd = dnnl::matmul::primitive_desc(cpu_engine(), kernel->a_desc, b_any, kernel->out_desc, attr);
    }
  } catch (const dnnl::error&) {
    return {};  // a combination oneDNN has no int8 implementation of
  }
  if (is_generic_impl(pd)) return {};
  double flops = 2.0 * static_cast<double>(b->shape()[0]);
  for (int64_t d : y.shape) flops *= static_cast<double>(d);
  kernel->matmul = Prepared<dnnl::matmul>(pd, flops);
  kernel->b_desc = pd.weights_desc();
  kernel->weights = prepare_constant(wrap(plain_desc(Shape(b_dims), DType::kInt8), *b), kernel->b_desc);
  runtime::KernelChoice choice;
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(FusedQLinearMatMul, make_qlinear_matmul_kernel);

}  // namespace kiln::onednn
