// Activation functions: the sigmoid and tanh squashes, the ReLU family (Relu, LeakyRelu, PRelu,
// Elu, Selu, Celu, ThresholdedRelu), smooth gates (Gelu, Softplus, Softsign, Mish, Swish, and
// the gated SwiGLU), the hard piecewise-linear ones (HardSigmoid, HardSwish), Shrink and Clip. Y always has
// X's shape; the 16-bit floats are computed in float. NaN inputs stay NaN wherever ONNX's reference does so.
#include <cmath>
#include <limits>
#include <type_traits>

#include "gradient.h"
#include "unary_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kPReluDTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                         DType::kBFloat16, DType::kInt32,   DType::kInt64};
// ONNX's Shrink has no bfloat16.
inline constexpr DType kShrinkDTypes[] = {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8,
                                          DType::kUInt8,   DType::kInt16,   DType::kUInt16,  DType::kInt32,
                                          DType::kUInt32,  DType::kInt64,   DType::kUInt64};

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

// Gradient rules. Each builds dx from the output gradient g, the input x and the output y; the
// piecewise ones select with Where on comparisons of x.
struct ActivationGrad {
  GradientContext& ctx;
  GradValue g, x, y;

  explicit ActivationGrad(GradientContext& context)
      : ctx(context), g(context.output_grad(0)), x(context.input(0)), y(context.output(0)) {}
  GradValue c(double v) { return ctx.scalar(v, ctx.input_info(0).dtype); }
  GradValue attr(const char* name) { return c(ctx.attrs().get_float(name)); }
  GradValue where(GradValue cond, GradValue a, GradValue b) { return ctx.op1("Where", {cond, a, b}); }
  GradValue less(GradValue a, GradValue b) { return ctx.op1("Less", {a, b}); }
  GradValue greater(GradValue a, GradValue b) { return ctx.op1("Greater", {a, b}); }
  // dx = g * dy/dx.
  void set(GradValue derivative) { ctx.set_input_grad(0, ctx.mul(g, derivative)); }
  void set_masked(GradValue pass) { ctx.set_input_grad(0, where(pass, g, c(0))); }
};

void sigmoid_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set(ctx.mul(a.y, ctx.sub(a.c(1), a.y)));
}

void tanh_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set(ctx.sub(a.c(1), ctx.mul(a.y, a.y)));
}

void relu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set_masked(a.greater(a.x, a.c(0)));
}

void leaky_relu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set(a.where(a.less(a.x, a.c(0)), a.attr("alpha"), a.c(1)));
}

void prelu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue negative = a.less(a.x, a.c(0));
  if (ctx.needs_input_grad(0)) a.set(a.where(negative, ctx.input(1), a.c(1)));
  if (ctx.needs_input_grad(1))
    ctx.set_input_grad(1, ctx.sum_to_input(1, a.where(negative, ctx.mul(a.g, a.x), a.c(0))));
}

// For x < 0, y = alpha * (e^x - 1), so dy/dx = y + alpha.
void elu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set(a.where(a.less(a.x, a.c(0)), ctx.add(a.y, a.attr("alpha")), a.c(1)));
}

// For x <= 0, y = gamma * alpha * (e^x - 1), so dy/dx = y + gamma * alpha.
void selu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const double alpha = ctx.attrs().get_float("alpha"), gamma = ctx.attrs().get_float("gamma");
  a.set(a.where(a.greater(a.x, a.c(0)), a.c(gamma), ctx.add(a.y, a.c(gamma * alpha))));
}

void celu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue e = ctx.op1("Exp", {ctx.div(a.x, a.attr("alpha"))});
  a.set(a.where(a.greater(a.x, a.c(0)), a.c(1), e));
}

void gelu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue x2 = ctx.mul(a.x, a.x);
  if (ctx.attrs().get_string("approximate") == "tanh") {
    // y = x/2 (1 + t), t = tanh(k (x + 0.044715 x^3)):
    // dy/dx = (1 + t)/2 + x/2 (1 - t^2) k (1 + 3 * 0.044715 x^2).
    const double k = 0.79788456080286535588;
    const GradValue inner = ctx.mul(a.c(k), ctx.add(a.x, ctx.mul(a.c(0.044715), ctx.mul(x2, a.x))));
    const GradValue t = ctx.op1("Tanh", {inner});
    const GradValue dinner = ctx.mul(a.c(k), ctx.add(a.c(1), ctx.mul(a.c(3 * 0.044715), x2)));
    const GradValue sech2 = ctx.sub(a.c(1), ctx.mul(t, t));
    a.set(ctx.add(ctx.mul(a.c(0.5), ctx.add(a.c(1), t)),
                  ctx.mul(ctx.mul(a.c(0.5), a.x), ctx.mul(sech2, dinner))));
  } else {
    // dy/dx = Phi(x) + x phi(x).
    const GradValue cdf =
        ctx.mul(a.c(0.5), ctx.add(a.c(1), ctx.op1("Erf", {ctx.mul(a.x, a.c(0.70710678118654752440))})));
    const GradValue pdf = ctx.mul(a.c(0.39894228040143267794), ctx.op1("Exp", {ctx.mul(a.c(-0.5), x2)}));
    a.set(ctx.add(cdf, ctx.mul(a.x, pdf)));
  }
}

