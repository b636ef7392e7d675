// Reductions over a set of axes: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd,
// ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (ONNX, newest opsets).
// The optional int64 input `axes` picks the axes; absent or empty means all of them, or none
// with noop_with_empty_axes=1 (then the per-element part still applies: ReduceSumSquare squares,
// ReduceL1 takes |x| ...). keepdims=1 keeps reduced axes as 1s. Reducing an empty set gives the
// op's identity: 0 for the sums and norms, 1 for products, -inf (or the type's lowest) for max
// and the log-sums, +inf (or the type's highest) for min, NaN for a float mean.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "gradient.h"
#include "infer_util.h"
#include "reduce_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kAxesDTypes[] = {DType::kInt64};

template <size_t N>
constexpr bool contains(const DType (&set)[N], DType d) {
  for (DType x : set)
    if (x == d) return true;
  return false;
}

// Marks the reduced axes of a rank-`rank` input given the `axes` values.
std::vector<bool> select_axes(int rank, const std::vector<int64_t>& axes, bool noop_with_empty_axes,
                              const std::string& what) {
  std::vector<bool> reduced(static_cast<size_t>(rank), axes.empty() && !noop_with_empty_axes);
  for (int a : normalize_axes(axes, rank, what)) reduced[static_cast<size_t>(a)] = true;
  return reduced;
}

