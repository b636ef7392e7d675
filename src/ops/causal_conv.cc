// CausalConvWithState (ONNX opset 27): the stateful causal depthwise 1-D convolution of Mamba and
// Gated DeltaNet. Each channel is convolved with its own k taps over the input left-padded by the
// carried state (the previous k - 1 positions, zeros when absent); present_state carries the last
// k - 1 positions of that padded input to the next call. activation silu (= swish) is fused.
#include <cmath>
#include <type_traits>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorInfo> infer_causal_conv(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  for (int i = 1; i < 4; ++i)
    if (ctx.has_input(i)) require_same_dtype(ctx, 0, i);
  require_rank(ctx, 0, 3, 3);
  require_rank(ctx, 1, 3, 3);
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  const auto agree = [](int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; };
  KILN_CHECK(agree(w[0], x[1]) && agree(w[1], 1) && (w[2] < 0 || w[2] >= 1), ErrorCode::kShapeMismatch,
             ctx.input_label(1), ": expected (channels, 1, k) with channels = ", x[1], ", got ", w);
  const int64_t carry = w[2] < 0 ? Shape::kUnknown : w[2] - 1;
  if (ctx.has_input(2)) {
    const Shape& b = ctx.shape(2);
    KILN_CHECK(b.ndim() == 1 && agree(b[0], x[1]), ErrorCode::kShapeMismatch, ctx.input_label(2),
               ": expected one bias per channel, shape ", Shape{x[1]}, ", got ", b);
  }
  const Shape state{x[0], x[1], carry};
  if (ctx.has_input(3)) {
    const Shape& s = ctx.shape(3);
    KILN_CHECK(s.ndim() == 3 && agree(s[0], x[0]) && agree(s[1], x[1]) && agree(s[2], carry),
               ErrorCode::kShapeMismatch, ctx.input_label(3),
               ": expected (batch_size, channels, k - 1) = ", state, ", got ", s);
  }
  if (ctx.num_outputs_requested() == 1) return {ctx.input(0)};
  return {ctx.input(0), TensorInfo{ctx.dtype(0), state}};
}

void causal_conv_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t batch = x.shape()[0], channels = x.shape()[1], length = x.shape()[2];
  const int64_t k = ctx.input(1).shape()[2], carry = k - 1, padded = length + carry;
  const bool silu = ctx.attrs.get_string("activation") != "none";
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      const T* pw = ctx.input(1).data<T>();
      const T* pb = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
      const T* ps = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
      T* py = ctx.output(0).data<T>();
      T* pstate = ctx.num_outputs() > 1 ? ctx.output(1).data<T>() : nullptr;
      parallel_for(0, batch * channels, 1, [&](int64_t begin, int64_t end) {
        std::vector<C> line(static_cast<size_t>(padded));
        for (int64_t bc = begin; bc < end; ++bc) {
          const int64_t c = bc % channels;
          for (int64_t i = 0; i < carry; ++i)
            line[static_cast<size_t>(i)] = ps ? static_cast<C>(ps[bc * carry + i]) : C(0);
          for (int64_t i = 0; i < length; ++i)
            line[static_cast<size_t>(carry + i)] = static_cast<C>(px[bc * length + i]);
          for (int64_t t = 0; t < length; ++t) {
            C sum = pb ? static_cast<C>(pb[c]) : C(0);
            for (int64_t j = 0; j < k; ++j)
              sum += static_cast<C>(pw[c * k + j]) * line[static_cast<size_t>(t + j)];
            if (silu) sum = sum / (C(1) + std::exp(-sum));
            py[bc * length + t] = convert_value<T>(sum);
          }
          for (int64_t i = 0; pstate && i < carry; ++i)
            pstate[bc * carry + i] = convert_value<T>(line[static_cast<size_t>(length + i)]);
        }
      });
    }
  });
}

KILN_REGISTER_OP(CausalConvWithState)
    .doc(
        "Causal depthwise 1-D convolution of input (batch, channels, length) with weight (channels, 1, k) "
        "over "
        "the input left-padded by past_state (the previous k - 1 positions; zeros when absent), plus bias, "
        "then "
        "silu when activation says so; present_state holds the last k - 1 positions of the padded input.")
    .input("input")
    .input("weight")
    .input("bias", Arity::kOptional)
    .input("past_state", Arity::kOptional)
    .output("output")
    .output("present_state", Arity::kOptional)
    .attr("activation", AttrType::kString, std::string("none"), one_of({"none", "silu", "swish"}))
    .infer(infer_causal_conv)
    .kernel(causal_conv_kernel);

}  // namespace
}  // namespace kiln::ops