void softplus_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set(ctx.op1("Sigmoid", {a.x}));
}

// d(x / (1 + |x|)) = 1 / (1 + |x|)^2.
void softsign_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue d = ctx.add(a.c(1), ctx.op1("Abs", {a.x}));
  a.set(ctx.div(a.c(1), ctx.mul(d, d)));
}

// y = x tanh(sp(x)), sp = softplus: dy/dx = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2).
void mish_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue t = ctx.op1("Tanh", {ctx.op1("Softplus", {a.x})});
  const GradValue sech2 = ctx.sub(a.c(1), ctx.mul(t, t));
  a.set(ctx.add(t, ctx.mul(ctx.mul(a.x, ctx.op1("Sigmoid", {a.x})), sech2)));
}

// y = x s, s = sigmoid(alpha x): dy/dx = s (1 + alpha x (1 - s)).
GradValue swish_derivative(GradientContext& ctx, const GradValue& x, double alpha) {
  const DType dtype = ctx.input_info(0).dtype;
  const GradValue ax = ctx.mul(ctx.scalar(alpha, dtype), x);
  const GradValue s = ctx.op1("Sigmoid", {ax});
  const GradValue one = ctx.scalar(1, dtype);
  return ctx.mul(s, ctx.add(one, ctx.mul(ax, ctx.sub(one, s))));
}

void swish_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set(swish_derivative(ctx, a.x, ctx.attrs().get_float("alpha")));
}

// Y = swish(A) B: dA = dY B swish'(A), dB = dY swish(A).
void swiglu_gradient(GradientContext& ctx) {
  const double alpha = ctx.attrs().get_float("alpha");
  const GradValue g = ctx.output_grad(0);
  ctx.set_input_grad(0, ctx.mul(ctx.mul(g, ctx.input(1)), swish_derivative(ctx, ctx.input(0), alpha)));
  ctx.set_input_grad(1, ctx.mul(g, ctx.op1("Swish", {ctx.input(0)}, {{"alpha", alpha}})));
}

void hard_sigmoid_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue v = ctx.add(ctx.mul(a.attr("alpha"), a.x), a.attr("beta"));
  const GradValue inside = ctx.op1("And", {a.greater(v, a.c(0)), a.less(v, a.c(1))});
  a.set(a.where(inside, a.attr("alpha"), a.c(0)));
}

// y = x clamp(x / 6 + 1/2, 0, 1): 0 below -3, 1 above 3, x / 3 + 1/2 between.
void hard_swish_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue middle = ctx.add(ctx.div(a.x, a.c(3)), a.c(0.5));
  a.set(a.where(a.less(a.x, a.c(-3)), a.c(0), a.where(a.greater(a.x, a.c(3)), a.c(1), middle)));
}

void thresholded_relu_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  a.set_masked(a.greater(a.x, a.attr("alpha")));
}

void shrink_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const double lambd = ctx.attrs().get_float("lambd");
  a.set_masked(ctx.op1("Or", {a.less(a.x, a.c(-lambd)), a.greater(a.x, a.c(lambd))}));
}

// X passes where min <= x <= max; a bound gets the gradient of the elements it clipped.
void clip_gradient(GradientContext& ctx) {
  ActivationGrad a(ctx);
  const GradValue below = ctx.has_input(1) ? a.less(a.x, ctx.input(1)) : GradValue{};
  const GradValue above = ctx.has_input(2) ? a.greater(a.x, ctx.input(2)) : GradValue{};
  GradValue clipped = below.defined() ? below : above;
  if (below.defined() && above.defined()) clipped = ctx.op1("Or", {below, above});
  if (!clipped.defined()) {
    ctx.set_input_grad(0, a.g);
    return;
  }
  ctx.set_input_grad(0, a.where(clipped, a.c(0), a.g));
  // An element above max is max even when it is also below min (min > max), so `below` only
  // counts where the element is not above.
  if (ctx.needs_input_grad(1)) {
    const GradValue own = above.defined() ? ctx.op1("And", {below, ctx.op1("Not", {above})}) : below;
    ctx.set_input_grad(1, ctx.sum_to_input(1, a.where(own, a.g, a.c(0))));
  }
  if (ctx.needs_input_grad(2)) ctx.set_input_grad(2, ctx.sum_to_input(2, a.where(above, a.g, a.c(0))));
}

