// Activations and unary math on oneDNN's eltwise primitive: Relu, LeakyRelu, Elu, Selu, Sigmoid,
// Tanh, Clip (constant bounds), Gelu (erf and tanh forms), HardSigmoid, HardSwish, Mish, Exp, Log,
// Sqrt and Abs. Only algorithms whose formula is the ONNX one are mapped (Selu is Elu followed by a
// linear scaling). Softplus is not: oneDNN's soft_relu loses about 1% of log(1 + e^x) for x below
// -8, where the result is tiny, and the reference kernel's log1p keeps it exact. The primitive reads element
// i before writing it, so the executor may run these ops in place (output buffer == input buffer). Small
// tensors (see kMinElements) and integers (which oneDNN would compute in float) stay with the reference
// kernel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using algo = dnnl::algorithm;

// One eltwise algorithm with its parameters, and an optional scale applied afterwards.
struct EltwiseSpec {
  algo algorithm;
  float alpha = 0.f, beta = 0.f;
  std::optional<float> scale_after;
};

using EltwisePrimitive = Prepared<dnnl::eltwise_forward>;

struct EltwiseKernel {
  EltwisePrimitive first;
  // The scale, as a second pass over the output: oneDNN's fast eltwise kernels take no post-ops.
  std::optional<EltwisePrimitive> scale;
  dnnl::memory::desc desc;  // input and output alike

  void operator()(ops::KernelContext& ctx) const {
    void* y = ctx.output(0).raw_data();
    execute(ctx, first, {{DNNL_ARG_SRC, desc, ctx.input(0).raw_data()}, {DNNL_ARG_DST, desc, y}});
    if (scale) execute(ctx, *scale, {{DNNL_ARG_SRC, desc, y}, {DNNL_ARG_DST, desc, y}});
  }
};

// Below this many elements a oneDNN call (1 to 3 us of wrapping, dispatch and synchronization)
// costs more than the whole reference kernel of the cheap ops (Relu, Clip, Abs).
constexpr int64_t kMinElements = 4096;

std::optional<EltwisePrimitive> make_primitive(const dnnl::memory::desc& desc, algo algorithm, float alpha,
                                               float beta) {
  const dnnl::eltwise_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, algorithm,
                                                 desc, desc, alpha, beta, base_attr());
  if (is_generic_impl(pd)) return std::nullopt;
  return EltwisePrimitive(pd, streamed_flops(desc));
}

// Input and output share one descriptor: the input's as stored (a oneDNN layout passes through).
runtime::KernelChoice make_eltwise(const runtime::KernelQuery& query, const EltwiseSpec& spec) {
  const auto& x = input_info(query.node, 0);
  const auto& y = output_info(query.node, 0);
  const runtime::LayoutPtr& layout = query.input_layouts[0];
  // Integer inputs would be computed in float (and saturate) by oneDNN. A small row-major
  // tensor is faster with the reference kernel; one in a oneDNN layout would need a reorder.
  if (!is_float(x.dtype) || x.dtype != y.dtype || x.shape != y.shape) return {};
  if (layout == nullptr && x.shape.numel() < kMinElements) return {};
  if (layout != nullptr && query.output_row_major[0]) return {};
  const std::optional<dnnl::memory::desc> stored = stored_desc(query, 0);
  if (!stored) return {};
  auto kernel = std::make_shared<EltwiseKernel>();
  kernel->desc = *stored;
  auto first = make_primitive(kernel->desc, spec.algorithm, spec.alpha, spec.beta);
  if (!first) return {};
  kernel->first = *first;
  if (spec.scale_after) {
    kernel->scale = make_primitive(kernel->desc, algo::eltwise_linear, *spec.scale_after, 0.f);
    if (!kernel->scale) return {};
  }
  return {[kernel](ops::KernelContext& ctx) { (*kernel)(ctx); }, {layout}};
}

float attr_float(const Attrs& attrs, const char* name) {
  return static_cast<float>(attrs.get_float(name));
}

// A maker for an op that is one fixed algorithm.
template <algo kAlgorithm>
runtime::KernelChoice make_fixed(const runtime::KernelQuery& query) {
  return make_eltwise(query, {kAlgorithm});
}

runtime::KernelChoice make_leaky_relu(const runtime::KernelQuery& query) {
  const Attrs& attrs = query.attrs;
  return make_eltwise(query, {algo::eltwise_relu, attr_float(attrs, "alpha")});
}

