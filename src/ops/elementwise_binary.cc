// Binary elementwise ops with numpy broadcasting: arithmetic, comparison and logic, and the
// variadic Max/Min/Sum/Mean. ONNX semantics: integer Div truncates toward zero; Mod follows the
// divisor's sign (Python's %) unless fmod=1 (C fmod, the dividend's sign).
#include <algorithm>
#include <array>
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <type_traits>

#include "elementwise.h"
#include "gradient.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorInfo> infer_broadcast(InferContext& ctx, DType out_dtype) {
  Shape shape = ctx.shape(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    // Equal shapes are the common case; the error label is only built when it may be needed.
    if (ctx.shape(i) != shape) shape = broadcast_shapes(shape, ctx.shape(i), ctx.input_label(i));
  }
  return {TensorInfo{out_dtype, shape}};
}

// Inputs of one numeric dtype; output of that dtype.
template <const auto& Allowed>
std::vector<TensorInfo> infer_arithmetic(InferContext& ctx) {
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    require_dtype(ctx, i, Allowed);
    if (i) require_same_dtype(ctx, 0, i);
  }
  return infer_broadcast(ctx, ctx.dtype(0));
}

// Inputs of one dtype; bool output.
template <const auto& Allowed>
std::vector<TensorInfo> infer_compare(InferContext& ctx) {
  require_dtype(ctx, 0, Allowed);
  require_same_dtype(ctx, 0, 1);
  return infer_broadcast(ctx, DType::kBool);
}

inline constexpr DType kBoolOnly[] = {DType::kBool};

// A kernel computing out = F(a, b) in the inputs' dtype.
template <class F>
KernelFn arithmetic_kernel(F f) {
  return [f](KernelContext& ctx) {
    dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>)
        map_binary<T, T, T>(ctx.input(0), ctx.input(1), ctx.output(0), f);
    });
  };
}

template <class F>
KernelFn compare_kernel(F f) {
  return [f](KernelContext& ctx) {
    dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      map_binary<T, T, bool>(ctx.input(0), ctx.input(1), ctx.output(0), f);
    });
  };
}

// Folds a variadic op pairwise: out = f(...f(f(x0, x1), x2)..., xn). The output is written
// before the third and later inputs are read, so these ops are not marked elementwise: an
// output must not share memory with an input.
template <class F>
KernelFn variadic_kernel(F f, bool mean = false) {
  return [f, mean](KernelContext& ctx) {
    Tensor& out = ctx.output(0);
    dispatch_dtype(out.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (!std::is_same_v<T, bool>) {
        Tensor acc = ctx.input(0);
        for (int i = 1; i < ctx.num_inputs(); ++i) {
          const Shape s = broadcast_shapes(acc.shape(), ctx.input(i).shape(), "variadic");
          Tensor next = (s == out.shape()) ? out : Tensor::empty(s, out.dtype());
          map_binary<T, T, T>(acc, ctx.input(i), next, f);
          acc = next;
        }
        if (mean) {
          const double n = ctx.num_inputs();
          const Tensor scale = Tensor::scalar(n, out.dtype());
          map_binary<T, T, T>(acc, scale, out, [](auto a, auto b) { return a / b; });
        } else if (acc.raw_data() != out.raw_data() || acc.shape() != out.shape()) {
          const Tensor zero = Tensor::scalar(0, out.dtype());
          map_binary<T, T, T>(acc, zero, out, [](auto a, auto) { return a; });  // broadcast into out
        }
      }
    });
  };
}

template <class T>
T int_div(T a, T b) {
  KILN_CHECK(b != 0, ErrorCode::kInvalidArgument, "integer division by zero");
  return static_cast<T>(a / b);
}

struct DivFn {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return int_div(a, b);
    } else {
      return a / b;
    }
  }
};

struct MaxFn {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a > b ? a : b;
  }
};

struct MinFn {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? a : b;
  }
};