Shape reduced_shape(const Shape& in, const std::vector<bool>& reduced, bool keepdims) {
  Shape out;
  for (int d = 0; d < in.ndim(); ++d) {
    if (!reduced[static_cast<size_t>(d)]) {
      out.push_back(in[d]);
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return out;
}

// How the kernel walks the input: as a row-major (outer, reduced, inner) block. When the reduced
// axes are not adjacent, the input is first transposed (`perm`) to gather them into one run.
struct ReducePlan {
  std::vector<int64_t> perm;  // empty: the input already has that layout
  int64_t outer = 1, reduced = 1, inner = 1;
};

ReducePlan make_plan(const Shape& in, const std::vector<bool>& reduced) {
  ReducePlan plan;
  // Size-1 axes do not move any data, so only the others decide whether the reduced axes are
  // adjacent. Kept axes before the reduced run form `outer`, those after it `inner`.
  enum { kBefore, kInside, kAfter } where = kBefore;
  bool adjacent = true;
  for (int d = 0; d < in.ndim(); ++d) {
    const bool r = reduced[static_cast<size_t>(d)];
    if (r) plan.reduced *= in[d];
    if (in[d] == 1) continue;
    if (r) {
      if (where == kAfter) adjacent = false;
      where = kInside;
    } else {
      if (where == kInside) where = kAfter;
      (where == kBefore ? plan.outer : plan.inner) *= in[d];
    }
  }
  if (adjacent) return plan;
  // Move the reduced axes just before the trailing run of kept axes, so the transposing copy
  // still moves whole rows along the input's last axis.
  int suffix = in.ndim();
  while (suffix > 0 && !reduced[static_cast<size_t>(suffix - 1)]) --suffix;
  plan.outer = 1;
  plan.inner = 1;
  for (int d = 0; d < suffix; ++d)
    if (!reduced[static_cast<size_t>(d)]) {
      plan.perm.push_back(d);
      plan.outer *= in[d];
    }
  for (int d = 0; d < suffix; ++d)
    if (reduced[static_cast<size_t>(d)]) plan.perm.push_back(d);
  for (int d = suffix; d < in.ndim(); ++d) {
    plan.perm.push_back(d);
    plan.inner *= in[d];
  }
  return plan;
}

// Reduced axes on both sides of one run of kept axes: x viewed as (before, kept, after), reduced
// over before and after (batch statistics and bias gradients of NCHW tensors, over N, H and W).
struct AroundPlan {
  int64_t before = 1, kept = 1, after = 1;
};

std::optional<AroundPlan> around_plan(const Shape& in, const std::vector<bool>& reduced) {
  // The runs of reduced and kept axes, size-1 axes (which move no data) left out.
  std::vector<std::pair<bool, int64_t>> runs;
  for (int d = 0; d < in.ndim(); ++d) {
    if (in[d] == 1) continue;
    const bool r = reduced[static_cast<size_t>(d)];
    if (!runs.empty() && runs.back().first == r) {
      runs.back().second *= in[d];
    } else {
      runs.emplace_back(r, in[d]);
    }
  }
  if (runs.size() != 3 || !runs[0].first) return std::nullopt;
  return AroundPlan{runs[0].second, runs[1].second, runs[2].second};
}

// ---- Reducers: an accumulator, its identity, one step per element, the merge of two partial
// accumulators (for split reductions), and the final value. ----

template <class T>
inline constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// Integer sums and products wrap around in the input type, as ONNX computes them there; modular
// arithmetic in uint64 yields the same low bits without signed-overflow UB. Floats accumulate in
// double so long reductions keep float precision.
template <class T>
using sum_t = std::conditional_t<kIsFloat<T>, double, uint64_t>;

template <class T>
sum_t<T> widen(T x) {
  if constexpr (kIsFloat<T>) {
    return static_cast<double>(static_cast<compute_t<T>>(x));
  } else {
    return static_cast<uint64_t>(static_cast<int64_t>(x));
  }
}

template <class T>
T narrow(sum_t<T> acc) {
  if constexpr (kIsFloat<T>) {
    return convert_value<T>(static_cast<compute_t<T>>(acc));
  } else {
    return static_cast<T>(acc);
  }
}

// A real-valued result (a norm, a logarithm) in T: rounded for floats; for integers truncated
// and clamped to T's range, NaN giving 0.
template <class T>
T from_real(double v) {
  if constexpr (kIsFloat<T>) {
    return convert_value<T>(static_cast<compute_t<T>>(v));
  } else {
    if (std::isnan(v)) return T(0);
    const auto lo = static_cast<double>(std::numeric_limits<T>::lowest());
    const auto hi = static_cast<double>(std::numeric_limits<T>::max());
    if (v <= lo) return std::numeric_limits<T>::lowest();
    if (v >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(v);
  }
}

// The sums: Acc accumulates `term(x)` by addition; finish maps the total to the output.
template <class T, class A = sum_t<T>>
struct Additive {
  using Acc = A;
  static Acc init() { return 0; }
  static void combine(Acc& a, Acc b) { a += b; }
};

template <class T>
struct Sum : Additive<T> {
  static void step(sum_t<T>& a, T x) { a += widen(x); }
  static T finish(sum_t<T> a, int64_t) { return narrow<T>(a); }
};

template <class T>
struct Mean : Additive<T> {
  static void step(sum_t<T>& a, T x) { a += widen(x); }
  static T finish(sum_t<T> a, int64_t n) {
    if constexpr (kIsFloat<T>) {
      return narrow<T>(a / static_cast<double>(n));  // 0/0: NaN for an empty set
    } else {
      // ONNX sums in T, then divides; integer division truncates like the ONNX reference.
      const auto sum = static_cast<int64_t>(narrow<T>(a));
      return n == 0 ? T(0) : static_cast<T>(sum / n);
    }
  }
};

template <class T>
struct SumSquare : Additive<T> {
  static void step(sum_t<T>& a, T x) {
    const sum_t<T> w = widen(x);
    a += w * w;
  }
  static T finish(sum_t<T> a, int64_t) { return narrow<T>(a); }
};

template <class T>
struct L1 : Additive<T> {
  static void step(sum_t<T>& a, T x) {
    const sum_t<T> w = widen(x);
    if constexpr (kIsFloat<T>) {
      a += std::abs(w);
    } else if constexpr (std::is_signed_v<T>) {
      a += x < 0 ? sum_t<T>(0) - w : w;
    } else {
      a += w;
    }
  }
  static T finish(sum_t<T> a, int64_t) { return narrow<T>(a); }
};

// Norms and logarithms are real-valued, so they accumulate in double for every type.
template <class T>
struct L2 : Additive<T, double> {
  static void step(double& a, T x) {
    const auto v = static_cast<double>(static_cast<compute_t<T>>(x));
    a += v * v;
  }
  static T finish(double a, int64_t) { return from_real<T>(std::sqrt(a)); }
};

template <class T>
struct LogSum : Additive<T, double> {
  static void step(double& a, T x) { a += static_cast<double>(static_cast<compute_t<T>>(x)); }
  static T finish(double a, int64_t) { return from_real<T>(std::log(a)); }
};

template <class T>
struct Prod {
  using Acc = sum_t<T>;
  static Acc init() { return 1; }
  static void step(Acc& a, T x) { a *= widen(x); }
  static void combine(Acc& a, Acc b) { a *= b; }
  static T finish(Acc a, int64_t) { return narrow<T>(a); }
};

// log(sum(exp(x))) kept as (max, sum of exp(x - max)), rescaling the sum whenever the maximum
// grows, so exp never overflows; the result is max + log(sum).
template <class T>
struct LogSumExp {
  struct Acc {
    double max, sum;
  };
  static Acc init() { return {-std::numeric_limits<double>::infinity(), 0.0}; }
  static void step(Acc& a, T x) { combine(a, {static_cast<double>(static_cast<compute_t<T>>(x)), 1.0}); }
  static void combine(Acc& a, Acc b) {
    if (std::isnan(b.max)) {
      a.max = b.max;  // sticky: every later comparison fails and the result is NaN
    } else if (b.max > a.max) {
      a.sum = a.sum * std::exp(a.max - b.max) + b.sum;
      a.max = b.max;
    } else if (b.max != -std::numeric_limits<double>::infinity()) {
      a.sum += b.sum * std::exp(b.max - a.max);
    }
  }
  static T finish(Acc a, int64_t) {
    // An infinite maximum (or none: the empty set) is the answer; log(sum) would be NaN there.
    return from_real<T>(std::isinf(a.max) ? a.max : a.max + std::log(a.sum));
  }
};

// Max and Min compare in the compute type, so int64 stays exact; NaN propagates like numpy.
template <class T, bool kMax>
struct Extremum {
  using Acc = compute_t<T>;
  static Acc init() {
    using Limits = std::numeric_limits<Acc>;
    if constexpr (Limits::has_infinity) {
      return kMax ? -Limits::infinity() : Limits::infinity();
    } else {
      return kMax ? Limits::lowest() : Limits::max();
    }
  }
  static void step(Acc& a, T x) { combine(a, static_cast<Acc>(x)); }
  static void combine(Acc& a, Acc b) {
    bool take = kMax ? b > a : b < a;
    if constexpr (kIsFloat<T>) take = take || std::isnan(b);
    if (take) a = b;
  }
  static T finish(Acc a, int64_t) { return convert_value<T>(a); }
};

template <class T>
using Max = Extremum<T, true>;
template <class T>
using Min = Extremum<T, false>;

// ---- The loop over an (outer, reduced, inner) block. ----

// Inner columns accumulated together when the reduced axis is strided: each pass over one
// reduced index then reads a contiguous run of the input.
inline constexpr int64_t kInnerBlock = 1024;
// Below this many independent (row, inner block) groups, the reduced axis is split as well, so a
// full reduction still uses every thread. The split does not depend on the thread count, so
// results do not either.
inline constexpr int64_t kFewGroups = 64;
inline constexpr int64_t kMaxPartials = 1 << 16;

// A contiguous run of n elements, in four interleaved accumulators: independent dependency
// chains run in parallel in the CPU instead of waiting on one another.
template <class T, class R>
typename R::Acc reduce_run(const T* x, int64_t n) {
  using Acc = typename R::Acc;
  Acc lane[4] = {R::init(), R::init(), R::init(), R::init()};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    R::step(lane[0], x[i]);
    R::step(lane[1], x[i + 1]);
    R::step(lane[2], x[i + 2]);
    R::step(lane[3], x[i + 3]);
  }
  for (; i < n; ++i) R::step(lane[0], x[i]);
  R::combine(lane[0], lane[1]);
  R::combine(lane[2], lane[3]);
  R::combine(lane[0], lane[2]);
  return lane[0];
}

template <class T, class R>
void reduce_block(const T* x, T* y, const ReducePlan& plan) {
  using Acc = typename R::Acc;
  const int64_t reduced = plan.reduced, inner = plan.inner;
  const int64_t block = std::min(inner, kInnerBlock);
  const int64_t blocks = inner == 0 ? 0 : (inner + block - 1) / block;
  const int64_t groups = plan.outer * blocks;
  // Accumulates reduced indices [r0, r1) of group g into acc[0 .. width of the group).
  auto accumulate = [&](int64_t g, int64_t r0, int64_t r1, Acc* acc) {
    const int64_t o = g / blocks, j0 = (g % blocks) * block;
    if (inner == 1) {
      acc[0] = reduce_run<T, R>(x + o * reduced + r0, r1 - r0);
      return;
    }
    const int64_t n = std::min(block, inner - j0);
    std::fill(acc, acc + n, R::init());
    for (int64_t r = r0; r < r1; ++r) {
      const T* src = x + (o * reduced + r) * inner + j0;
      for (int64_t j = 0; j < n; ++j) R::step(acc[j], src[j]);
    }
  };
  auto finish = [&](int64_t g, const Acc* acc) {
    const int64_t o = g / blocks, j0 = (g % blocks) * block;
    const int64_t n = std::min(block, inner - j0);
    for (int64_t j = 0; j < n; ++j) y[o * inner + j0 + j] = R::finish(acc[j], reduced);
  };

  int64_t parts = 1;
  if (groups > 0 && groups < kFewGroups) {
    parts = std::clamp<int64_t>(reduced * block / kReduceGrain, 1, kMaxPartials / (groups * block));
  }
  // Accumulators live in arrays, not std::vector, which would pack Max/Min of bool into bits.
  if (parts <= 1) {
    parallel_for(0, groups, reduce_grain(reduced * block), [&](int64_t b, int64_t e) {
      const auto acc = std::make_unique<Acc[]>(static_cast<size_t>(block));
      for (int64_t g = b; g < e; ++g) {
        accumulate(g, 0, reduced, acc.get());
        finish(g, acc.get());
      }
    });
    return;
  }
  // Split the reduced axis into parts, accumulate each on its own, then merge them in order.
  const int64_t part_length = (reduced + parts - 1) / parts;
  parts = (reduced + part_length - 1) / part_length;
  const auto partial = std::make_unique<Acc[]>(static_cast<size_t>(groups * parts * block));
  parallel_for(0, groups * parts, 1, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      const int64_t g = t / parts, r0 = (t % parts) * part_length;
      accumulate(g, r0, std::min(reduced, r0 + part_length), partial.get() + t * block);
    }
  });
  for (int64_t g = 0; g < groups; ++g) {
    Acc* total = partial.get() + g * parts * block;
    const int64_t n = std::min(block, inner - (g % blocks) * block);
    for (int64_t p = 1; p < parts; ++p)
      for (int64_t j = 0; j < n; ++j) R::combine(total[j], total[p * block + j]);
    finish(g, total);
  }
}

