// Reshape and Transpose of values that a bf16 or fp16 plan keeps in the narrower type between this
// backend's kernels (row-major, see stored_plain_desc), so that a transformer's attention heads
// (MatMul -> Reshape -> Transpose -> MatMul) are not converted to float32 and back around them.
// Float32 row-major values stay with the reference kernels, which do the same work; a graph
// output (which must be float32) is converted by the runtime before the reference kernel runs.
#include <cstring>
#include <memory>

#include "backends/onednn/onednn_common.h"

namespace kiln::onednn {
namespace {

// The stored descriptor of input 0 when it is kept row-major in another type than its own and
// the output may stay so too.
std::optional<dnnl::memory::desc> narrowed_input(const runtime::KernelQuery& query) {
  if (query.input_layouts[0] == nullptr || query.output_row_major[0]) return std::nullopt;
  return stored_plain_desc(query, 0);
}

// A new shape over the same bytes: a copy, unless the executor gave the output the input's buffer.
runtime::KernelChoice make_reshape(const runtime::KernelQuery& query) {
  const std::optional<dnnl::memory::desc> x = narrowed_input(query);
  if (!x) return {};
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  const dnnl::memory::desc y = output_store(
      query, 0, plain_desc(output_info(query.node, 0).shape, x->get_data_type()), choice.output_layouts[0]);
  const size_t bytes = y.get_size();
  choice.kernel = [bytes](ops::KernelContext& ctx) {
    if (ctx.output(0).raw_data() != ctx.input(0).raw_data())
      std::memcpy(ctx.output(0).raw_data(), ctx.input(0).raw_data(), bytes);
  };
  return choice;
}

// The input read through permuted strides (output axis k is input axis perm[k]) and written
// row-major by one reorder.
runtime::KernelChoice make_transpose(const runtime::KernelQuery& query) {
  const std::optional<dnnl::memory::desc> x = narrowed_input(query);
  if (!x) return {};
  const Shape& in = input_info(query.node, 0).shape;
  const Shape& out = output_info(query.node, 0).shape;
  const int rank = in.ndim();
  if (rank == 0) return {};
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  if (query.attrs.has("perm")) {
    perm = query.attrs.get_ints("perm");
  } else {
    for (int k = 0; k < rank; ++k) perm[static_cast<size_t>(k)] = rank - 1 - k;
  }
  const std::vector<int64_t> in_strides = contiguous_strides(in);
  dnnl::memory::dims permuted_strides;
  for (int64_t axis : perm) permuted_strides.push_back(in_strides[static_cast<size_t>(axis)]);
  const dnnl::memory::desc source(to_dims(out), x->get_data_type(), permuted_strides);
  runtime::KernelChoice choice;
  choice.output_layouts.resize(1);
  const dnnl::memory::desc y =
      output_store(query, 0, plain_desc(out, x->get_data_type()), choice.output_layouts[0]);
  auto conversion = std::make_shared<Reorder>(make_reorder(source, y));
  choice.kernel = [conversion](ops::KernelContext& ctx) {
    reorder(ctx, *conversion, ctx.input(0).raw_data(), ctx.output(0).raw_data());
  };
  return choice;
}

}  // namespace

KILN_ONEDNN_LAYOUT_KERNEL(Reshape, make_reshape);
KILN_ONEDNN_LAYOUT_KERNEL(Transpose, make_transpose);

}  // namespace kiln::onednn
