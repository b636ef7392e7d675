// Loops shared by the elementwise op families: a unary map and a broadcasting binary map,
// both split across the compute pool. Each op family supplies only its scalar function.
#pragma once

#include <algorithm>

#include "broadcast.h"
#include "core/thread_pool.h"
#include "kiln/tensor.hpp"

namespace kiln::ops {

// Elements per task: large enough that scheduling is noise next to the memory traffic.
inline constexpr int64_t kElementwiseGrain = 1 << 15;

// y[i] = f(x[i]) with the arithmetic done in compute_t (float for 16-bit floats).
template <class TIn, class TOut, class F>
void map_unary(const Tensor& x, Tensor& y, F f) {
  const TIn* in = x.data<TIn>();
  TOut* out = y.data<TOut>();
  parallel_for(0, x.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = convert_value<TOut>(f(static_cast<compute_t<TIn>>(in[i])));
  });
}

// out = f(a, b) with numpy broadcasting; `out` already has the broadcast shape.
template <class TA, class TB, class TOut, class F>
void map_binary(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TOut* po = out.data<TOut>();
  auto apply = [&](int64_t i, int64_t ia, int64_t ib) {
    po[i] = convert_value<TOut>(f(static_cast<compute_t<TA>>(pa[ia]), static_cast<compute_t<TB>>(pb[ib])));
  };
  const int64_t n = out.numel();
  if (a.shape() == out.shape() && b.shape() == out.shape()) {
    parallel_for(0, n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) apply(i, i, i);
    });
    return;
  }
  if (b.numel() == 1 && a.shape() == out.shape()) {
    parallel_for(0, n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) apply(i, i, 0);
    });
    return;
  }
  if (a.numel() == 1 && b.shape() == out.shape()) {
    parallel_for(0, n, kElementwiseGrain, [&](int64_t s, int64_t e) {
      for (int64_t i = s; i < e; ++i) apply(i, 0, i);
    });
    return;
  }
  const BroadcastPlan<2> plan(out.shape(), {a.shape(), b.shape()});
  const int64_t inner = plan.inner(), sa = plan.inner_stride(0), sb = plan.inner_stride(1);
  parallel_for(0, plan.rows(), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t s, int64_t e) {
                 std::array<int64_t, 2> off;
                 for (int64_t row = s; row < e; ++row) {
                   plan.row_offsets(row, off);
                   const int64_t base = row * inner;
                   for (int64_t j = 0; j < inner; ++j) apply(base + j, off[0] + j * sa, off[1] + j * sb);
                 }
               });
}

}  // namespace kiln::ops
