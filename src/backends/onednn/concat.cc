// Concat of values a oneDNN kernel left in its own layout (runtime::ValueLayout) on oneDNN's
// concat primitive, so that a chain such as YOLO's C3 blocks (convolutions whose outputs are
// joined along the channels and convolved again) stays in that layout instead of going to
// row-major and back around every join. Concats of row-major values only stay with the reference
// kernel (a plain copy), as do inputs of different element types (a bf16 layout next to a
// float32 tensor) and whatever only oneDNN's generic implementation covers. Float and 8-bit
// integer values (an int8 model's joins, which copy the 8-bit values as they are) are joined.
#include <memory>
#include <vector>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

struct ConcatKernel {
  Prepared<dnnl::concat> concat;
  std::vector<dnnl::memory::desc> sources;  // as stored
  Port y;

  void operator()(ops::KernelContext& ctx) const {
    std::shared_ptr<Storage> y_bytes;
    void* dst = write_port(y, ctx.output(0), y_bytes);
    std::vector<Arg> args;
    args.reserve(sources.size() + 1);
    for (size_t i = 0; i < sources.size(); ++i)
      args.push_back({DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), sources[i],
                      ctx.input(static_cast<int>(i)).raw_data()});
    args.push_back({DNNL_ARG_DST, y.used, dst});
    execute(ctx, concat, args);
    finish_write(ctx, y, dst, ctx.output(0));
  }
};

runtime::KernelChoice make_concat(const runtime::KernelQuery& query) {
  const graph::Node& node = query.node;
  const auto& y = output_info(node, 0);
  bool any_layout = false;
  for (const runtime::LayoutPtr& layout : query.input_layouts) any_layout |= layout != nullptr;
  // Float, and 8-bit values of int8 convolutions (YOLO's C3 and SPPF joins in an int8 model).
  const bool copyable = is_float(y.dtype) || y.dtype == DType::kInt8 || y.dtype == DType::kUInt8;
  if (!any_layout || !copyable || y.shape.numel() == 0) return {};
  auto kernel = std::make_shared<ConcatKernel>();
  for (int i = 0; i < static_cast<int>(node.inputs.size()); ++i) {
    const std::optional<dnnl::memory::desc> stored = stored_desc(query, i);
    if (!stored || input_info(node, i).shape.numel() == 0) return {};
    if (!kernel->sources.empty() && stored->get_data_type() != kernel->sources[0].get_data_type()) return {};
    kernel->sources.push_back(*stored);
  }
  const int axis = normalize_axis(query.attrs.get_int("axis"), y.shape.ndim(), "attribute 'axis'");
  const dnnl::memory::desc y_plain = plain_desc(y.shape, y.dtype);
  const dnnl::memory::desc y_any(to_dims(y.shape), kernel->sources[0].get_data_type(),
                                 dnnl::memory::format_tag::any);
  const dnnl::concat::primitive_desc pd(cpu_engine(), query.output_row_major[0] ? y_plain : y_any, axis,
                                        kernel->sources, base_attr());
  if (is_generic_impl(pd)) return {};
  kernel->concat = Prepared<dnnl::concat>(pd);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  kernel->y = output_port(output_store(query, 0, pd.dst_desc(), choice.output_layouts[0]), pd.dst_desc());
  choice.kernel = [kernel](ops::KernelContext& ctx) { (*kernel)(ctx); };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Concat, make_concat);

}  // namespace kiln::onednn
