// Building blocks shared by the unary math and activation families: inference that checks the
// dtype and keeps X's shape, and kernels that map a scalar function over every element.
#pragma once

#include <type_traits>

#include "elementwise.h"
#include "infer_util.h"

namespace kiln::ops {

// Output 0 has input 0's dtype and shape; input 0's dtype must be one of `Allowed`.
template <const auto& Allowed>
std::vector<TensorInfo> infer_unary(InferContext& ctx) {
  require_dtype(ctx, 0, Allowed);
  return {ctx.input(0)};
}

// y = f(x) for a floating-point x; f sees float for the 16-bit floats.
template <class F>
void map_floating(KernelContext& ctx, F f) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      map_unary<T, T>(ctx.input(0), ctx.output(0), f);
    } else {
      raise(ErrorCode::kInternal, "a floating-point kernel got ", dtype_name(dtype_of<T>));
    }
  });
}

// y = f(x) for any numeric (non-bool) x.
template <class F>
void map_numeric(KernelContext& ctx, F f) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      map_unary<T, T>(ctx.input(0), ctx.output(0), f);
    } else {
      raise(ErrorCode::kInternal, "a numeric kernel got bool");
    }
  });
}

template <class F>
KernelFn floating_kernel(F f) {
  return [f](KernelContext& ctx) { map_floating(ctx, f); };
}

template <class F>
KernelFn numeric_kernel(F f) {
  return [f](KernelContext& ctx) { map_numeric(ctx, f); };
}

// x < 0, written so that unsigned types compile without an always-false comparison.
template <class C>
constexpr bool is_negative(C x) {
  if constexpr (std::is_unsigned_v<C>) {
    return false;
  } else {
    return x < C(0);
  }
}

// Clamps v to [lo, hi] with NaN passing through, as numpy.clip does.
template <class C>
constexpr C clamp_keep_nan(C v, C lo, C hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

}  // namespace kiln::ops
