// Kiln ops that gradient rules are built from when no ONNX op fits: ReduceSumLike undoes numpy
// broadcasting without knowing which axes were broadcast until the shapes are.
#include <array>
#include <type_traits>

#include "broadcast.h"
#include "gradient.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorInfo> infer_reduce_sum_like(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  const Shape& like = ctx.shape(1);
  if (x.is_known() && like.is_known()) {
    const Shape b = broadcast_shapes(x, like, ctx.input_label(1));
    KILN_CHECK(b == x, ErrorCode::kShapeMismatch, ctx.input_label(1),
               ": expected a shape that broadcasts to ", ctx.input_label(0), "'s shape ", x, ", got ", like);
  }
  return {TensorInfo{ctx.dtype(0), like}};
}

void reduce_sum_like_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      std::vector<double> sums(static_cast<size_t>(y.numel()), 0.0);
      const T* px = x.data<T>();
      // Walk X as the "output" of a broadcast from Y's shape: each X element's offset in Y.
      const BroadcastPlan<1> plan(x.shape(), {y.shape()});
      std::array<int64_t, 1> off;
      const int64_t inner = plan.inner(), step = plan.inner_stride(0);
      for (int64_t row = 0; row < plan.rows(); ++row) {
        plan.row_offsets(row, off);
        const T* src = px + row * inner;
        for (int64_t j = 0; j < inner; ++j)
          sums[static_cast<size_t>(off[0] + j * step)] +=
              static_cast<double>(static_cast<compute_t<T>>(src[j]));
      }
      T* out = y.data<T>();
      for (size_t i = 0; i < sums.size(); ++i) out[i] = convert_value<T>(sums[i]);
    }
  });
}

KILN_REGISTER_OP(ReduceSumLike)
    .doc(
        "Kiln: X summed over the axes along which `like`'s shape broadcasts to X's, giving like's "
        "shape (the gradient of a broadcast). Only like's shape is read.")
    .input("X")
    .input("like")
    .output("Y")
    .infer(infer_reduce_sum_like)
    .kernel(reduce_sum_like_kernel)
    .gradient([](GradientContext& ctx) {
      ctx.set_input_grad(0, ctx.op1("Expand", {ctx.output_grad(0), ctx.op1("Shape", {ctx.input(0)})}));
    });

}  // namespace
}  // namespace kiln::ops
