// Running sums and products along one axis: CumSum (ONNX opset 14) and CumProd (opset 26). The
// axis is an input (a 0-D or 1-element int32/int64 tensor); exclusive=1 leaves each element out
// of its own result (the first one gets 0 or 1), reverse=1 runs from the end of the axis.
#include <algorithm>
#include <type_traits>
#include <vector>

#include "elementwise.h"
#include "infer_util.h"
#include "reduce_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kCumulativeDTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                              DType::kBFloat16, DType::kInt32,   DType::kInt64,
                                              DType::kUInt32,   DType::kUInt64};

// Integers accumulate in their unsigned counterpart, so an overflow wraps (as ONNX Runtime's
// does) instead of being undefined behavior; floats in compute_t (float for the 16-bit ones).
template <class T>
using Accumulator = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>,
                                                std::type_identity<compute_t<T>>>::type;

struct SumStep {
  static constexpr int kIdentity = 0;
  template <class A>
  static A apply(A acc, A x) {
    return static_cast<A>(acc + x);
  }
};

struct ProdStep {
  static constexpr int kIdentity = 1;
  template <class A>
  static A apply(A acc, A x) {
    return static_cast<A>(acc * x);
  }
};

int64_t read_axis(const Tensor& axis, const std::string& label) {
  KILN_CHECK(axis.numel() == 1 && axis.ndim() <= 1, ErrorCode::kShapeMismatch, label,
             ": expected a scalar (0-D, or 1-D with one element), got shape ", axis.shape());
  return read_int_values(axis, label)[0];
}

std::vector<TensorInfo> infer_cumulative(InferContext& ctx) {
  require_dtype(ctx, 0, kCumulativeDTypes);
  require_dtype(ctx, 1, kIndexDTypes);
  const Shape& axis_shape = ctx.shape(1);
  KILN_CHECK(axis_shape.ndim() == 0 || (axis_shape.ndim() == 1 && axis_shape[0] <= 1),
             ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected a scalar (0-D, or 1-D with one element), got shape ", axis_shape);
  if (ctx.has_value(1))
    normalize_axis(read_axis(ctx.value(1), ctx.input_label(1)), ctx.shape(0).ndim(), ctx.input_label(1));
  return {ctx.input(0)};
}

// Scans every column (outer index, inner index) along the axis. A task takes a run of adjacent
// columns and walks the axis once for all of them, so the innermost loop reads contiguous memory.
template <class T, class Step>
void scan_columns(const T* x, T* y, const AxisSplit& s, bool exclusive, bool reverse) {
  using A = Accumulator<T>;
  const int64_t n = s.axis, inner = s.inner;
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n, 1));
  parallel_for(0, s.outer * inner, grain, [&](int64_t begin, int64_t end) {
    std::vector<A> acc;
    for (int64_t column = begin; column < end;) {
      const int64_t o = column / inner, j0 = column % inner;
      const int64_t len = std::min(inner - j0, end - column);
      acc.assign(static_cast<size_t>(len), static_cast<A>(Step::kIdentity));
      for (int64_t step = 0; step < n; ++step) {
        const int64_t k = reverse ? n - 1 - step : step;
        const T* src = x + (o * n + k) * inner + j0;
        T* dst = y + (o * n + k) * inner + j0;
        for (int64_t j = 0; j < len; ++j) {
          A& a = acc[static_cast<size_t>(j)];
          const A value = static_cast<A>(static_cast<compute_t<T>>(src[j]));
          if (exclusive) {
            dst[j] = convert_value<T>(static_cast<compute_t<T>>(a));
            a = Step::apply(a, value);
          } else {
            a = Step::apply(a, value);
            dst[j] = convert_value<T>(static_cast<compute_t<T>>(a));
          }
        }
      }
      column += len;
    }
  });
}

template <class Step>
void cumulative_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int axis = normalize_axis(read_axis(ctx.input(1), "input 1 (axis)"), x.ndim(), "input 1 (axis)");
  const AxisSplit s = split_at_axis(x.shape(), axis);
  const bool exclusive = ctx.attrs.get_int("exclusive") == 1;
  const bool reverse = ctx.attrs.get_int("reverse") == 1;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>)
      scan_columns<T, Step>(x.data<T>(), ctx.output(0).data<T>(), s, exclusive, reverse);
  });
}

KILN_REGISTER_OP(CumSum)
    .doc(
        "Cumulative sum of x along `axis` (a scalar int32/int64 input); exclusive=1 starts from 0 "
        "without the element itself, reverse=1 sums from the end.")
    .input("x")
    .input("axis")
    .output("y")
    .attr("exclusive", AttrType::kInt, 0, require_flag)
    .attr("reverse", AttrType::kInt, 0, require_flag)
    .infer(infer_cumulative)
    .kernel(cumulative_kernel<SumStep>);

KILN_REGISTER_OP(CumProd)
    .doc(
        "Cumulative product of x along `axis` (a scalar int32/int64 input); exclusive=1 starts from 1 "
        "without the element itself, reverse=1 multiplies from the end.")
    .input("x")
    .input("axis")
    .output("y")
    .attr("exclusive", AttrType::kInt, 0, require_flag)
    .attr("reverse", AttrType::kInt, 0, require_flag)
    .infer(infer_cumulative)
    .kernel(cumulative_kernel<ProdStep>);

}  // namespace
}  // namespace kiln::ops
