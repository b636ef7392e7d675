// Unary elementwise math: sign and magnitude, exponentials and logarithms, rounding,
// trigonometric and hyperbolic functions, Erf, logical Not, and the IsNaN / IsInf tests.
// Y has X's shape; the 16-bit floats are computed in float.
#include <cmath>
#include <type_traits>

#include "attr_validators.h"
#include "gradient.h"
#include "unary_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kBoolOnly[] = {DType::kBool};

// -x; integers negate through their unsigned type so the most negative value wraps to itself
// (as numpy does) instead of overflowing.
template <class C>
C negate(C x) {
  if constexpr (std::is_integral_v<C>) {
    return static_cast<C>(-static_cast<std::make_unsigned_t<C>>(x));
  } else {
    return -x;
  }
}

struct AbsFn {
  template <class C>
  C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>) {
      return std::fabs(x);
    } else {
      return is_negative(x) ? negate(x) : x;
    }
  }
};

// -1, 0 or 1; NaN stays NaN.
struct SignFn {
  template <class C>
  C operator()(C x) const {
    if (x > C(0)) return C(1);
    if (is_negative(x)) return C(-1);
    return x;
  }
};

// Y = f(X) for a floating X, with a bool Y.
template <class F>
KernelFn predicate_kernel(F f) {
  return [f](KernelContext& ctx) {
    dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_floating_point_v<compute_t<T>>) {
        map_unary<T, bool>(ctx.input(0), ctx.output(0), f);
      } else {
        raise(ErrorCode::kInternal, "a floating-point predicate got ", dtype_name(dtype_of<T>));
      }
    });
  };
}

std::vector<TensorInfo> infer_predicate(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  return {TensorInfo{DType::kBool, ctx.shape(0)}};
}

// Gradient rules: dx = dy * f'(x), f' built from the input x, the output y and constants.
template <class Derivative>
GradientFn chain_rule(Derivative derivative) {
  return [derivative](GradientContext& ctx) {
    const GradValue x = ctx.input(0), y = ctx.output(0);
    const auto c = [&ctx](double v) { return ctx.scalar(v, ctx.input_info(0).dtype); };
    ctx.set_input_grad(0, ctx.mul(ctx.output_grad(0), derivative(ctx, x, y, c)));
  };
}

// Piecewise constant (Sign, Floor, Ceil, Round): the gradient is zero wherever it exists.
void zero_gradient(GradientContext&) {}

void neg_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.neg(ctx.output_grad(0)));
}

// 1 / sqrt(1 - x^2), the derivative of asin (and, negated, of acos).
template <class C>
GradValue inverse_sine_derivative(GradientContext& ctx, GradValue x, C c) {
  return ctx.div(c(1), ctx.op1("Sqrt", {ctx.sub(c(1), ctx.mul(x, x))}));
}

const GradientFn kAbsGradient =
    chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto) { return ctx.op1("Sign", {x}); });
const GradientFn kExpGradient = chain_rule([](GradientContext&, GradValue, GradValue y, auto) { return y; });
const GradientFn kLogGradient =
    chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) { return ctx.div(c(1), x); });
const GradientFn kSqrtGradient =
    chain_rule([](GradientContext& ctx, GradValue, GradValue y, auto c) { return ctx.div(c(0.5), y); });
const GradientFn kReciprocalGradient =
    chain_rule([](GradientContext& ctx, GradValue, GradValue y, auto) { return ctx.neg(ctx.mul(y, y)); });
const GradientFn kSinGradient =
    chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto) { return ctx.op1("Cos", {x}); });
const GradientFn kCosGradient = chain_rule(
    [](GradientContext& ctx, GradValue x, GradValue, auto) { return ctx.neg(ctx.op1("Sin", {x})); });
const GradientFn kTanGradient = chain_rule(
    [](GradientContext& ctx, GradValue, GradValue y, auto c) { return ctx.add(c(1), ctx.mul(y, y)); });
const GradientFn kAsinGradient = chain_rule(
    [](GradientContext& ctx, GradValue x, GradValue, auto c) { return inverse_sine_derivative(ctx, x, c); });
const GradientFn kAcosGradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.neg(inverse_sine_derivative(ctx, x, c));
});
const GradientFn kAtanGradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.div(c(1), ctx.add(c(1), ctx.mul(x, x)));
});
const GradientFn kSinhGradient =
    chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto) { return ctx.op1("Cosh", {x}); });
const GradientFn kCoshGradient =
    chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto) { return ctx.op1("Sinh", {x}); });
