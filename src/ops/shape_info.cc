// Ops that report a tensor's extent as data: Shape (optionally a [start, end) range of the dims)
// and Size (the element count). Both are int64 and read no element of the input.
#include <algorithm>

#include "infer_util.h"

namespace kiln::ops {

std::pair<int, int> shape_range(const Attrs& attrs, int rank) {
  auto clamp = [rank](int64_t v) {
    if (v < 0) v += rank;
    return static_cast<int>(std::clamp<int64_t>(v, 0, rank));
  };
  const int start = clamp(attrs.get_int("start"));
  const int end = attrs.has("end") ? clamp(attrs.get_int("end")) : rank;
  return {start, std::max(start, end)};
}

namespace {

KILN_REGISTER_OP(Shape)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "The input's dimensions as a 1-D int64 tensor, optionally only dims [start, end) (negative "
        "values count from the back; both are clamped to the rank).")
    .input("data")
    .output("shape")
    .reads_shapes_only()
    .attr("start", AttrType::kInt, 0)
    .optional_attr("end", AttrType::kInt)
    .infer([](InferContext& ctx) {
      const auto [start, end] = shape_range(ctx.attrs(), ctx.shape(0).ndim());
      return std::vector<TensorInfo>{{DType::kInt64, Shape{end - start}}};
    })
    .kernel([](KernelContext& ctx) {
      const Shape& in = ctx.input(0).shape();
      const auto [start, end] = shape_range(ctx.attrs, in.ndim());
      int64_t* out = ctx.output(0).data<int64_t>();
      for (int a = start; a < end; ++a) out[a - start] = in[a];
    });

KILN_REGISTER_OP(Size)
    .moves_strings()
    .takes_storage_types()
    .doc("The input's element count as an int64 scalar.")
    .input("data")
    .output("size")
    .reads_shapes_only()
    .infer([](InferContext&) {
      return std::vector<TensorInfo>{{DType::kInt64, Shape{}}};
    })
    .kernel([](KernelContext& ctx) { *ctx.output(0).data<int64_t>() = ctx.input(0).numel(); });

}  // namespace
}  // namespace kiln::ops