// The (before, kept, after) case: each row of `after` elements is reduced where it lies, with no
// transposing copy, and each kept index is finished by one thread (results do not depend on the
// thread count).
template <class T, class R>
void reduce_around(const T* x, T* y, const AroundPlan& plan) {
  using Acc = typename R::Acc;
  const int64_t per_output = plan.before * plan.after;
  parallel_for(0, plan.kept, reduce_grain(per_output), [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      Acc acc = R::init();
      for (int64_t a = 0; a < plan.before; ++a)
        R::combine(acc, reduce_run<T, R>(x + (a * plan.kept + k) * plan.after, plan.after));
      y[k] = R::finish(acc, per_output);
    }
  });
}

bool keepdims_of(const Attrs& attrs) {
  return attrs.get_int("keepdims") == 1;
}
bool noop_of(const Attrs& attrs) {
  return attrs.get_int("noop_with_empty_axes") == 1;
}

template <const auto& Allowed>
std::vector<TensorInfo> infer_reduce(InferContext& ctx) {
  require_dtype(ctx, 0, Allowed);
  const Shape& in = ctx.shape(0);
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, kAxesDTypes);
    require_rank(ctx, 1, 1, 1);
    // Empty axes need no values, so the output shape is known even when they are not.
    if (ctx.shape(1)[0] != 0) axes = read_int_values(ctx.value(1), ctx.input_label(1));
  }
  const auto reduced = select_axes(in.ndim(), axes, noop_of(ctx.attrs()), ctx.input_label(1));
  return {TensorInfo{ctx.dtype(0), reduced_shape(in, reduced, keepdims_of(ctx.attrs()))}};
}