const GradientFn kAsinhGradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.div(c(1), ctx.op1("Sqrt", {ctx.add(ctx.mul(x, x), c(1))}));
});
const GradientFn kAcoshGradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.div(c(1), ctx.op1("Sqrt", {ctx.sub(ctx.mul(x, x), c(1))}));
});
const GradientFn kAtanhGradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.div(c(1), ctx.sub(c(1), ctx.mul(x, x)));
});
const GradientFn kExpm1Gradient =
    chain_rule([](GradientContext& ctx, GradValue, GradValue y, auto c) { return ctx.add(y, c(1)); });
const GradientFn kLog1pGradient = chain_rule(
    [](GradientContext& ctx, GradValue x, GradValue, auto c) { return ctx.div(c(1), ctx.add(x, c(1))); });
const GradientFn kLog2Gradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.div(c(1.4426950408889634), x);  // 1 / (x ln 2)
});
const GradientFn kLog10Gradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.div(c(0.4342944819032518), x);  // 1 / (x ln 10)
});
const GradientFn kCbrtGradient = chain_rule([](GradientContext& ctx, GradValue, GradValue y, auto c) {
  return ctx.div(c(1), ctx.mul(c(3), ctx.mul(y, y)));
});
// d erf(x) = 2 / sqrt(pi) * exp(-x^2).
const GradientFn kErfGradient = chain_rule([](GradientContext& ctx, GradValue x, GradValue, auto c) {
  return ctx.mul(c(1.1283791670955126), ctx.op1("Exp", {ctx.neg(ctx.mul(x, x))}));
});

// The many float -> float ops differ only in name, ONNX input/output names, function and
// gradient rule.
#define KILN_FLOAT_UNARY_OP(Name, In, Out, Doc, Gradient, ...) \
  KILN_REGISTER_OP(Name)                                       \
      .doc(Doc)                                                \
      .input(In)                                               \
      .output(Out)                                             \
      .elementwise()                                           \
      .infer(infer_unary<kFloatDTypes>)                        \
      .kernel(floating_kernel(__VA_ARGS__))                    \
      .gradient(Gradient)

