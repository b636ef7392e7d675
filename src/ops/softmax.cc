// Softmax, LogSoftmax and Hardmax along one axis (opset 13: the other axes are independent).
// Softmax and LogSoftmax subtract each line's maximum before exponentiating, so large inputs
// neither overflow nor lose precision; sums are accumulated in double.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "core/thread_pool.h"
#include "gradient.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// Elements per task: large enough that scheduling is noise next to the work.
constexpr int64_t kSoftmaxGrain = 1 << 15;
// Lines handled together when the axis is not the last one: the block's elements are contiguous
// at each step along the axis, so every pass over the axis reads whole cache lines.
constexpr int64_t kLineBlock = 256;

std::vector<TensorInfo> infer_softmax(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  KILN_CHECK(ctx.shape(0).ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected rank >= 1, got shape ", ctx.shape(0));
  normalize_axis(ctx.attrs().get_int("axis"), ctx.shape(0).ndim(), "attribute 'axis'");
  return {ctx.input(0)};
}

// The input viewed as (outer, len, inner) around the axis. fn(x, y, len, inner, count) handles
// `count` adjacent lines starting at x and y: element k of line j is at [k * inner + j].
template <class F>
void for_each_line_block(KernelContext& ctx, F fn) {
  const Tensor& x = ctx.input(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), x.ndim(), "attribute 'axis'");
  const int64_t len = x.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int i = axis + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  const int64_t block = std::min(inner, kLineBlock);
  const int64_t blocks_per_outer = block == 0 ? 0 : (inner + block - 1) / block;
  const int64_t work = std::max<int64_t>(1, len * block);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      const T* in = x.data<T>();
      T* out = ctx.output(0).data<T>();
      parallel_for(0, outer * blocks_per_outer, std::max<int64_t>(1, kSoftmaxGrain / work),
                   [&](int64_t b, int64_t e) {
                     for (int64_t item = b; item < e; ++item) {
                       const int64_t o = item / blocks_per_outer, j0 = (item % blocks_per_outer) * block;
                       const int64_t offset = o * len * inner + j0;
                       fn(in + offset, out + offset, len, inner, std::min(block, inner - j0));
                     }
                   });
    }
  });
}

template <bool kLog>
void softmax_kernel(KernelContext& ctx) {
  for_each_line_block(ctx, [](const auto* x, auto* y, int64_t len, int64_t inner, int64_t count) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    using C = compute_t<T>;
    C max[kLineBlock];
    double sum[kLineBlock];
    std::fill(max, max + count, -std::numeric_limits<C>::infinity());
    std::fill(sum, sum + count, 0.0);
    for (int64_t k = 0; k < len; ++k)
      for (int64_t j = 0; j < count; ++j) max[j] = std::max(max[j], static_cast<C>(x[k * inner + j]));
    // 16-bit types round each step to the type, as ONNX's reference (and its Softmax function
    // body) computes them: x - max, the exponential, the sum and the quotient.
    constexpr bool kRoundSteps = !kLog && !std::is_same_v<T, C>;
    for (int64_t k = 0; k < len; ++k) {
      for (int64_t j = 0; j < count; ++j) {
        C shifted = static_cast<C>(x[k * inner + j]) - max[j];
        if constexpr (kRoundSteps) shifted = static_cast<C>(convert_value<T>(shifted));
        const C e = std::exp(shifted);
        if constexpr (kRoundSteps) {
          const T rounded = convert_value<T>(e);
          sum[j] += static_cast<double>(static_cast<C>(rounded));
          y[k * inner + j] = rounded;
        } else {
          sum[j] += static_cast<double>(e);
          // Where y holds C exactly, keep the exponential for the last pass instead of recomputing it.
          if constexpr (!kLog) y[k * inner + j] = e;
        }
      }
    }
    if constexpr (kLog) {
      // (x - max) first: it is exact for nearby values, where max + log(sum) would round.
      C log_sum[kLineBlock];
      for (int64_t j = 0; j < count; ++j) log_sum[j] = static_cast<C>(std::log(sum[j]));
      for (int64_t k = 0; k < len; ++k)
        for (int64_t j = 0; j < count; ++j)
          y[k * inner + j] = convert_value<T>((static_cast<C>(x[k * inner + j]) - max[j]) - log_sum[j]);
    } else {
      if constexpr (kRoundSteps) {
        C total[kLineBlock];
        for (int64_t j = 0; j < count; ++j) total[j] = static_cast<C>(convert_value<T>(sum[j]));
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = 0; j < count; ++j)
            y[k * inner + j] = convert_value<T>(static_cast<C>(y[k * inner + j]) / total[j]);
      } else {
        C scale[kLineBlock];
        for (int64_t j = 0; j < count; ++j) scale[j] = static_cast<C>(1.0 / sum[j]);
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = 0; j < count; ++j) y[k * inner + j] *= scale[j];
      }
    }
  });
}

