// Axis permutation: Transpose. The kernel writes the output contiguously and walks 2-D tiles when
// the input's dense axis moves away from the innermost position (see copy_strided).
#include <numeric>

#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

// The permutation to apply: `perm` when given (validated against the rank), else reversed axes.
std::vector<int64_t> transpose_perm(const Attrs& attrs, int rank, const std::string& what) {
  if (!attrs.has("perm")) {
    std::vector<int64_t> perm(static_cast<size_t>(rank));
    std::iota(perm.rbegin(), perm.rend(), 0);
    return perm;
  }
  const auto& perm = attrs.get_ints("perm");
  KILN_CHECK(static_cast<int>(perm.size()) == rank, ErrorCode::kInvalidArgument,
             "attribute 'perm': expected ", rank, " entries (the rank of ", what, "), got ", perm.size());
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  for (int64_t p : perm) {
    KILN_CHECK(p >= 0 && p < rank, ErrorCode::kOutOfRange, "attribute 'perm': expected axes in [0, ", rank,
               ") for ", what, ", got ", p);
    KILN_CHECK(!seen[static_cast<size_t>(p)], ErrorCode::kInvalidArgument, "attribute 'perm': axis ", p,
               " appears twice; expected a permutation of 0..", rank - 1);
    seen[static_cast<size_t>(p)] = true;
  }
  return perm;
}

std::vector<TensorInfo> infer_transpose(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  Shape out;
  for (int64_t p : transpose_perm(ctx.attrs(), in.ndim(), ctx.input_label(0) + " of shape " + in.to_string()))
    out.push_back(in[static_cast<int>(p)]);
  return {TensorInfo{ctx.dtype(0), out}};
}

void transpose_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const auto in_strides = contiguous_strides(in.shape());
  std::vector<int64_t> src_strides;
  for (int64_t p : transpose_perm(ctx.attrs, in.ndim(), "data"))
    src_strides.push_back(in_strides[static_cast<size_t>(p)]);
  copy_view_to(out, in, src_strides);
}

// The gradient is transposed back by the inverse permutation.
void transpose_gradient(GradientContext& ctx) {
  const int rank = ctx.input_info(0).shape.ndim();
  const auto perm = transpose_perm(ctx.attrs(), rank, "data");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  ctx.set_input_grad(0, ctx.op1("Transpose", {ctx.output_grad(0)}, {{"perm", inverse}}));
}

KILN_REGISTER_OP(Transpose)
    .moves_strings()
    .takes_storage_types()
    .doc("Permutes the axes: output axis i is input axis perm[i] (reversed axes when perm is absent).")
    .input("data")
    .output("transposed")
    .optional_attr("perm", AttrType::kInts)
    .infer(infer_transpose)
    .kernel(transpose_kernel)
    .gradient(transpose_gradient);

}  // namespace
}  // namespace kiln::ops
