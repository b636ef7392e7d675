// Softmax and LogSoftmax along any axis on oneDNN's softmax primitive (accurate: the maximum is
// subtracted first; bf16 or fp16 in and out in a low-precision plan, float32 inside). The tensor is viewed as
// (outer, axis, inner). oneDNN's fast kernels need the axis innermost in memory, so when inner > 1 the input
// is reordered to (outer, inner, axis) order, and the result back, around the primitive; its generic
// implementation, which would take the plain layout, is many times slower than the reference kernel.
#include <memory>
#include <string_view>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

using tag = dnnl::memory::format_tag;

struct SoftmaxKernel {
  Prepared<dnnl::softmax_forward> softmax;
  dnnl::memory::desc x, y;  // (outer, axis, inner) row-major, as the tensors are stored
  dnnl::memory::desc work;  // what the primitive works on, when transposed: (outer, inner, axis) order
  std::optional<Reorder> to_work, from_work;  // when transposed

  void operator()(ops::KernelContext& ctx) const {
    if (!to_work) {
      execute(ctx, softmax,
              {{DNNL_ARG_SRC, x, ctx.input(0).raw_data()}, {DNNL_ARG_DST, y, ctx.output(0).raw_data()}});
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

// X is read row-major in the type it is stored in (float32, or bf16/fp16 between this backend's
// kernels in a low-precision plan; the primitive accumulates in float32) and Y written in the
// plan's compute type unless it is a graph output.
runtime::KernelChoice make_softmax(const runtime::KernelQuery& query, dnnl::algorithm algorithm) {
  const auto& x = input_info(query.node, 0);
  if (!is_float(x.dtype) || x.shape.numel() == 0) return {};
  const std::optional<dnnl::memory::desc> x_stored = stored_plain_desc(query, 0);
  if (!x_stored) return {};
  const int axis = normalize_axis(query.attrs.get_int("axis"), x.shape.ndim(), "attribute 'axis'");
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape[i];
  for (int i = axis + 1; i < x.shape.ndim(); ++i) inner *= x.shape[i];
  const int64_t len = x.shape[axis];
  auto kernel = std::make_shared<SoftmaxKernel>();
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->x = x_stored->reshape({outer, len, inner});
  kernel->y = plain_output_store(query, 0, choice.output_layouts[0]).reshape({outer, len, inner});
  const bool transposed = inner > 1;
  // acb: the axis (dim 1) innermost in memory.
  if (transposed) kernel->work = dnnl::memory::desc({outer, len, inner}, kernel->x.get_data_type(), tag::acb);
  const dnnl::softmax_forward::primitive_desc pd(cpu_engine(), dnnl::prop_kind::forward_inference, algorithm,
                                                 transposed ? kernel->work : kernel->x,
                                                 transposed ? kernel->work : kernel->y, 1, base_attr());
  if (is_generic_impl(pd)) return {};
  kernel->softmax = Prepared<dnnl::softmax_forward>(pd);
  if (transposed) {
    kernel->to_work = make_reorder(kernel->x, kernel->work);
    kernel->from_work = make_reorder(kernel->work, kernel->y);
  }
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

runtime::KernelChoice make_softmax_kernel(const runtime::KernelQuery& query) {
  return make_softmax(query, dnnl::algorithm::softmax_accurate);
}

runtime::KernelChoice make_log_softmax_kernel(const runtime::KernelQuery& query) {
  return make_softmax(query, dnnl::algorithm::softmax_log);
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Softmax, make_softmax_kernel);
KILN_ONEDNN_LAYOUT_KERNEL(LogSoftmax, make_log_softmax_kernel);

}  // namespace kiln::onednn
