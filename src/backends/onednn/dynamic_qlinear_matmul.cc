// FusedDynamicQLinearMatMul (src/ops/fused_dynamic_qlinear_matmul.cc) on oneDNN's int8 matmul.
// Each call finds the activation's range, quantizes it to uint8 exactly as DynamicQuantizeLinear
// does (same formulas, same rounding), and runs the u8 x s8 product with that scale and zero
// point passed as run-time arguments (oneDNN 3's DNNL_ARG_ATTR_SCALES / ZERO_POINTS), the weight's
// per-column scales, a float bias and the activation as a post-op, writing float32. The weight is
// reordered once at compile time into the primitive's layout. Operands are row-major.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backends/onednn/onednn_common.h"
#include "core/thread_pool.h"
#include "ops/quantize_util.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

enum Input { kA, kB, kBScale, kBZero, kBias };

struct DynamicMatmulKernel {
  Prepared<dnnl::matmul> matmul;
  dnnl::memory::desc a_desc, b_desc, bias_desc, out_desc;
  dnnl::memory weights;
  bool has_bias = false;
  std::vector<float> weight_scales;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, columns_f32, scalar_s32{{1}, dt::s32, tag::a};

  void operator()(ops::KernelContext& ctx) const {
    const Tensor& a = ctx.input(kA);
    const float* x = a.data<float>();
    const int64_t n = a.numel();
    // DynamicQuantizeLinear's parameters: the range widened to include 0, in float.
    float lo = 0.0f, hi = 0.0f;
    for (int64_t i = 0; i < n; ++i) {
      lo = std::min(lo, x[i]);
      hi = std::max(hi, x[i]);
    }
    const float scale = lo == hi ? 1.0f : (hi - lo) / 255.0f;
    const int32_t zero = static_cast<int32_t>(std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f)));
    std::shared_ptr<Storage> owner;
    auto* q = static_cast<uint8_t*>(temporary_bytes(static_cast<size_t>(n), owner));
    parallel_for(0, n, ops::kQuantizeGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) q[i] = ops::saturate_round<uint8_t>(x[i] / scale, zero);
    });
    std::vector<Arg> args{{DNNL_ARG_SRC, a_desc, q},
                          {DNNL_ARG_WEIGHTS, b_desc, weights.get_data_handle()},
                          {DNNL_ARG_DST, out_desc, ctx.output(0).raw_data()},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scalar_f32, &scale},
                          {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, scalar_s32, &zero},
                          {DNNL_ARG_ATTR_SCALES | DNNL_ARG_WEIGHTS, columns_f32, weight_scales.data()}};
    if (has_bias) args.push_back({DNNL_ARG_BIAS, bias_desc, ctx.input(kBias).raw_data()});
    execute(ctx, matmul, std::span<const Arg>(args));
  }
};

runtime::KernelChoice make_dynamic_qlinear_matmul_kernel(const runtime::KernelQuery& query) {
  for (const runtime::LayoutPtr& layout : query.input_layouts)
    if (layout != nullptr) return {};
  const graph::Node& node = query.node;
  const Tensor* b = constant_input(node, kB);
  const Tensor* b_scale = constant_input(node, kBScale);
  if (!b || !b_scale || b->dtype() != DType::kInt8) return {};
  if (has_input(node, kBZero)) {  // oneDNN's weights have no zero point
    const Tensor* zero = constant_input(node, kBZero);
    if (!zero) return {};
    for (int32_t v : zero->cast(DType::kInt32).contiguous().to_vector<int32_t>())
      if (v != 0) return {};
  }
  const auto& a = input_info(node, kA);
  const auto& y = output_info(node, 0);
  const int rank = a.shape.ndim();

  auto kernel = std::make_shared<DynamicMatmulKernel>();
  kernel->weight_scales = b_scale->cast(DType::kFloat32).contiguous().to_vector<float>();
  kernel->columns_f32 =
      dnnl::memory::desc({static_cast<int64_t>(kernel->weight_scales.size())}, dt::f32, tag::a);
  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
  attr.set_scales_mask(DNNL_ARG_WEIGHTS, kernel->weight_scales.size() > 1 ? 1 << (rank - 1) : 0);
  dnnl::post_ops post;
  append_activation(post, query.attrs);
  attr.set_post_ops(post);

  // B and the bias broadcast over the leading axes of A: dims of one there.
  dnnl::memory::dims b_dims(static_cast<size_t>(rank - 2), 1), bias_dims(static_cast<size_t>(rank - 1), 1);
  b_dims.push_back(b->shape()[0]);
  b_dims.push_back(b->shape()[1]);
  bias_dims.push_back(b->shape()[1]);
  kernel->a_desc = plain_desc(a.shape, DType::kUInt8);
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

KILN_ONEDNN_LAYOUT_KERNEL(FusedDynamicQLinearMatMul, make_dynamic_qlinear_matmul_kernel);

}  // namespace kiln::onednn
