// Activation functions: the sigmoid and tanh squashes, the ReLU family (Relu, LeakyRelu, PRelu,
// Elu, Selu, Celu, ThresholdedRelu), smooth gates (Gelu, Softplus, Softsign, Mish), the hard
// piecewise-linear ones (HardSigmoid, HardSwish), Shrink and Clip. Y always has X's shape; the
// 16-bit floats are computed in float. NaN inputs stay NaN wherever ONNX's reference does so.
#include <cmath>
#include <limits>
#include <type_traits>

#include "unary_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kPReluDTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                         DType::kBFloat16, DType::kInt32,   DType::kInt64};
// ONNX's Shrink has no bfloat16.
inline constexpr DType kShrinkDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8,
                                          DType::kUInt8,   DType::kInt32,   DType::kInt64};

// 1 / (1 + e^-x), arranged so that e^x never overflows.
template <class C>
C sigmoid(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  const C e = std::exp(x);
  return e / (C(1) + e);
}

// log(1 + e^x), arranged so that e^x never overflows.
template <class C>
C softplus(C x) {
  return x > C(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

void require_nonzero(const AttrValue& v, const std::string& what) {
  const double value = std::get<double>(v.variant());
  KILN_CHECK(value != 0, ErrorCode::kInvalidArgument, what, ": expected a nonzero value, got ", value);
}

void require_gelu_approximation(const AttrValue& v, const std::string& what) {
  const std::string& mode = std::get<std::string>(v.variant());
  KILN_CHECK(mode == "none" || mode == "tanh", ErrorCode::kInvalidArgument, what,
             ": expected \"none\" or \"tanh\", got \"", mode, "\"");
}

// slope must broadcast to X's shape without changing it (unidirectional broadcasting).
std::vector<TensorInfo> infer_prelu(InferContext& ctx) {
  require_dtype(ctx, 0, kPReluDTypes);
  require_same_dtype(ctx, 0, 1);
  const Shape& x = ctx.shape(0);
  const Shape& slope = ctx.shape(1);
  bool fits = slope.ndim() <= x.ndim();
  for (int i = 0; fits && i < slope.ndim(); ++i) {
    const int64_t s = slope[i], d = x[x.ndim() - slope.ndim() + i];
    fits = s == 1 || s == d || s == Shape::kUnknown || d == Shape::kUnknown;
  }
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected a shape that broadcasts to ",
             ctx.input_label(0), "'s shape ", x, ", got shape ", slope);
  return {ctx.input(0)};
}

// min and max are optional scalars of X's dtype; a 1-element vector, as some exporters write, counts.
std::vector<TensorInfo> infer_clip(InferContext& ctx) {
  require_dtype(ctx, 0, kNumericDTypes);
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.shape(i);
    const bool scalar = s.ndim() == 0 || (s.ndim() == 1 && (s[0] == 1 || s[0] == Shape::kUnknown));
    KILN_CHECK(scalar, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected a scalar, got shape ", s);
  }
  return {ctx.input(0)};
}

// The bound in input i, or `otherwise` when that input is absent.
template <class T>
compute_t<T> clip_bound(const KernelContext& ctx, int i, compute_t<T> otherwise) {
  if (!ctx.has_input(i)) return otherwise;
  const Tensor& bound = ctx.input(i);
  KILN_CHECK(bound.numel() == 1, ErrorCode::kShapeMismatch, "input ", i, (i == 1 ? " (min)" : " (max)"),
             ": expected a scalar, got shape ", bound.shape());
  return static_cast<compute_t<T>>(bound.data<T>()[0]);
}

void clip_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    if constexpr (!std::is_same_v<T, bool>) {
      // Unbounded floats must keep +-inf, so they default to infinities rather than the extremes.
      constexpr bool has_inf = std::numeric_limits<C>::has_infinity;
      const C lo = clip_bound<T>(
          ctx, 1, has_inf ? -std::numeric_limits<C>::infinity() : std::numeric_limits<C>::lowest());
      const C hi =
          clip_bound<T>(ctx, 2, has_inf ? std::numeric_limits<C>::infinity() : std::numeric_limits<C>::max());
      // Applying min then max makes every element `max` when min > max, as ONNX specifies.
      map_unary<T, T>(ctx.input(0), ctx.output(0), [lo, hi](C x) {
        const C raised = x < lo ? lo : x;
        return raised > hi ? hi : raised;
      });
    } else {
      raise(ErrorCode::kInternal, "Clip got bool");
    }
  });
}

KILN_REGISTER_OP(Sigmoid)
    .doc("1 / (1 + e^-x).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return sigmoid(x); }));

KILN_REGISTER_OP(Tanh)
    .doc("The hyperbolic tangent.")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return std::tanh(x); }));

KILN_REGISTER_OP(Relu)
    .doc("max(x, 0).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kSignedDTypes>)
    .kernel(numeric_kernel([](auto x) { return is_negative(x) ? decltype(x)(0) : x; }));

KILN_REGISTER_OP(LeakyRelu)
    .doc("x for x >= 0, alpha * x below.")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 0.01)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha");
      map_floating(ctx, [alpha](auto x) {
        using C = decltype(x);
        return x < C(0) ? static_cast<C>(alpha) * x : x;
      });
    });

KILN_REGISTER_OP(PRelu)
    .doc("x for x >= 0, slope * x below; slope broadcasts to X's shape.")
    .input("X")
    .input("slope")
    .output("Y")
    .elementwise()
    .infer(infer_prelu)
    .kernel([](KernelContext& ctx) {
      dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          map_binary<T, T, T>(ctx.input(0), ctx.input(1), ctx.output(0),
                              [](auto x, auto slope) { return is_negative(x) ? slope * x : x; });
        } else {
          raise(ErrorCode::kInternal, "PRelu got bool");
        }
      });
    });

