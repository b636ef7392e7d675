// The index of the largest or smallest element along one axis: ArgMax, ArgMin (ONNX opset 13),
// as int64. Ties go to the first occurrence, or the last with select_last_index=1. NaN beats
// every number, as in numpy, so the first (or last) NaN is the answer when there is one.
#include <cmath>
#include <type_traits>
#include <vector>

#include "infer_util.h"
#include "reduce_util.h"

namespace kiln::ops {
namespace {

// Whether `v` at a later index replaces the best value so far.
template <bool kMax, bool kLast, class C>
bool replaces(C v, C best) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(best)) return kLast && std::isnan(v);
    if (std::isnan(v)) return true;
  }
  if constexpr (kLast) {
    return kMax ? v >= best : v <= best;
  } else {
    return kMax ? v > best : v < best;
  }
}

// Inner columns handled together when the axis is strided, so each step reads contiguous memory.
inline constexpr int64_t kInnerBlock = 1024;

template <class T, bool kMax, bool kLast>
void arg_reduce(const T* x, int64_t* y, const AxisSplit& s) {
  using C = compute_t<T>;
  if (s.inner == 1) {
    parallel_for(0, s.outer, reduce_grain(s.axis), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) {
        const T* row = x + o * s.axis;
        auto best = static_cast<C>(row[0]);
        int64_t index = 0;
        for (int64_t r = 1; r < s.axis; ++r) {
          const auto v = static_cast<C>(row[r]);
          if (replaces<kMax, kLast>(v, best)) {
            best = v;
            index = r;
          }
        }
        y[o] = index;
      }
    });
    return;
  }
  const int64_t block = std::min(s.inner, kInnerBlock);
  const int64_t blocks = (s.inner + block - 1) / block;
  parallel_for(0, s.outer * blocks, reduce_grain(s.axis * block), [&](int64_t b, int64_t e) {
    std::vector<C> best(static_cast<size_t>(block));
    for (int64_t task = b; task < e; ++task) {
      const int64_t o = task / blocks, j0 = (task % blocks) * block;
      const int64_t n = std::min(block, s.inner - j0);
      const T* first = x + o * s.axis * s.inner + j0;
      int64_t* index = y + o * s.inner + j0;
      for (int64_t j = 0; j < n; ++j) {
        best[static_cast<size_t>(j)] = static_cast<C>(first[j]);
        index[j] = 0;
      }
      for (int64_t r = 1; r < s.axis; ++r) {
        const T* src = first + r * s.inner;
        for (int64_t j = 0; j < n; ++j) {
          const auto v = static_cast<C>(src[j]);
          if (replaces<kMax, kLast>(v, best[static_cast<size_t>(j)])) {
            best[static_cast<size_t>(j)] = v;
            index[j] = r;
          }
        }
      }
    }
  });
}

std::vector<TensorInfo> infer_arg_reduce(InferContext& ctx) {
  require_dtype(ctx, 0, kNumericDTypes);
  const Shape& in = ctx.shape(0);
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), in.ndim(), "attribute 'axis'");
  KILN_CHECK(in[axis] != 0, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected a nonempty axis ",
             axis, " to take the index of, got shape ", in);
  const bool keepdims = ctx.attrs().get_int("keepdims") == 1;
  Shape out;
  for (int d = 0; d < in.ndim(); ++d) {
    if (d != axis) {
      out.push_back(in[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return {TensorInfo{DType::kInt64, out}};
}

template <bool kMax>
void arg_reduce_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), data.ndim(), "axis");
  const AxisSplit split = split_at_axis(data.shape(), axis);
  const bool last = ctx.attrs.get_int("select_last_index") == 1;
  int64_t* y = ctx.output(0).data<int64_t>();
  dispatch_dtype(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      if (last) {
        arg_reduce<T, kMax, true>(data.data<T>(), y, split);
      } else {
        arg_reduce<T, kMax, false>(data.data<T>(), y, split);
      }
    }
  });
}

KILN_REGISTER_OP(ArgMax)
    .doc(
        "Index (int64) of the largest element along `axis`; ties pick the first, or the last with "
        "select_last_index=1.")
    .input("data")
    .output("reduced")
    .attr("axis", AttrType::kInt, 0)
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("select_last_index", AttrType::kInt, 0, require_flag)
    .infer(infer_arg_reduce)
    .kernel(arg_reduce_kernel<true>);

KILN_REGISTER_OP(ArgMin)
    .doc(
        "Index (int64) of the smallest element along `axis`; ties pick the first, or the last with "
        "select_last_index=1.")
    .input("data")
    .output("reduced")
    .attr("axis", AttrType::kInt, 0)
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("select_last_index", AttrType::kInt, 0, require_flag)
    .infer(infer_arg_reduce)
    .kernel(arg_reduce_kernel<false>);

}  // namespace
}  // namespace kiln::ops