// Integer +, - and * wrap around, as numpy's and ONNX Runtime's do: they are computed in the
// unsigned type at least as wide as int, where neither the overflow of a signed type nor that of
// two 16-bit values promoted to int is undefined behavior. Floats compute as they are.
template <class Op>
struct Wrapping {
  template <class T>
  T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      using U = std::make_unsigned_t<decltype(a + b)>;
      return static_cast<T>(Op{}(static_cast<U>(a), static_cast<U>(b)));
    } else {
      return Op{}(a, b);
    }
  }
};
const Wrapping<std::plus<>> kAdd;
const Wrapping<std::minus<>> kSub;
const Wrapping<std::multiplies<>> kMul;

// Gradient rules. g is the output's gradient, of the broadcast shape; sum_to_input folds it back
// to each input's shape.
void add_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_input_grad(i, ctx.sum_to_input(i, g));
}

void sub_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  ctx.set_input_grad(0, ctx.sum_to_input(0, g));
  if (ctx.needs_input_grad(1)) ctx.set_input_grad(1, ctx.sum_to_input(1, ctx.op1("Neg", {g})));
}

void mul_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, ctx.sum_to_input(0, ctx.op1("Mul", {g, ctx.input(1)})));
  if (ctx.needs_input_grad(1)) ctx.set_input_grad(1, ctx.sum_to_input(1, ctx.op1("Mul", {g, ctx.input(0)})));
}

// d(a / b) = da / b - db * (a / b) / b.
void div_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  const GradValue g_over_b = ctx.op1("Div", {g, ctx.input(1)});
  if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, ctx.sum_to_input(0, g_over_b));
  if (ctx.needs_input_grad(1)) {
    const GradValue db = ctx.op1("Neg", {ctx.op1("Mul", {g_over_b, ctx.output(0)})});
    ctx.set_input_grad(1, ctx.sum_to_input(1, db));
  }
}

// d(x ^ y) = dx * y * x ^ (y - 1) + dy * x ^ y * log(x). Y may have another dtype than X.
void pow_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  const DType dtype = ctx.input_info(0).dtype;
  if (ctx.needs_input_grad(0)) {
    const GradValue y = ctx.op1("CastLike", {ctx.input(1), ctx.input(0)});
    const GradValue x_pow = ctx.op1("Pow", {ctx.input(0), ctx.op1("Sub", {y, ctx.scalar(1, dtype)})});
    ctx.set_input_grad(0, ctx.sum_to_input(0, ctx.op1("Mul", {g, ctx.op1("Mul", {y, x_pow})})));
  }
  if (ctx.needs_input_grad(1)) {
    const GradValue dz = ctx.op1("Mul", {g, ctx.op1("Mul", {ctx.output(0), ctx.op1("Log", {ctx.input(0)})})});
    ctx.set_input_grad(1, ctx.op1("CastLike", {ctx.sum_to_input(1, dz), ctx.input(1)}));
  }
}

// The gradient goes to every input equal to the result (to each of them on a tie).
void select_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.needs_input_grad(i)) continue;
    const GradValue chosen = ctx.op1("Equal", {ctx.input(i), ctx.output(0)});
    const GradValue masked = ctx.op1("Where", {chosen, g, ctx.scalar(0, ctx.input_info(i).dtype)});
    ctx.set_input_grad(i, ctx.sum_to_input(i, masked));
  }
}

void mean_gradient(GradientContext& ctx) {
  const GradValue g =
      ctx.op1("Div", {ctx.output_grad(0), ctx.scalar(ctx.num_inputs(), ctx.output_info(0).dtype)});
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_input_grad(i, ctx.sum_to_input(i, g));
}

void where_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  const GradValue zero = ctx.scalar(0, ctx.output_info(0).dtype);
  if (ctx.needs_input_grad(1))
    ctx.set_input_grad(1, ctx.sum_to_input(1, ctx.op1("Where", {ctx.input(0), g, zero})));
  if (ctx.needs_input_grad(2))
    ctx.set_input_grad(2, ctx.sum_to_input(2, ctx.op1("Where", {ctx.input(0), zero, g})));
}

