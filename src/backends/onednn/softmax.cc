// Softmax and LogSoftmax along any axis on oneDNN's softmax primitive (accurate: the maximum is
// subtracted first). The tensor is viewed as (outer, axis, inner). oneDNN's fast kernels need
// the axis innermost in memory, so when inner > 1 the input is reordered to (outer, inner, axis)
// order, and the result back, around the primitive; its generic implementation, which would
// take the plain layout, is many times slower than the reference kernel.
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

struct SoftmaxKernel {
  Prepared<dnnl::softmax_forward> softmax;
  dnnl::memory::desc plain;  // (outer, axis, inner) row-major, as the tensors are
  dnnl::memory::desc work;   // what the primitive works on: `plain`, or (outer, inner, axis) order
  std::optional<Reorder> to_work, from_work;  // when transposed

  void operator()(ops::KernelContext& ctx) const {
    if (!to_work) {
      execute(
          ctx, softmax,
          {{DNNL_ARG_SRC, plain, ctx.input(0).raw_data()}, {DNNL_ARG_DST, plain, ctx.output(0).raw_data()}});
      return;
    }
    // One transposed buffer: the primitive may run in place.
    std::shared_ptr<Storage> bytes;
    void* t = temporary_bytes(work.get_size(), bytes);
    reorder(ctx, *to_work, ctx.input(0).raw_data(), t);
    execute(ctx, softmax, {{DNNL_ARG_SRC, work, t}, {DNNL_ARG_DST, work, t}});
    reorder(ctx, *from_work, t, ctx.output(0).raw_data());
  }
};

ops::KernelFn make_softmax(const graph::Node& node, const Attrs& attrs, dnnl::algorithm algorithm) {
  const auto& x = input_info(node, 0);
  if (!is_float(x.dtype) || x.shape.numel() == 0) return {};
  const int axis = normalize_axis(attrs.get_int("axis"), x.shape.ndim(), "attribute 'axis'");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape[i];
  for (int i = axis + 1; i < x.shape.ndim(); ++i) inner *= x.shape[i];
  const int64_t len = x.shape[axis];
  auto kernel = std::make_shared<SoftmaxKernel>();
  const auto type = *to_dnnl(x.dtype);
  kernel->plain = dnnl::memory::desc({outer, len, inner}, type, tag::abc);
  const bool transposed = inner > 1;
  // acb: the axis (dim 1) innermost in memory.
  kernel->work = transposed ? dnnl::memory::desc({outer, len, inner}, type, tag::acb) : kernel->plain;
  const dnnl::softmax_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, algorithm,
                                                 kernel->work, kernel->work, 1, base_attr());
  if (is_generic_impl(pd)) return {};
  kernel->softmax = Prepared<dnnl::softmax_forward>(pd);
  if (transposed) {
    kernel->to_work = make_reorder(kernel->plain, kernel->work);
    kernel->from_work = make_reorder(kernel->work, kernel->plain);
  }
  return [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
}

ops::KernelFn make_softmax_kernel(const graph::Node& node, const Attrs& attrs) {
  return make_softmax(node, attrs, dnnl::algorithm::softmax_accurate);
}

ops::KernelFn make_log_softmax_kernel(const graph::Node& node, const Attrs& attrs) {
  return make_softmax(node, attrs, dnnl::algorithm::softmax_log);
}

}  // namespace

KILN_ONEDNN_KERNEL(Softmax, make_softmax_kernel);
KILN_ONEDNN_KERNEL(LogSoftmax, make_log_softmax_kernel);

}  // namespace kiln::onednn