template <template <class> class Reducer, const auto& Allowed>
void reduce_kernel(KernelContext& ctx) {
  const Tensor& data = ctx.input(0);
  const auto axes = ctx.has_input(1) ? read_int_values(ctx.input(1), "axes") : std::vector<int64_t>{};
  const std::vector<bool> reduced = select_axes(data.ndim(), axes, noop_of(ctx.attrs), "axes");
  if (const std::optional<AroundPlan> around = around_plan(data.shape(), reduced)) {
    dispatch_dtype(data.dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (contains(Allowed, dtype_of<T>)) {
        reduce_around<T, Reducer<T>>(data.data<T>(), ctx.output(0).data<T>(), *around);
      }
    });
    return;
  }
  const ReducePlan plan = make_plan(data.shape(), reduced);
  const Tensor x = plan.perm.empty() ? data : data.transpose(plan.perm).contiguous();
  dispatch_dtype(data.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (contains(Allowed, dtype_of<T>)) {
      reduce_block<T, Reducer<T>>(x.data<T>(), ctx.output(0).data<T>(), plan);
    }
  });
}

// Gradient rules. The output and its gradient are first put back into the keepdims=1 layout
// (Unsqueeze at the reduced axes), where they broadcast against the input.
struct ReduceGrad {
  GradientContext& ctx;
  GradValue x, g, y;  // g and y in the keepdims layout

