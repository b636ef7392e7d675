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

#include "backends/onednn/int8_matmul.h"
#include "backends/onednn/onednn_common.h"
#include "core/thread_pool.h"
#include "ops/fused_quantized_inputs.h"
#include "ops/quantize_util.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

using namespace ops::dynamic_qlinear_matmul_input;

struct DynamicMatmulKernel {
  Int8Matmul int8;
  dnnl::memory::desc scalar_f32{{1}, dt::f32, tag::a}, scalar_s32{{1}, dt::s32, tag::a};

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
    std::vector<Arg> args =
        int8.arguments(q, ctx.output(0).raw_data(), int8.has_bias ? ctx.input(kBias).raw_data() : nullptr);
    args.push_back({DNNL_ARG_ATTR_SCALES | DNNL_ARG_SRC, scalar_f32, &scale});
    args.push_back({DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, scalar_s32, &zero});
    execute(ctx, int8.matmul, std::span<const Arg>(args));
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

  dnnl::primitive_attr attr = base_attr();
  attr.set_scales_mask(DNNL_ARG_SRC, 0);
  attr.set_zero_points_mask(DNNL_ARG_SRC, 0);
  dnnl::post_ops post;
  append_activation(post, query.attrs);
  attr.set_post_ops(post);
  std::optional<Int8Matmul> int8 =
      make_int8_matmul(a, DType::kUInt8, *b, b_scale->cast(DType::kFloat32).contiguous().to_vector<float>(),
                       y, has_input(node, kBias), attr);
  if (!int8) return {};
  auto kernel = std::make_shared<DynamicMatmulKernel>();
  kernel->int8 = std::move(*int8);
  runtime::KernelChoice choice;
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(FusedDynamicQLinearMatMul, make_dynamic_qlinear_matmul_kernel);

}  // namespace kiln::onednn
