// Unary elementwise math: sign and magnitude, exponentials and logarithms, rounding,
// trigonometric and hyperbolic functions, Erf, logical Not, and the IsNaN / IsInf tests.
// Y has X's shape; the 16-bit floats are computed in float.
#include <cmath>
#include <type_traits>

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

void require_flag(const AttrValue& v, const std::string& what) {
  const int64_t flag = std::get<int64_t>(v.variant());
  KILN_CHECK(flag == 0 || flag == 1, ErrorCode::kInvalidArgument, what, ": expected 0 or 1, got ", flag);
}

// The many float -> float ops differ only in name, ONNX input/output names and function.
#define KILN_FLOAT_UNARY_OP(Name, In, Out, Doc, ...) \
  KILN_REGISTER_OP(Name)                             \
      .doc(Doc)                                      \
      .input(In)                                     \
      .output(Out)                                   \
      .elementwise()                                 \
      .infer(infer_unary<kFloatDTypes>)              \
      .kernel(floating_kernel(__VA_ARGS__))

KILN_REGISTER_OP(Abs)
    .doc("Y = |X|.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kNumericDTypes>)
    .kernel(numeric_kernel(AbsFn{}));

KILN_REGISTER_OP(Neg)
    .doc("Y = -X; the most negative integer wraps to itself.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kSignedDTypes>)
    .kernel(numeric_kernel([](auto x) { return negate(x); }));

KILN_REGISTER_OP(Sign)
    .doc("-1, 0 or 1 by the sign of each element; NaN stays NaN.")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_unary<kNumericDTypes>)
    .kernel(numeric_kernel(SignFn{}));

KILN_FLOAT_UNARY_OP(Exp, "input", "output", "e ^ x.", [](auto x) { return std::exp(x); });
KILN_FLOAT_UNARY_OP(Log, "input", "output", "The natural logarithm.", [](auto x) { return std::log(x); });
KILN_FLOAT_UNARY_OP(Sqrt, "X", "Y", "The square root; NaN for negative x.",
                    [](auto x) { return std::sqrt(x); });
KILN_FLOAT_UNARY_OP(Reciprocal, "X", "Y", "1 / x.", [](auto x) { return decltype(x)(1) / x; });
KILN_FLOAT_UNARY_OP(Floor, "X", "Y", "The largest integer <= x.", [](auto x) { return std::floor(x); });
KILN_FLOAT_UNARY_OP(Ceil, "X", "Y", "The smallest integer >= x.", [](auto x) { return std::ceil(x); });
// nearbyint rounds in the default mode, to nearest with ties to even, as ONNX asks.
KILN_FLOAT_UNARY_OP(Round, "X", "Y", "Rounds to the nearest integer, halves to even.",
                    [](auto x) { return std::nearbyint(x); });
KILN_FLOAT_UNARY_OP(Sin, "input", "output", "The sine (radians).", [](auto x) { return std::sin(x); });
KILN_FLOAT_UNARY_OP(Cos, "input", "output", "The cosine (radians).", [](auto x) { return std::cos(x); });
KILN_FLOAT_UNARY_OP(Tan, "input", "output", "The tangent (radians).", [](auto x) { return std::tan(x); });
KILN_FLOAT_UNARY_OP(Asin, "input", "output", "The arcsine; NaN outside [-1, 1].",
                    [](auto x) { return std::asin(x); });
KILN_FLOAT_UNARY_OP(Acos, "input", "output", "The arccosine; NaN outside [-1, 1].",
                    [](auto x) { return std::acos(x); });
KILN_FLOAT_UNARY_OP(Atan, "input", "output", "The arctangent.", [](auto x) { return std::atan(x); });
KILN_FLOAT_UNARY_OP(Sinh, "input", "output", "The hyperbolic sine.", [](auto x) { return std::sinh(x); });
KILN_FLOAT_UNARY_OP(Cosh, "input", "output", "The hyperbolic cosine.", [](auto x) { return std::cosh(x); });
KILN_FLOAT_UNARY_OP(Asinh, "input", "output", "The inverse hyperbolic sine.",
                    [](auto x) { return std::asinh(x); });
KILN_FLOAT_UNARY_OP(Acosh, "input", "output", "The inverse hyperbolic cosine; NaN below 1.",
                    [](auto x) { return std::acosh(x); });
KILN_FLOAT_UNARY_OP(Atanh, "input", "output", "The inverse hyperbolic tangent; NaN outside [-1, 1].",
                    [](auto x) { return std::atanh(x); });
KILN_FLOAT_UNARY_OP(Erf, "input", "output", "The Gauss error function.", [](auto x) { return std::erf(x); });

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
