// Flatten of a 4-D value kept in a oneDNN layout (a CNN's last feature map on its way to the
// classifier): one step writes the row-major 2-D output, where the runtime would convert the value
// to row-major (a Reorder step) and the reference kernel then copy it. Flatten's row-major output
// has the bytes of the row-major 4-D tensor whatever its axis, so the conversion is the whole op:
// plain loops for a small tensor, a oneDNN reorder otherwise (loop_layout.h).
#include <memory>

#include "backends/onednn/loop_layout.h"
#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

runtime::KernelChoice make_flatten(const runtime::KernelQuery& query) {
  const auto& x = input_info(query.node, 0);
  if (query.input_layouts[0] == nullptr || x.shape.ndim() != 4) return {};
  const std::optional<dnnl::memory::desc> stored = stored_desc(query, 0);
  // A value a bf16 plan keeps narrower converts back to its own type on the runtime's Reorder.
  if (!stored || stored->get_data_type() != *to_dnnl(x.dtype)) return {};
  auto conversion = std::make_shared<ToRowMajor>(*stored, plain_desc(x.shape, x.dtype));
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  choice.kernel = [conversion](ops::KernelContext& ctx) {
    conversion->run(ctx, ctx.input(0).raw_data(), ctx.output(0).raw_data());
  };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Flatten, make_flatten);

}  // namespace kiln::onednn