KILN_REGISTER_OP(Elu)
    .doc("x for x >= 0, alpha * (e^x - 1) below.")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.0)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha");
      map_floating(ctx, [alpha](auto x) {
        using C = decltype(x);
        return x < C(0) ? static_cast<C>(alpha) * std::expm1(x) : x;
      });
    });

KILN_REGISTER_OP(Selu)
    .doc("gamma * x for x > 0, gamma * alpha * (e^x - 1) otherwise.")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.67326319217681884765625)
    .attr("gamma", AttrType::kFloat, 1.05070102214813232421875)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha"), gamma = ctx.attrs.get_float("gamma");
      map_floating(ctx, [alpha, gamma](auto x) {
        using C = decltype(x);
        return static_cast<C>(gamma) * (x > C(0) ? x : static_cast<C>(alpha) * std::expm1(x));
      });
    });

// max(0, x) + min(0, alpha * (e^(x/alpha) - 1)) reduces to this for either sign of alpha.
KILN_REGISTER_OP(Celu)
    .doc("x for x > 0, alpha * (e^(x / alpha) - 1) otherwise; alpha must be nonzero.")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.0, require_nonzero)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha");
      map_floating(ctx, [alpha](auto x) {
        using C = decltype(x);
        const C a = static_cast<C>(alpha);
        return x > C(0) ? x : a * std::expm1(x / a);
      });
    });

KILN_REGISTER_OP(Gelu)
    .doc(
        "x * Phi(x) with Phi the standard normal CDF (approximate=\"none\"), or its tanh "
        "approximation 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))) (\"tanh\").")
    .input("X")
    .output("Y")
    .attr("approximate", AttrType::kString, "none", require_gelu_approximation)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      if (ctx.attrs.get_string("approximate") == "tanh") {
        map_floating(ctx, [](auto x) {
          using C = decltype(x);
          const C inner = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);  // sqrt(2 / pi)
          return C(0.5) * x * (C(1) + std::tanh(inner));
        });
      } else {
        map_floating(ctx, [](auto x) {
          using C = decltype(x);
          return C(0.5) * x * (C(1) + std::erf(x * C(0.70710678118654752440)));  // 1 / sqrt(2)
        });
      }
    });

KILN_REGISTER_OP(Softplus)
    .doc("log(1 + e^x).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return softplus(x); }));

KILN_REGISTER_OP(Softsign)
    .doc("x / (1 + |x|).")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return x / (decltype(x)(1) + std::fabs(x)); }));

KILN_REGISTER_OP(Mish)
    .doc("x * tanh(softplus(x)).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return x * std::tanh(softplus(x)); }));

KILN_REGISTER_OP(HardSigmoid)
    .doc("max(0, min(1, alpha * x + beta)).")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 0.2)
    .attr("beta", AttrType::kFloat, 0.5)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha"), beta = ctx.attrs.get_float("beta");
      map_floating(ctx, [alpha, beta](auto x) {
        using C = decltype(x);
        return clamp_keep_nan(static_cast<C>(alpha) * x + static_cast<C>(beta), C(0), C(1));
      });
    });

KILN_REGISTER_OP(HardSwish)
    .doc("x * max(0, min(1, x / 6 + 0.5)).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) {
      using C = decltype(x);
      return x * clamp_keep_nan(x / C(6) + C(0.5), C(0), C(1));
    }));

KILN_REGISTER_OP(ThresholdedRelu)
    .doc("x for x > alpha, 0 otherwise.")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.0)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha");
      map_floating(ctx, [alpha](auto x) {
        using C = decltype(x);
        return x > static_cast<C>(alpha) ? x : C(0);
      });
    });

// Integers are shrunk in double and truncated back, as ONNX's reference casts its result.
KILN_REGISTER_OP(Shrink)
    .doc("x + bias for x < -lambd, x - bias for x > lambd, 0 otherwise.")
    .input("input")
    .output("output")
    .attr("bias", AttrType::kFloat, 0.0)
    .attr("lambd", AttrType::kFloat, 0.5)
    .elementwise()
    .infer(infer_unary<kShrinkDTypes>)
    .kernel([](KernelContext& ctx) {
      const double bias = ctx.attrs.get_float("bias"), lambd = ctx.attrs.get_float("lambd");
      map_numeric(ctx, [bias, lambd](auto x) {
        using C = decltype(x);
        using W = std::conditional_t<std::is_floating_point_v<C>, C, double>;
        const W v = static_cast<W>(x), b = static_cast<W>(bias), l = static_cast<W>(lambd);
        const W shrunk = v < -l ? v + b : (v > l ? v - b : W(0));
        // Through int64, an integer result outside T's range wraps instead of being undefined.
        if constexpr (std::is_floating_point_v<C>) {
          return shrunk;
        } else {
          return static_cast<int64_t>(shrunk);
        }
      });
    });

KILN_REGISTER_OP(Clip)
    .doc(
        "Limits X to [min, max]; min and max are optional scalar inputs (absent: unbounded). "
        "When min > max every element becomes max.")
    .input("input")
    .input("min", Arity::kOptional)
    .input("max", Arity::kOptional)
    .output("output")
    .elementwise()
    .infer(infer_clip)
    .kernel(clip_kernel);

}  // namespace
}  // namespace kiln::ops