KILN_REGISTER_OP(Add)
    .doc("C = A + B, with numpy broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(arithmetic_kernel(kAdd))
    .gradient(add_gradient);

KILN_REGISTER_OP(Sub)
    .doc("C = A - B, with numpy broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(arithmetic_kernel(kSub))
    .gradient(sub_gradient);

KILN_REGISTER_OP(Mul)
    .doc("C = A * B, with numpy broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(arithmetic_kernel(kMul))
    .gradient(mul_gradient);

KILN_REGISTER_OP(Div)
    .doc("C = A / B, with numpy broadcasting; integer division truncates toward zero.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(arithmetic_kernel(DivFn{}))
    .gradient(div_gradient);

KILN_REGISTER_OP(Pow)
    .doc("Z = X ^ Y, with numpy broadcasting; Z has X's dtype, Y may be any numeric dtype.")
    .input("X")
    .input("Y")
    .output("Z")
    .elementwise()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kNumericDTypes);
      require_dtype(ctx, 1, kNumericDTypes);
      return infer_broadcast(ctx, ctx.dtype(0));
    })
    .kernel([](KernelContext& ctx) {
      // The power is taken in double whatever Y's dtype, so Y is widened once up front: one
      // kernel per X dtype instead of one per (X, Y) pair.
      const Tensor& y = ctx.input(1);
      const Tensor exponent = y.dtype() == DType::kFloat64 ? y : y.cast(DType::kFloat64);
      dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          map_binary<T, double, T>(ctx.input(0), exponent, ctx.output(0), [](auto x, double e) {
            return static_cast<compute_t<T>>(std::pow(static_cast<double>(x), e));
          });
        }
      });
    })
    .gradient(pow_gradient);

KILN_REGISTER_OP(Mod)
    .doc("C = A mod B. fmod=0: the result takes the divisor's sign (Python's %); fmod=1: C fmod.")
    .input("A")
    .input("B")
    .output("C")
    .attr("fmod", AttrType::kInt, 0)
    .elementwise()
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel([](KernelContext& ctx) {
      const bool c_fmod = ctx.attrs.get_int("fmod") == 1;
      dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (!std::is_same_v<T, bool>) {
          map_binary<T, T, T>(ctx.input(0), ctx.input(1), ctx.output(0), [c_fmod](auto a, auto b) {
            using C = decltype(a);
            C r;
            if constexpr (std::is_floating_point_v<C>) {
              r = std::fmod(a, b);
            } else {
              KILN_CHECK(b != 0, ErrorCode::kInvalidArgument, "integer modulo by zero");
              r = static_cast<C>(a % b);
            }
            if (!c_fmod && r != 0 && ((r < 0) != (b < 0))) r = static_cast<C>(r + b);
            return r;
          });
        }
      });
    });

KILN_REGISTER_OP(Max)
    .doc("Elementwise maximum of one or more inputs, with broadcasting; NaN wins.")
    .input("data_0", Arity::kVariadic)
    .output("max")
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(variadic_kernel(MaxFn{}))
    .gradient(select_gradient);

KILN_REGISTER_OP(Min)
    .doc("Elementwise minimum of one or more inputs, with broadcasting; NaN wins.")
    .input("data_0", Arity::kVariadic)
    .output("min")
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(variadic_kernel(MinFn{}))
    .gradient(select_gradient);

KILN_REGISTER_OP(Sum)
    .doc("Elementwise sum of one or more inputs, with broadcasting.")
    .input("data_0", Arity::kVariadic)
    .output("sum")
    .infer(infer_arithmetic<kNumericDTypes>)
    .kernel(variadic_kernel(kAdd))
    .gradient(add_gradient);

KILN_REGISTER_OP(Mean)
    .doc("Elementwise mean of one or more inputs, with broadcasting.")
    .input("data_0", Arity::kVariadic)
    .output("mean")
    .infer(infer_arithmetic<kFloatDTypes>)
    .kernel(variadic_kernel(kAdd, true))
    .gradient(mean_gradient);