// 1 at the first maximum of each line (a NaN counts as the maximum, as numpy's argmax), 0 elsewhere.
void hardmax_kernel(KernelContext& ctx) {
  for_each_line_block(ctx, [](const auto* x, auto* y, int64_t len, int64_t inner, int64_t count) {
    using T = std::remove_const_t<std::remove_pointer_t<decltype(x)>>;
    using C = compute_t<T>;
    C best[kLineBlock];
    int64_t index[kLineBlock];
    std::fill(index, index + count, int64_t{0});
    for (int64_t j = 0; j < count && len > 0; ++j) best[j] = static_cast<C>(x[j]);
    for (int64_t k = 1; k < len; ++k) {
      for (int64_t j = 0; j < count; ++j) {
        const C v = static_cast<C>(x[k * inner + j]);
        if (!std::isnan(best[j]) && (v > best[j] || std::isnan(v))) {
          best[j] = v;
          index[j] = k;
        }
      }
    }
    for (int64_t k = 0; k < len; ++k)
      for (int64_t j = 0; j < count; ++j) y[k * inner + j] = convert_value<T>(C(k == index[j] ? 1 : 0));
  });
}

// Gradient rules, with s = sum along the axis (kept): softmax dx = y * (g - s(g * y)); log-softmax
// dx = g - e^y * s(g). Hardmax is piecewise constant: zero gradient.
GradValue sum_along_axis(GradientContext& ctx, GradValue v) {
  return ctx.op1("ReduceSum", {v, ctx.ints({ctx.attrs().get_int("axis")})}, {{"keepdims", 1}});
}

void softmax_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0), y = ctx.output(0);
  ctx.set_input_grad(0, ctx.mul(y, ctx.sub(g, sum_along_axis(ctx, ctx.mul(g, y)))));
}

void log_softmax_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  ctx.set_input_grad(0, ctx.sub(g, ctx.mul(ctx.op1("Exp", {ctx.output(0)}), sum_along_axis(ctx, g))));
}

void hardmax_gradient(GradientContext&) {}

KILN_REGISTER_OP(Softmax)
    .doc("exp(x - max) / sum(exp(x - max)) along `axis` (default -1).")
    .input("input")
    .output("output")
    .attr("axis", AttrType::kInt, -1)
    .infer(infer_softmax)
    .kernel(softmax_kernel<false>)
    .gradient(softmax_gradient);

KILN_REGISTER_OP(LogSoftmax)
    .doc("x - max - log(sum(exp(x - max))) along `axis` (default -1).")
    .input("input")
    .output("output")
    .attr("axis", AttrType::kInt, -1)
    .infer(infer_softmax)
    .kernel(softmax_kernel<true>)
    .gradient(log_softmax_gradient);

KILN_REGISTER_OP(Hardmax)
    .doc("1 at the first maximum along `axis` (default -1), 0 elsewhere.")
    .input("input")
    .output("output")
    .attr("axis", AttrType::kInt, -1)
    .infer(infer_softmax)
    .kernel(hardmax_kernel)
    .gradient(hardmax_gradient);

}  // namespace
}  // namespace kiln::ops