KILN_REGISTER_OP(Sigmoid)
    .doc("1 / (1 + e^-x).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return sigmoid(x); }))
    .gradient(sigmoid_gradient);

KILN_REGISTER_OP(Tanh)
    .doc("The hyperbolic tangent.")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return std::tanh(x); }))
    .gradient(tanh_gradient);

KILN_REGISTER_OP(Relu)
    .doc("max(x, 0).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kSignedDTypes>)
    .kernel(numeric_kernel([](auto x) { return is_negative(x) ? decltype(x)(0) : x; }))
    .gradient(relu_gradient);

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
    })
    .gradient(leaky_relu_gradient);

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
    })
    .gradient(prelu_gradient);

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
    })
    .gradient(elu_gradient);

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
    })
    .gradient(selu_gradient);

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
    })
    .gradient(celu_gradient);

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
    })
    .gradient(gelu_gradient);

KILN_REGISTER_OP(Softplus)
    .doc("log(1 + e^x).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return softplus(x); }))
    .gradient(softplus_gradient);

KILN_REGISTER_OP(Softsign)
    .doc("x / (1 + |x|).")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return x / (decltype(x)(1) + std::fabs(x)); }))
    .gradient(softsign_gradient);

KILN_REGISTER_OP(Mish)
    .doc("x * tanh(softplus(x)).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) { return x * std::tanh(softplus(x)); }))
    .gradient(mish_gradient);

KILN_REGISTER_OP(Swish)
    .doc("x * sigmoid(alpha * x) (SiLU for alpha = 1).")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.0)
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel([](KernelContext& ctx) {
      const double alpha = ctx.attrs.get_float("alpha");
      map_floating(ctx, [alpha](auto x) {
        using C = decltype(x);
        return x * sigmoid(static_cast<C>(alpha) * x);
      });
    })
    .gradient(swish_gradient);

// Computed in float for the 16-bit floats and rounded once, as Swish then Mul would not.
void swiglu_kernel(KernelContext& ctx) {
  const double alpha = ctx.attrs.get_float("alpha");
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  Tensor& y = ctx.output(0);
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      using C = compute_t<T>;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      T* py = y.data<T>();
      parallel_for(0, y.numel(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const auto gate = static_cast<C>(pa[i]);
          py[i] = convert_value<T>(gate * sigmoid(static_cast<C>(alpha) * gate) * static_cast<C>(pb[i]));
        }
      });
    }
  });
}

KILN_REGISTER_OP(SwiGLU)
    .doc("Y = A * sigmoid(alpha * A) * B: Swish on the gate A times the value B, both of one shape.")
    .input("A")
    .input("B")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 1.0)
    .elementwise()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      require_same_dtype(ctx, 0, 1);
      const Shape& a = ctx.shape(0);
      const Shape& b = ctx.shape(1);
      bool same = a.ndim() == b.ndim();
      for (int i = 0; same && i < a.ndim(); ++i)
        same = a[i] == b[i] || a[i] == Shape::kUnknown || b[i] == Shape::kUnknown;
      KILN_CHECK(same, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected the shape of ",
                 ctx.input_label(0), ", ", a, " (SwiGLU does not broadcast), got ", b);
      return std::vector<TensorInfo>{ctx.input(0)};
    })
    .kernel(swiglu_kernel)
    .gradient(swiglu_gradient);

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
    })
    .gradient(hard_sigmoid_gradient);

KILN_REGISTER_OP(HardSwish)
    .doc("x * max(0, min(1, x / 6 + 0.5)).")
    .input("X")
    .output("Y")
    .elementwise()
    .infer(infer_unary<kFloatDTypes>)
    .kernel(floating_kernel([](auto x) {
      using C = decltype(x);
      return x * clamp_keep_nan(x / C(6) + C(0.5), C(0), C(1));
    }))
    .gradient(hard_swish_gradient);

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
    })
    .gradient(thresholded_relu_gradient);

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
    })
    .gradient(shrink_gradient);

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
    .kernel(clip_kernel)
    .gradient(clip_gradient);

}  // namespace
}  // namespace kiln::ops