  explicit ReduceGrad(GradientContext& context) : ctx(context), x(context.input(0)) {
    g = kept(context.output_grad(0));
    y = kept(context.output(0));
  }
  GradValue kept(GradValue v) {
    if (keepdims_of(ctx.attrs()) || !ctx.has_input(1)) return v;  // all axes reduced: v is a scalar
    return ctx.op1("Unsqueeze", {v, ctx.input(1)});
  }
  GradValue c(double v) { return ctx.scalar(v, ctx.input_info(0).dtype); }
  // dx = g * d(reduced)/dx, the broadcast giving dx the input's shape.
  void set(GradValue derivative) { ctx.set_input_grad(0, ctx.mul(g, derivative)); }
  GradValue expanded_g() { return ctx.op1("Expand", {g, ctx.shape_of_input(0)}); }
  // The number of input elements behind each output element.
  GradValue group_size() {
    const DType dtype = ctx.input_info(0).dtype;
    const Shape& in = ctx.input_info(0).shape;
    const Shape& out = ctx.output_info(0).shape;
    if (in.is_known() && out.is_known())
      return c(out.numel() == 0 ? 0.0 : static_cast<double>(in.numel()) / static_cast<double>(out.numel()));
    const AttrMap to{{"to", static_cast<int64_t>(dtype_to_onnx(dtype))}};
    return ctx.div(ctx.op1("Cast", {ctx.op1("Size", {x})}, to),
                   ctx.op1("Cast", {ctx.op1("Size", {ctx.output(0)})}, to));
  }
};

void reduce_sum_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  ctx.set_input_grad(0, r.expanded_g());
}

void reduce_mean_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  ctx.set_input_grad(0, ctx.div(r.expanded_g(), r.group_size()));
}

// The gradient goes to the elements equal to the extreme (to each of them on a tie).
void reduce_extreme_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  const GradValue chosen = ctx.op1("Equal", {r.x, r.y});
  ctx.set_input_grad(0, ctx.op1("Where", {chosen, r.expanded_g(), r.c(0)}));
}

// d(prod x) / dx_i = prod / x_i (undefined where x_i = 0).
void reduce_prod_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  r.set(ctx.div(r.y, r.x));
}

