#include "infer_util.h"

#include <algorithm>

namespace kiln::ops {

void require_same_dtype(const InferContext& ctx, int i, int j) {
  KILN_CHECK(ctx.dtype(i) == ctx.dtype(j), ErrorCode::kTypeMismatch, ctx.input_label(j), ": expected dtype ",
             dtype_name(ctx.dtype(i)), " (the dtype of ", ctx.input_label(i), "), got ",
             dtype_name(ctx.dtype(j)));
}

void require_rank(const InferContext& ctx, int i, int min_rank, int max_rank) {
  const int r = ctx.shape(i).ndim();
  if (r >= min_rank && r <= max_rank) return;
  const std::string expected = min_rank == max_rank
                                   ? std::to_string(min_rank) + "-D"
                                   : std::to_string(min_rank) + "-D to " + std::to_string(max_rank) + "-D";
  raise(ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected ", expected, ", got shape ", ctx.shape(i));
}

std::vector<TensorInfo> infer_same_as_input(InferContext& ctx) {
  return {ctx.input(0)};
}

std::vector<int64_t> read_int_values(const Tensor& t, const std::string& what) {
  const Tensor c = t.contiguous();
  if (c.dtype() == DType::kInt64) return c.to_vector<int64_t>();
  if (c.dtype() == DType::kInt32) {
    const auto v = c.to_vector<int32_t>();
    return std::vector<int64_t>(v.begin(), v.end());
  }
  raise(ErrorCode::kTypeMismatch, what, ": expected int32 or int64 values, got ", dtype_name(c.dtype()));
}

std::vector<int> normalize_axes(const std::vector<int64_t>& axes, int rank, const std::string& what) {
  std::vector<int> out;
  for (int64_t a : axes) {
    const int n = normalize_axis(a, rank, what);
    KILN_CHECK(std::find(out.begin(), out.end(), n) == out.end(), ErrorCode::kInvalidArgument, what,
               ": axis ", a, " is repeated");
    out.push_back(n);
  }
  return out;
}

}  // namespace kiln::ops