KILN_REGISTER_OP(Equal)
    .moves_strings()
    .doc("C = (A == B), a bool tensor, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kComputeDTypes>)
    .kernel(compare_kernel([](auto a, auto b) { return a == b; }));

KILN_REGISTER_OP(Less)
    .doc("C = (A < B), a bool tensor, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kNumericDTypes>)
    .kernel(compare_kernel([](auto a, auto b) { return a < b; }));

KILN_REGISTER_OP(LessOrEqual)
    .doc("C = (A <= B), a bool tensor, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kNumericDTypes>)
    .kernel(compare_kernel([](auto a, auto b) { return a <= b; }));

KILN_REGISTER_OP(Greater)
    .doc("C = (A > B), a bool tensor, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kNumericDTypes>)
    .kernel(compare_kernel([](auto a, auto b) { return a > b; }));

KILN_REGISTER_OP(GreaterOrEqual)
    .doc("C = (A >= B), a bool tensor, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kNumericDTypes>)
    .kernel(compare_kernel([](auto a, auto b) { return a >= b; }));

KILN_REGISTER_OP(And)
    .doc("C = A and B for bool tensors, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kBoolOnly>)
    .kernel(compare_kernel([](auto a, auto b) { return a && b; }));

KILN_REGISTER_OP(Or)
    .doc("C = A or B for bool tensors, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kBoolOnly>)
    .kernel(compare_kernel([](auto a, auto b) { return a || b; }));

KILN_REGISTER_OP(Xor)
    .doc("C = A xor B for bool tensors, with broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_compare<kBoolOnly>)
    .kernel(compare_kernel([](auto a, auto b) { return a != b; }));

// Where copies whole elements: an unsigned integer of the element's size stands for every dtype
// (std::complex<double> for complex128's 16 bytes).
// Inputs of the output's shape or of one element (the gradient rules' Where(mask, g, 0)) take a
// flat loop; others the broadcast plan's rows.
template <class U>
void select_elements(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  const bool* c = ctx.input(0).data<bool>();
  const U* x = static_cast<const U*>(ctx.input(1).raw_data());
  const U* y = static_cast<const U*>(ctx.input(2).raw_data());
  U* o = static_cast<U*>(out.raw_data());
  const auto flat_step = [&](int i) -> int64_t { return ctx.input(i).numel() == 1 ? 0 : 1; };
  const bool flat = std::all_of(ctx.inputs.begin(), ctx.inputs.end(),
                                [&](const Tensor& t) { return t.shape() == out.shape() || t.numel() == 1; });
  if (flat) {
    const int64_t sc = flat_step(0), sx = flat_step(1), sy = flat_step(2);
    parallel_for(0, out.numel(), kElementwiseGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) o[i] = c[i * sc] ? x[i * sx] : y[i * sy];
    });
    return;
  }
  const BroadcastPlan<3> plan(out.shape(),
                              {ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape()});
  const int64_t inner = plan.inner(), sc = plan.inner_stride(0), sx = plan.inner_stride(1),
                sy = plan.inner_stride(2);
  parallel_for(0, plan.rows(), std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t b, int64_t e) {
                 std::array<int64_t, 3> off;
                 for (int64_t row = b; row < e; ++row) {
                   plan.row_offsets(row, off);
                   for (int64_t j = 0; j < inner; ++j)
                     o[row * inner + j] = c[off[0] + j * sc] ? x[off[1] + j * sx] : y[off[2] + j * sy];
                 }
               });
}

void where_kernel(KernelContext& ctx) {
  switch (ctx.output(0).itemsize()) {
    case 1:
      return select_elements<uint8_t>(ctx);
    case 2:
      return select_elements<uint16_t>(ctx);
    case 4:
      return select_elements<uint32_t>(ctx);
    case 8:
      return select_elements<uint64_t>(ctx);
    default:  // 16, complex128
      return select_elements<std::complex<double>>(ctx);
  }
}

KILN_REGISTER_OP(Where)
    .moves_strings()
    .takes_storage_types()
    .doc("output = condition ? X : Y, all three broadcast together.")
    .input("condition")
    .input("X")
    .input("Y")
    .output("output")
    .elementwise()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kBoolOnly);
      require_same_dtype(ctx, 1, 2);
      return infer_broadcast(ctx, ctx.dtype(1));
    })
    .kernel(where_kernel)
    .gradient(where_gradient);

}  // namespace
}  // namespace kiln::ops