void reduce_l1_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  r.set(ctx.op1("Sign", {r.x}));
}

void reduce_l2_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  r.set(ctx.div(r.x, r.y));
}

// y = log(sum x): dy/dx = 1 / sum x = e^-y.
void reduce_log_sum_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  const GradValue scaled = ctx.mul(r.g, ctx.op1("Exp", {ctx.neg(r.y)}));  // nothing here has X's shape yet
  ctx.set_input_grad(0, ctx.op1("Expand", {scaled, ctx.shape_of_input(0)}));
}

// y = log(sum e^x): dy/dx = e^(x - y), the softmax over the reduced axes.
void reduce_log_sum_exp_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  r.set(ctx.op1("Exp", {ctx.sub(r.x, r.y)}));
}

void reduce_sum_square_gradient(GradientContext& ctx) {
  ReduceGrad r(ctx);
  r.set(ctx.mul(r.c(2), r.x));
}

KILN_REGISTER_OP(ReduceSum)
    .doc("Sum over `axes` (all when absent or empty). Integer sums wrap around in the input type.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kNumericDTypes>)
    .kernel(reduce_kernel<Sum, kNumericDTypes>)
    .gradient(reduce_sum_gradient);

KILN_REGISTER_OP(ReduceMean)
    .doc("Mean over `axes` (all when absent or empty); an integer mean truncates toward zero.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kNumericDTypes>)
    .kernel(reduce_kernel<Mean, kNumericDTypes>)
    .gradient(reduce_mean_gradient);

KILN_REGISTER_OP(ReduceMax)
    .doc("Maximum over `axes` (all when absent or empty); NaN propagates.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kComputeDTypes>)
    .kernel(reduce_kernel<Max, kComputeDTypes>)
    .gradient(reduce_extreme_gradient);

KILN_REGISTER_OP(ReduceMin)
    .doc("Minimum over `axes` (all when absent or empty); NaN propagates.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kComputeDTypes>)
    .kernel(reduce_kernel<Min, kComputeDTypes>)
    .gradient(reduce_extreme_gradient);

KILN_REGISTER_OP(ReduceProd)
    .doc("Product over `axes` (all when absent or empty). Integer products wrap around.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kNumericDTypes>)
    .kernel(reduce_kernel<Prod, kNumericDTypes>)
    .gradient(reduce_prod_gradient);

KILN_REGISTER_OP(ReduceL1)
    .doc("Sum of |x| over `axes` (all when absent or empty).")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kNumericDTypes>)
    .kernel(reduce_kernel<L1, kNumericDTypes>)
    .gradient(reduce_l1_gradient);

KILN_REGISTER_OP(ReduceL2)
    .doc("sqrt(sum of x^2) over `axes` (all when absent or empty); integers truncate.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kNumericDTypes>)
    .kernel(reduce_kernel<L2, kNumericDTypes>)
    .gradient(reduce_l2_gradient);

KILN_REGISTER_OP(ReduceLogSum)
    .doc("log(sum of x) over `axes` (all when absent or empty).")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kFloatDTypes>)
    .kernel(reduce_kernel<LogSum, kFloatDTypes>)
    .gradient(reduce_log_sum_gradient);

KILN_REGISTER_OP(ReduceLogSumExp)
    .doc("log(sum of exp(x)) over `axes` (all when absent or empty), computed without overflow.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kFloatDTypes>)
    .kernel(reduce_kernel<LogSumExp, kFloatDTypes>)
    .gradient(reduce_log_sum_exp_gradient);

KILN_REGISTER_OP(ReduceSumSquare)
    .doc("Sum of x^2 over `axes` (all when absent or empty). Integer sums wrap around.")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("reduced")
    .attr("keepdims", AttrType::kInt, 1, require_flag)
    .attr("noop_with_empty_axes", AttrType::kInt, 0, require_flag)
    .infer(infer_reduce<kNumericDTypes>)
    .kernel(reduce_kernel<SumSquare, kNumericDTypes>)
    .gradient(reduce_sum_square_gradient);

}  // namespace
}  // namespace kiln::ops
