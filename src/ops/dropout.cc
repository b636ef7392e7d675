// Dropout. Outside training mode (the default) it is the identity and its mask is all true. In
// training mode each element is kept when a uniform draw in [0, 1) is >= ratio, and kept values
// are scaled by 1 / (1 - ratio).
//  - With the `seed` attribute the draws come from MT19937 seeded with it, turned into doubles as
//    numpy's legacy generator does, so a seeded Dropout reproduces
//      np.random.seed(seed); mask = np.random.uniform(0, 1, x.shape) >= ratio
//    exactly (for seeds in [0, 2^32); other seeds use their low 32 bits), as the ONNX backend
//    tests expect. That stream is sequential: one thread.
//  - Without it the seed is the call's (KernelContext::call_seed) or the next of kiln::random's
//    sequence, and element i is kept when the low 32 bits of random::counter_hash(seed, i), as a
//    fraction of 2^32, are >= ratio: a counter-based draw, computed in parallel, the same whatever
//    the threads. This is the path of training.
#include <algorithm>
#include <cmath>
#include <random>

#include "core/thread_pool.h"
#include "elementwise.h"
#include "gradient.h"
#include "infer_util.h"
#include "kiln/random.hpp"

namespace kiln::ops {
namespace {

constexpr double kDefaultRatio = 0.5;

inline constexpr DType kBoolDType[] = {DType::kBool};

// Throws unless input i is a single value.
void require_scalar(const InferContext& ctx, int i) {
  const Shape& s = ctx.shape(i);
  KILN_CHECK(s.numel() == 1 || !s.is_known(), ErrorCode::kShapeMismatch, ctx.input_label(i),
             ": expected a scalar (one element), got shape ", s);
}

double read_ratio(const Tensor& ratio, const std::string& label) {
  const double r = ratio.item();
  KILN_CHECK(r >= 0 && r < 1, ErrorCode::kInvalidArgument, label, ": expected a ratio in [0, 1), got ", r);
  return r;
}

std::vector<TensorInfo> infer_dropout(InferContext& ctx) {
  const int outputs = ctx.num_outputs_requested() < 0 ? 1 : ctx.num_outputs_requested();
  KILN_CHECK(outputs == 1 || outputs == 2, ErrorCode::kInvalidArgument, "expected 1 to 2 outputs, got ",
             outputs);
  require_dtype(ctx, 0, kFloatDTypes);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, kFloatDTypes);
    require_scalar(ctx, 1);
    if (ctx.has_value(1)) read_ratio(ctx.value(1), ctx.input_label(1));
  }
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, kBoolDType);
    require_scalar(ctx, 2);
  }
  std::vector<TensorInfo> out{ctx.input(0)};
  if (outputs == 2) out.push_back(TensorInfo{DType::kBool, ctx.shape(0)});
  return out;
}

// numpy's legacy random_sample: 53 random bits from two 32-bit draws.
double next_uniform(std::mt19937& gen) {
  const uint32_t a = gen() >> 5, b = gen() >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
}

// Writes out[i] = in[i] * scale where keep(i), else 0, and the mask.
template <class T, class Keep>
void apply_mask(const Tensor& x, Tensor& y, bool* mask, double ratio, int64_t begin, int64_t end, Keep keep) {
  using C = compute_t<T>;
  const T* in = x.data<T>();
  T* out = y.data<T>();
  const C scale = static_cast<C>(1.0 / (1.0 - ratio));
  for (int64_t i = begin; i < end; ++i) {
    const bool kept = keep(i);
    out[i] = convert_value<T>(kept ? static_cast<C>(in[i]) * scale : C(0));
    if (mask) mask[i] = kept;
  }
}

void dropout_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double ratio = ctx.has_input(1) ? read_ratio(ctx.input(1), "input 1 (ratio)") : kDefaultRatio;
  const bool training = ctx.has_input(2) && ctx.input(2).item() != 0;
  bool* mask = ctx.num_outputs() > 1 ? ctx.output(1).data<bool>() : nullptr;
  const int64_t n = x.numel();
  if (!training || ratio == 0) {
    ctx.output(0).copy_from(x);
    if (mask) std::fill(mask, mask + n, true);
    return;
  }
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      if (ctx.attrs.has("seed")) {
        std::mt19937 gen(static_cast<uint32_t>(ctx.attrs.get_int("seed")));
        apply_mask<T>(x, ctx.output(0), mask, ratio, 0, n,
                      [&](int64_t) { return next_uniform(gen) >= ratio; });
        return;
      }
      const uint64_t seed = ctx.call_seed ? *ctx.call_seed : random::next_seed();
      // bits / 2^32 >= ratio <=> bits >= ceil(ratio * 2^32), exactly (ratio < 1).
      const uint64_t threshold = static_cast<uint64_t>(std::ceil(ratio * 4294967296.0));
      parallel_for(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
        apply_mask<T>(x, ctx.output(0), mask, ratio, begin, end, [&](int64_t i) {
          return (random::counter_hash(seed, static_cast<uint64_t>(i)) & 0xFFFFFFFFull) >= threshold;
        });
      });
    }
  });
}

// Gradient rule: outside training mode Dropout is the identity; in training mode the gradient
// passes through the kept elements, scaled like them by 1 / (1 - ratio). Whether it trains is
// data (input 2), so the rule selects with Where rather than branching, and needs the mask.
void dropout_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  if (!ctx.has_input(2)) {
    ctx.set_input_grad(0, g);
    return;
  }
  KILN_CHECK(ctx.num_outputs() == 2, ErrorCode::kUnsupported,
             "the gradient of a Dropout with input 2 (training_mode) needs output 1 (mask); call it with 2 "
             "outputs");
  const DType dtype = ctx.input_info(0).dtype;
  const GradValue one = ctx.scalar(1, dtype);
  const GradValue ratio =
      ctx.has_input(1) ? ctx.op1("CastLike", {ctx.input(1), ctx.input(0)}) : ctx.scalar(kDefaultRatio, dtype);
  const GradValue training = ctx.op1("Reshape", {ctx.input(2), ctx.ints({})});
  const GradValue scale = ctx.op1("Where", {training, ctx.div(one, ctx.sub(one, ratio)), one});
  ctx.set_input_grad(0, ctx.op1("Where", {ctx.output(1), ctx.mul(g, scale), ctx.scalar(0, dtype)}));
}

KILN_REGISTER_OP(Dropout)
    .doc(
        "Identity unless training_mode is true; then zeroes each element with probability `ratio` "
        "(default 0.5) and scales the rest by 1 / (1 - ratio). `mask` marks the kept elements.")
    .input("data")
    .input("ratio", Arity::kOptional)
    .input("training_mode", Arity::kOptional)
    .output("output")
    .output("mask", Arity::kOptional)
    .optional_attr("seed", AttrType::kInt)
    .draws_random()
    .optional_attr("ratio", AttrType::kFloat,
                   [](const AttrValue&, const std::string& what) {
                     raise(ErrorCode::kUnsupported, what,
                           ": the ratio attribute of Dropout before opset 12 is input 1 (ratio) here");
                   })
    .infer(infer_dropout)
    .kernel(dropout_kernel)
    .gradient(dropout_gradient);

}  // namespace
}  // namespace kiln::ops
