// FusedQLinearMatMul (src/ops/fused_qlinear_matmul.cc) on oneDNN's int8 matmul: u8 or s8 rows
// (batched over leading axes) with a per-tensor scale and zero point, an s8 (K, N) weight (zero
// point 0) with per-tensor or per-column scales, reordered once at compile time into the
// primitive's layout, a float bias, the activation as an eltwise post-op, and the output
// requantized (u8 or s8) or left in float32. Scales and zero points are oneDNN 3 run-time
// arguments kept by the kernel (constants of the graph). Operands are row-major.
#include <memory>
#include <vector>

#include "backends/onednn/int8_matmul.h"
#include "backends/onednn/onednn_common.h"
#include "ops/fused_quantized_inputs.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

using namespace ops::qlinear_matmul_input;

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
  Int8Matmul int8;
  std::vector<float> src_scale, dst_scale;
  int32_t src_zero = 0, dst_zero = 0;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, scalar_s32{{1}, dt::s32, tag::a};

  void operator()(ops::KernelContext& ctx) const {
    std::vector<Arg> args = int8.arguments(ctx.input(kA).raw_data(), ctx.output(0).raw_data(),
                                           int8.has_bias ? ctx.input(kBias).raw_data() : nullptr);
    args.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scalar_f32, src_scale.data()});
    if (!dst_scale.empty())
      args.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_DST, scalar_f32, dst_scale.data()});
    if (src_zero != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, scalar_s32, &src_zero});
    if (dst_zero != 0) args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_DST, scalar_s32, &dst_zero});
    execute(ctx, int8.matmul, std::span<const Arg>(args));
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

  auto kernel = std::make_shared<QMatmulKernel>();
  kernel->src_scale = floats_of(*a_scale);
  kernel->src_zero = (*a_zero)[0];
  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
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
  std::optional<Int8Matmul> int8 =
      make_int8_matmul(a, a.dtype, *b, floats_of(*b_scale), y, has_input(node, kBias), attr);
  if (!int8) return {};
  kernel->int8 = std::move(*int8);
  runtime::KernelChoice choice;
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(FusedQLinearMatMul, make_qlinear_matmul_kernel);

}  // namespace kiln::onednn
