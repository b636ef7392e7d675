// TopK (ONNX opset 24): the K largest (or smallest) elements along an axis, and their int64
// indices. Equal values keep index order (the lower index first) and NaN ranks above every
// number, as in the ONNX reference. Results always come sorted, a valid answer for sorted=0 too.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "infer_util.h"
#include "reduce_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kKDTypes[] = {DType::kInt64};

// a > b with NaN above everything (and NaNs equal to each other).
template <class C>
bool greater(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return !std::isnan(b);
    if (std::isnan(b)) return false;
  }
  return a > b;
}

// The order of the output: by value (descending for largest), then by index.
template <bool kLargest, class C>
bool ranks_before(const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
  if (greater(a.first, b.first)) return kLargest;
  if (greater(b.first, a.first)) return !kLargest;
  return a.second < b.second;
}

// TopK over `rows` contiguous rows of `n` elements each, writing k values and indices per row.
template <class T, bool kLargest>
void topk_rows(const T* x, T* values, int64_t* indices, int64_t rows, int64_t n, int64_t k) {
  using C = compute_t<T>;
  if (k == 0) return;
  parallel_for(0, rows, reduce_grain(n), [&](int64_t b, int64_t e) {
    std::vector<std::pair<C, int64_t>> ranked(static_cast<size_t>(n));
    for (int64_t row = b; row < e; ++row) {
      const T* src = x + row * n;
      for (int64_t i = 0; i < n; ++i) ranked[static_cast<size_t>(i)] = {static_cast<C>(src[i]), i};
      std::partial_sort(ranked.begin(), ranked.begin() + k, ranked.end(), ranks_before<kLargest, C>);
      for (int64_t i = 0; i < k; ++i) {
        const int64_t index = ranked[static_cast<size_t>(i)].second;
        values[row * k + i] = src[index];
        indices[row * k + i] = index;
      }
    }
  });
}

std::vector<TensorInfo> infer_topk(InferContext& ctx) {
  require_dtype(ctx, 0, kNumericDTypes);
  require_dtype(ctx, 1, kKDTypes);
  const Shape& in = ctx.shape(0);
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), in.ndim(), "attribute 'axis'");
  const Tensor& k_value = ctx.value(1);
  KILN_CHECK(k_value.ndim() <= 1 && k_value.numel() == 1, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected a 1-element 1-D tensor, got shape ", k_value.shape());
  const int64_t k = read_int_values(k_value, ctx.input_label(1))[0];
  KILN_CHECK(k >= 0, ErrorCode::kInvalidArgument, ctx.input_label(1), ": expected K >= 0, got ", k);
  KILN_CHECK(in[axis] < 0 || k <= in[axis], ErrorCode::kOutOfRange, ctx.input_label(1),
             ": expected K <= ", in[axis], " (the size of axis ", axis, " of ", ctx.input_label(0), " ", in,
             "), got ", k);
  Shape out = in;
  out[axis] = k;
  return {TensorInfo{ctx.dtype(0), out}, TensorInfo{DType::kInt64, out}};
}

void topk_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  Tensor& values = ctx.output(0);
  Tensor& indices = ctx.output(1);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), data.ndim(), "axis");
  const AxisSplit s = split_at_axis(data.shape(), axis);
  const int64_t k = values.shape()[axis];
  const bool largest = ctx.attrs.get_int("largest") == 1;
  // Rows along a strided axis are gathered into contiguous ones first, and the results scattered
  // back after, so the sort reads and writes contiguous memory.
  const bool strided = s.inner > 1;
  const Tensor x =
      strided ? data.reshape({s.outer, s.axis, s.inner}).transpose({0, 2, 1}).contiguous() : data;
  Tensor row_values = strided ? Tensor::empty({s.outer, s.inner, k}, values.dtype()) : values;
  Tensor row_indices = strided ? Tensor::empty({s.outer, s.inner, k}, DType::kInt64) : indices;
  dispatch_dtype(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const auto run = largest ? topk_rows<T, true> : topk_rows<T, false>;
      run(x.data<T>(), row_values.data<T>(), row_indices.data<int64_t>(), s.outer * s.inner, s.axis, k);
    }
  });
  if (strided) {
    values.reshape({s.outer, k, s.inner}).copy_from(row_values.transpose({0, 2, 1}));
    indices.reshape({s.outer, k, s.inner}).copy_from(row_indices.transpose({0, 2, 1}));
  }
}

KILN_REGISTER_OP(TopK)
    .doc(
        "The K (a 1-element int64 tensor) largest, or smallest with largest=0, elements along "
        "`axis` and their int64 indices, sorted; equal values keep index order.")
    .input("X")
    .shape_input("K")
    .output("Values")
    .output("Indices")
    .attr("axis", AttrType::kInt, -1)
    .attr("largest", AttrType::kInt, 1, require_flag)
    .attr("sorted", AttrType::kInt, 1, require_flag)
    .infer(infer_topk)
    .kernel(topk_kernel);

}  // namespace
}  // namespace kiln::ops