runtime::KernelChoice make_elu(const runtime::KernelQuery& query) {
  const Attrs& attrs = query.attrs;
  return make_eltwise(query, {algo::eltwise_elu, attr_float(attrs, "alpha")});
}

// gamma * (x > 0 ? x : alpha * (e^x - 1)): Elu, then a linear scaling.
runtime::KernelChoice make_selu(const runtime::KernelQuery& query) {
  const Attrs& attrs = query.attrs;
  return make_eltwise(query,
                      {algo::eltwise_elu, attr_float(attrs, "alpha"), 0.f, attr_float(attrs, "gamma")});
}

runtime::KernelChoice make_gelu(const runtime::KernelQuery& query) {
  const Attrs& attrs = query.attrs;
  const bool tanh_form = attrs.get_string("approximate") == "tanh";
  return make_eltwise(query, {tanh_form ? algo::eltwise_gelu_tanh : algo::eltwise_gelu_erf});
}

// max(0, min(1, alpha * x + beta)).
runtime::KernelChoice make_hard_sigmoid(const runtime::KernelQuery& query) {
  const Attrs& attrs = query.attrs;
  return make_eltwise(query,
                      {algo::eltwise_hardsigmoid, attr_float(attrs, "alpha"), attr_float(attrs, "beta")});
}

// x * max(0, min(1, x / 6 + 1/2)): oneDNN's hardswish with alpha = 1/6, beta = 1/2.
runtime::KernelChoice make_hard_swish(const runtime::KernelQuery& query) {
  return make_eltwise(query, {algo::eltwise_hardswish, 1.f / 6.f, 0.5f});
}

// The value of a constant scalar bound, or `otherwise` when the input is absent; nullopt when the
// bound is computed at run time (the kernel would have to read it per call).
std::optional<float> clip_bound(const graph::Node& node, int i, float otherwise) {
  if (!has_input(node, i)) return otherwise;
  const Tensor* bound = constant_input(node, i);
  if (bound == nullptr || bound->numel() != 1) return std::nullopt;
  return bound->cast(DType::kFloat32).to_vector<float>()[0];
}

// min(max(x, lo), hi). ONNX makes every element hi when lo > hi; oneDNN refuses lo > hi, and
// clipping to [hi, hi] gives the same.
runtime::KernelChoice make_clip(const runtime::KernelQuery& query) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const std::optional<float> lo = clip_bound(query.node, 1, -kInf), hi = clip_bound(query.node, 2, kInf);
  if (!lo || !hi || std::isnan(*lo) || std::isnan(*hi)) return {};
  return make_eltwise(query, {algo::eltwise_clip, std::min(*lo, *hi), *hi});
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Relu, make_fixed<algo::eltwise_relu>);
KILN_ONEDNN_LAYOUT_KERNEL(LeakyRelu, make_leaky_relu);
KILN_ONEDNN_LAYOUT_KERNEL(Elu, make_elu);
KILN_ONEDNN_LAYOUT_KERNEL(Selu, make_selu);
KILN_ONEDNN_LAYOUT_KERNEL(Sigmoid, make_fixed<algo::eltwise_logistic>);
KILN_ONEDNN_LAYOUT_KERNEL(Tanh, make_fixed<algo::eltwise_tanh>);
KILN_ONEDNN_LAYOUT_KERNEL(Clip, make_clip);
KILN_ONEDNN_LAYOUT_KERNEL(Gelu, make_gelu);
KILN_ONEDNN_LAYOUT_KERNEL(HardSigmoid, make_hard_sigmoid);
KILN_ONEDNN_LAYOUT_KERNEL(HardSwish, make_hard_swish);
KILN_ONEDNN_LAYOUT_KERNEL(Mish, make_fixed<algo::eltwise_mish>);
KILN_ONEDNN_LAYOUT_KERNEL(Exp, make_fixed<algo::eltwise_exp>);
KILN_ONEDNN_LAYOUT_KERNEL(Log, make_fixed<algo::eltwise_log>);
KILN_ONEDNN_LAYOUT_KERNEL(Sqrt, make_fixed<algo::eltwise_sqrt>);
KILN_ONEDNN_LAYOUT_KERNEL(Abs, make_fixed<algo::eltwise_abs>);

}  // namespace kiln::onednn