KILN_REGISTER_OP(Abs)
    .doc("Y = |X|.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kNumericDTypes>)
    .kernel(numeric_kernel(AbsFn{}))
    .gradient(kAbsGradient);

KILN_REGISTER_OP(Neg)
    .doc("Y = -X; the most negative integer wraps to itself.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kSignedDTypes>)
    .kernel(numeric_kernel([](auto x) { return negate(x); }))
    .gradient(neg_gradient);

KILN_REGISTER_OP(Sign)
    .doc("-1, 0 or 1 by the sign of each element; NaN stays NaN.")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_unary<kNumericDTypes>)
    .kernel(numeric_kernel(SignFn{}))
    .gradient(zero_gradient);

KILN_FLOAT_UNARY_OP(Exp, "input", "output", "e ^ x.", kExpGradient, [](auto x) { return std::exp(x); });
KILN_FLOAT_UNARY_OP(Log, "input", "output", "The natural logarithm.", kLogGradient,
                    [](auto x) { return std::log(x); });
KILN_FLOAT_UNARY_OP(Sqrt, "X", "Y", "The square root; NaN for negative x.", kSqrtGradient,
                    [](auto x) { return std::sqrt(x); });
KILN_FLOAT_UNARY_OP(Reciprocal, "X", "Y", "1 / x.", kReciprocalGradient,
                    [](auto x) { return decltype(x)(1) / x; });
KILN_FLOAT_UNARY_OP(Floor, "X", "Y", "The largest integer <= x.", zero_gradient,
                    [](auto x) { return std::floor(x); });
KILN_FLOAT_UNARY_OP(Ceil, "X", "Y", "The smallest integer >= x.", zero_gradient,
                    [](auto x) { return std::ceil(x); });
// nearbyint rounds in the default mode, to nearest with ties to even, as ONNX asks.
KILN_FLOAT_UNARY_OP(Round, "X", "Y", "Rounds to the nearest integer, halves to even.", zero_gradient,
                    [](auto x) { return std::nearbyint(x); });
// Not in ONNX: MXNet's rounding towards zero (trunc, fix) and to nearest with halves away from zero
// (round), and the functions that keep their precision where the composition would lose it.
KILN_FLOAT_UNARY_OP(Trunc, "X", "Y", "Rounds towards zero.", zero_gradient,
                    [](auto x) { return std::trunc(x); });
KILN_FLOAT_UNARY_OP(RoundHalfAway, "X", "Y", "Rounds to the nearest integer, halves away from zero.",
                    zero_gradient, [](auto x) { return std::round(x); });
KILN_FLOAT_UNARY_OP(Expm1, "X", "Y", "e ^ x - 1, accurate for x near 0.", kExpm1Gradient,
                    [](auto x) { return std::expm1(x); });
KILN_FLOAT_UNARY_OP(Log1p, "X", "Y", "ln(1 + x), accurate for x near 0.", kLog1pGradient,
                    [](auto x) { return std::log1p(x); });
KILN_FLOAT_UNARY_OP(Log2, "X", "Y", "The base-2 logarithm (exact at powers of 2).", kLog2Gradient,
                    [](auto x) { return std::log2(x); });
KILN_FLOAT_UNARY_OP(Log10, "X", "Y", "The base-10 logarithm.", kLog10Gradient,
                    [](auto x) { return std::log10(x); });
KILN_FLOAT_UNARY_OP(Cbrt, "X", "Y", "The cube root (negative for negative x).", kCbrtGradient,
                    [](auto x) { return std::cbrt(x); });
KILN_FLOAT_UNARY_OP(Sin, "input", "output", "The sine (radians).", kSinGradient,
                    [](auto x) { return std::sin(x); });
KILN_FLOAT_UNARY_OP(Cos, "input", "output", "The cosine (radians).", kCosGradient,
                    [](auto x) { return std::cos(x); });
KILN_FLOAT_UNARY_OP(Tan, "input", "output", "The tangent (radians).", kTanGradient,
                    [](auto x) { return std::tan(x); });
KILN_FLOAT_UNARY_OP(Asin, "input", "output", "The arcsine; NaN outside [-1, 1].", kAsinGradient,
                    [](auto x) { return std::asin(x); });
KILN_FLOAT_UNARY_OP(Acos, "input", "output", "The arccosine; NaN outside [-1, 1].", kAcosGradient,
                    [](auto x) { return std::acos(x); });
KILN_FLOAT_UNARY_OP(Atan, "input", "output", "The arctangent.", kAtanGradient,
                    [](auto x) { return std::atan(x); });
KILN_FLOAT_UNARY_OP(Sinh, "input", "output", "The hyperbolic sine.", kSinhGradient,
                    [](auto x) { return std::sinh(x); });
KILN_FLOAT_UNARY_OP(Cosh, "input", "output", "The hyperbolic cosine.", kCoshGradient,
                    [](auto x) { return std::cosh(x); });
KILN_FLOAT_UNARY_OP(Asinh, "input", "output", "The inverse hyperbolic sine.", kAsinhGradient,
                    [](auto x) { return std::asinh(x); });
KILN_FLOAT_UNARY_OP(Acosh, "input", "output", "The inverse hyperbolic cosine; NaN below 1.", kAcoshGradient,
                    [](auto x) { return std::acosh(x); });
KILN_FLOAT_UNARY_OP(Atanh, "input", "output", "The inverse hyperbolic tangent; NaN outside [-1, 1].",
                    kAtanhGradient, [](auto x) { return std::atanh(x); });
KILN_FLOAT_UNARY_OP(Erf, "input", "output", "The Gauss error function.", kErfGradient,
                    [](auto x) { return std::erf(x); });

#undef KILN_FLOAT_UNARY_OP

KILN_REGISTER_OP(Not)
    .doc("Logical negation of a bool tensor.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kBoolOnly>)
    .kernel([](KernelContext& ctx) {
      map_unary<bool, bool>(ctx.input(0), ctx.output(0), [](bool x) { return !x; });
    });

KILN_REGISTER_OP(IsNaN)
    .doc("A bool tensor: true where X is NaN.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_predicate)
    .kernel(predicate_kernel([](auto x) { return std::isnan(x); }));

KILN_REGISTER_OP(IsInf)
    .doc("A bool tensor: true where X is +inf (if detect_positive) or -inf (if detect_negative).")
    .input("X")
    .output("Y")
    .attr("detect_negative", AttrType::kInt, 1, require_flag)
    .attr("detect_positive", AttrType::kInt, 1, require_flag)
    .elementwise()
    .infer(infer_predicate)
    .kernel([](KernelContext& ctx) {
      const bool negative = ctx.attrs.get_int("detect_negative") != 0;
      const bool positive = ctx.attrs.get_int("detect_positive") != 0;
      const auto is_detected_inf = [negative, positive](auto x) {
        return std::isinf(x) && (x > 0 ? positive : negative);
      };
      predicate_kernel(is_detected_inf)(ctx);
    });

}  // namespace
}  // namespace kiln::ops
