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
  dnnl::softmax_forward::primitive_desc pd;
  dnnl::softmax_forward primitive;
  dnnl::memory::desc plain;  // (outer, axis, inner) row-major, as the tensors are
  dnnl::memory::desc work;   // what the primitive works on: `plain`, or (outer, inner, axis) order
  bool transposed = false;

  void operator()(ops::KernelContext& ctx) const {
    dnnl::memory x = wrap(plain, ctx.input(0));
    dnnl::memory y = wrap(plain, ctx.output(0));
    if (!transposed) {
      std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}};
      execute(primitive, pd, args);
      return;
    }
    // One transposed buffer: the primitive may run in place.
    std::shared_ptr<Storage> bytes;
    dnnl::memory t = temporary_memory(work, bytes);
    reorder(x, t);
    std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, t}, {DNNL_ARG_DST, t}};
    execute(primitive, pd, args);
    reorder(t, y);
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
  kernel->transposed = inner > 1;
  // acb: the axis (dim 1) innermost in memory.
  kernel->work = kernel->transposed ? dnnl::memory::desc({outer, len, inner}, type, tag::acb) : kernel->plain;
  kernel->pd = dnnl::softmax_forward::primitive_desc(cpu_engine(), dnnl::prop_kind::forward_inference,
                                                     algorithm, kernel->work, kernel->work, 1, base_attr());
  if (is_generic_impl(kernel->pd)) return {};
  kernel->primitive = dnnl::softmax_forward(kernel->pd);
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
