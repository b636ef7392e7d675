// Optimizer update ops: one step of SGD, SGD with momentum, Nesterov momentum, Adam, AdamW,
// RMSProp (plain and centered) and AdaGrad on one parameter, with MXNet's attributes (lr, wd,
// rescale_grad, clip_gradient, ...). They are Kiln's own ops, named after MXNet's sgd_update,
// sgd_mom_update, nag_mom_update, adam_update, _adamw_update, rmsprop_update, rmspropalex_update
// and AdaGrad's dense update. Weights may be float32, float64, float16 or bfloat16.
//
// Inputs are (weight, grad, states..., weight32?) and outputs (weight, states..., weight32?). The
// ops are elementwise (element i of every input is read before element i of any output is
// written), so callers run them in place by writing the outputs into the input arrays
// (nd::invoke_into(op, {w, g, m}, {w, m}, ...)). With a float32 master copy `weight32` (MXNet's
// multi_precision, for 16-bit weights) the step is computed on the master copy, the states are
// float32, and the 16-bit weight receives the rounded result. Otherwise the states have the
// weight's dtype and 16-bit values are computed in float.
//
// MXNet's _adamw_update takes rescale_grad as an array and skips the step when it is NaN, Inf or 0
// (dynamic loss scaling); here rescale_grad is an attribute in every op.
//
// Each rule below states its formula. `grad` there means clip(rescale_grad * grad), where clip
// limits to [-clip_gradient, clip_gradient] when clip_gradient > 0 (the default -1 means none).
#include <array>
#include <cmath>

#include "core/thread_pool.h"
#include "ops/infer_util.h"

namespace kiln::ops {
namespace {

constexpr int64_t kGrain = 1 << 14;

void validate_non_negative(const AttrValue& value, const std::string& what) {
  const double v = std::get<double>(value.variant());
  KILN_CHECK(std::isfinite(v) && v >= 0, ErrorCode::kInvalidArgument, what,
             ": expected a finite value >= 0, got ", v);
}

void validate_decay_rate(const AttrValue& value, const std::string& what) {
  const double v = std::get<double>(value.variant());
  KILN_CHECK(v >= 0 && v < 1, ErrorCode::kInvalidArgument, what, ": expected a value in [0, 1), got ", v);
}

// The attributes every update op takes.
struct UpdateAttrs {
  double lr, wd, rescale_grad, clip_gradient;

  explicit UpdateAttrs(const Attrs& a)
      : lr(a.get_float("lr")),
        wd(a.get_float("wd")),
        rescale_grad(a.get_float("rescale_grad")),
        clip_gradient(a.get_float("clip_gradient")) {}

  template <class C>
  C clip(C x) const {
    if (clip_gradient <= 0) return x;
    const C bound = static_cast<C>(clip_gradient);
    return x > bound ? bound : (x < -bound ? -bound : x);
  }
  // clip(rescale_grad * grad)
  template <class C>
  C rescaled(C grad) const {
    return clip(static_cast<C>(rescale_grad) * grad);
  }
  // clip(rescale_grad * grad + wd * weight): Adam and RMSProp fold weight decay in before clipping.
  template <class C>
  C rescaled_with_decay(C grad, C weight) const {
    return clip(static_cast<C>(rescale_grad) * grad + static_cast<C>(wd) * weight);
  }
};

// Clips the weight to [-bound, bound] when bound > 0 (RMSProp's clip_weights).
template <class C>
C clip_weight(C w, double bound) {
  if (bound <= 0) return w;
  const C b = static_cast<C>(bound);
  return w > b ? b : (w < -b ? -b : w);
}

OpSchema& common_attrs(OpSchema& schema) {
  return schema.required_attr("lr", AttrType::kFloat, validate_non_negative)
      .attr("wd", AttrType::kFloat, 0.0)
      .attr("rescale_grad", AttrType::kFloat, 1.0)
      .attr("clip_gradient", AttrType::kFloat, -1.0);
}

constexpr bool is_16bit(DType d) {
  return d == DType::kFloat16 || d == DType::kBFloat16;
}

// Inputs (weight, grad, states..., weight32?) all of the weight's shape; outputs the same list
// without grad.
std::vector<TensorInfo> infer_update(InferContext& ctx, int num_states) {
  require_dtype(ctx, 0, kFloatDTypes);
  const TensorInfo& weight = ctx.input(0);
  const int master = 2 + num_states;
  const bool has_master = ctx.has_input(master);
  require_same_dtype(ctx, 0, 1);
  const DType state_dtype = has_master ? DType::kFloat32 : weight.dtype;
  for (int i = 1; i < master + (has_master ? 1 : 0); ++i) {
    const Shape& s = ctx.shape(i);
    KILN_CHECK(s == weight.shape || !s.is_known() || !weight.shape.is_known(), ErrorCode::kShapeMismatch,
               ctx.input_label(i), ": expected the weight's shape ", weight.shape, ", got ", s);
    if (i < 2) continue;
    KILN_CHECK(ctx.dtype(i) == state_dtype, ErrorCode::kTypeMismatch, ctx.input_label(i), ": expected dtype ",
               dtype_name(state_dtype),
               has_master ? " (states are float32 with a float32 master weight)" : " (the weight's dtype)",
               ", got ", dtype_name(ctx.dtype(i)));
  }
  KILN_CHECK(!has_master || is_16bit(weight.dtype), ErrorCode::kTypeMismatch, ctx.input_label(master),
             ": a float32 master copy is for float16 or bfloat16 weights, the weight is ",
             dtype_name(weight.dtype));
  const int expected = 1 + num_states + (has_master ? 1 : 0);
  const int requested = ctx.num_outputs_requested();
  KILN_CHECK(requested < 0 || requested == expected, ErrorCode::kInvalidArgument, "expected ", expected,
             " outputs (the weight", num_states > 0 ? ", its states" : "",
             has_master ? " and the master weight" : "", "), got ", requested);
  std::vector<TensorInfo> out{weight};
  for (int i = 0; i < num_states; ++i) out.push_back(TensorInfo{state_dtype, weight.shape});
  if (has_master) out.push_back(TensorInfo{DType::kFloat32, weight.shape});
  return out;
}

// Element i is read before it is written and no other element is touched, so an update loop may
// be vectorized although its outputs alias its inputs (updates run in place); compilers cannot
// prove that, so GCC (the release compiler) is told. clang's counterpart, vectorize(assume_safety),
// warns wherever it still cannot vectorize (16-bit types), so clang builds (fuzzing) go without.
#if defined(__clang__)
#define KILN_INDEPENDENT_ITERATIONS
#else
#define KILN_INDEPENDENT_ITERATIONS _Pragma("GCC ivdep")
#endif

// Applies rule(w, grad, states) to every element, in the compute type C: float for 16-bit
// weights (and for the master copy), the weight's type otherwise.
template <class T, class S, int K, class Rule>
void update_elements(KernelContext& ctx, bool has_master, const Rule& rule) {
  using C = compute_t<S>;
  const T* w_in = ctx.input(0).data<T>();
  const T* g_in = ctx.input(1).data<T>();
  std::array<const S*, K> s_in{};
  std::array<S*, K> s_out{};
  if constexpr (K > 0) {
    for (int k = 0; k < K; ++k) {
      s_in[static_cast<size_t>(k)] = ctx.input(2 + k).template data<S>();
      s_out[static_cast<size_t>(k)] = ctx.output(1 + k).template data<S>();
    }
  }
  const S* master_in = has_master ? ctx.input(2 + K).template data<S>() : nullptr;
  S* master_out = has_master ? ctx.output(1 + K).template data<S>() : nullptr;
  T* w_out = ctx.output(0).data<T>();
  const auto update = [&]<bool kMaster>(int64_t begin, int64_t end) {
    KILN_INDEPENDENT_ITERATIONS
    for (int64_t i = begin; i < end; ++i) {
      C w = kMaster ? static_cast<C>(master_in[i]) : static_cast<C>(w_in[i]);
      const C g = static_cast<C>(g_in[i]);
      std::array<C, K> s{};
      if constexpr (K > 0)
        for (size_t k = 0; k < K; ++k) s[k] = static_cast<C>(s_in[k][i]);
      rule(w, g, s);
      if constexpr (K > 0)
        for (size_t k = 0; k < K; ++k) s_out[k][i] = convert_value<S>(s[k]);
      if constexpr (kMaster) master_out[i] = convert_value<S>(w);
      w_out[i] = convert_value<T>(w);
    }
  };
  parallel_for(0, ctx.input(0).numel(), kGrain, [&](int64_t begin, int64_t end) {
    if (has_master) {
      update.template operator()<true>(begin, end);
    } else {
      update.template operator()<false>(begin, end);
    }
  });
}

template <int K, class Rule>
void run_update(KernelContext& ctx, const Rule& rule) {
  const bool has_master = ctx.has_input(2 + K);
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      if constexpr (is_16bit(dtype_of<T>)) {
        if (has_master) return update_elements<T, float, K>(ctx, true, rule);
      }
      update_elements<T, T, K>(ctx, false, rule);
    }
  });
}

// Registers an update op with its inputs and outputs: `states` names its state arrays.
OpSchema& register_update(const char* name, std::vector<std::string> states) {
  OpSchema& schema = OpRegistry::global().add(name);
  schema.input("weight").input("grad");
  for (const auto& s : states) schema.input(s);
  schema.input("weight32", Arity::kOptional).output("weight_out");
  for (const auto& s : states) schema.output(s + "_out");
  const int num_states = static_cast<int>(states.size());
  schema.output("weight32_out", Arity::kOptional)
      .infer([num_states](InferContext& ctx) { return infer_update(ctx, num_states); })
      .elementwise();
  return common_attrs(schema);
}

// weight = (1 - lr * wd) * weight - lr * grad
void sgd_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  run_update<0>(ctx, [&]<class C>(C& w, C g, std::array<C, 0>&) {
    w = (C(1) - static_cast<C>(p.lr * p.wd)) * w - static_cast<C>(p.lr) * p.rescaled(g);
  });
}

// mom = momentum * mom - lr * wd * weight - lr * grad;  weight += mom
// (MXNet 1.x keeps the velocity scaled by lr; with a constant lr this is PyTorch's SGD momentum
// with mom = -lr * buf.)
void sgd_mom_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double momentum = ctx.attrs.get_float("momentum");
  run_update<1>(ctx, [&]<class C>(C& w, C g, std::array<C, 1>& s) {
    s[0] = static_cast<C>(momentum) * s[0] - static_cast<C>(p.lr * p.wd) * w -
           static_cast<C>(p.lr) * p.rescaled(g);
    w += s[0];
  });
}

// d = grad + wd * weight;  mom = momentum * mom - lr * d;  weight += momentum * mom - lr * d
// (Nesterov with lr-scaled velocity. MXNet 1.9.1's kernel, run in place, reads the already
// updated weight for the decay term of mom; here the old weight is used throughout.)
void nag_mom_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double momentum = ctx.attrs.get_float("momentum");
  run_update<1>(ctx, [&]<class C>(C& w, C g, std::array<C, 1>& s) {
    const C step = static_cast<C>(p.lr) * (p.rescaled(g) + static_cast<C>(p.wd) * w);
    s[0] = static_cast<C>(momentum) * s[0] - step;
    w += static_cast<C>(momentum) * s[0] - step;
  });
}

// d = clip(rescale_grad * grad + wd * weight);  mean = beta1 * mean + (1 - beta1) * d
// var = beta2 * var + (1 - beta2) * d^2;  weight -= lr * mean / (sqrt(var) + epsilon)
// No bias correction here: the Adam optimizer folds it into lr (see nn/optimizers.cc).
void adam_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double beta1 = ctx.attrs.get_float("beta1"), beta2 = ctx.attrs.get_float("beta2");
  const double epsilon = ctx.attrs.get_float("epsilon");
  run_update<2>(ctx, [&]<class C>(C& w, C g, std::array<C, 2>& s) {
    const C d = p.rescaled_with_decay(g, w);
    s[0] = static_cast<C>(beta1) * s[0] + static_cast<C>(1 - beta1) * d;
    s[1] = static_cast<C>(beta2) * s[1] + static_cast<C>(1 - beta2) * d * d;
    w -= static_cast<C>(p.lr) * s[0] / (std::sqrt(s[1]) + static_cast<C>(epsilon));
  });
}

// mean = beta1 * mean + (1 - beta1) * grad;  var = beta2 * var + (1 - beta2) * grad^2
// weight -= eta * (lr * mean / (sqrt(var) + epsilon) + wd * weight)     (decoupled decay)
void adamw_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double beta1 = ctx.attrs.get_float("beta1"), beta2 = ctx.attrs.get_float("beta2");
  const double epsilon = ctx.attrs.get_float("epsilon"), eta = ctx.attrs.get_float("eta");
  run_update<2>(ctx, [&]<class C>(C& w, C g, std::array<C, 2>& s) {
    const C d = p.rescaled(g);
    s[0] = static_cast<C>(beta1) * s[0] + static_cast<C>(1 - beta1) * d;
    s[1] = static_cast<C>(beta2) * s[1] + static_cast<C>(1 - beta2) * d * d;
    w -= static_cast<C>(eta) * (static_cast<C>(p.lr) * s[0] / (std::sqrt(s[1]) + static_cast<C>(epsilon)) +
                                static_cast<C>(p.wd) * w);
  });
}

// d = clip(rescale_grad * grad + wd * weight);  n = (1 - gamma1) * d^2 + gamma1 * n
// weight = clip_weights(weight - lr * d / sqrt(n + epsilon))      (epsilon inside the root)
void rmsprop_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double gamma1 = ctx.attrs.get_float("gamma1"), epsilon = ctx.attrs.get_float("epsilon");
  const double clip_weights = ctx.attrs.get_float("clip_weights");
  run_update<1>(ctx, [&]<class C>(C& w, C g, std::array<C, 1>& s) {
    const C d = p.rescaled_with_decay(g, w);
    s[0] = static_cast<C>(1 - gamma1) * d * d + static_cast<C>(gamma1) * s[0];
    w = clip_weight(w - static_cast<C>(p.lr) * d / std::sqrt(s[0] + static_cast<C>(epsilon)), clip_weights);
  });
}

// Centered RMSProp (Graves 2013, MXNet's rmspropalex_update), states (n, g, delta):
// d = clip(rescale_grad * grad + wd * weight);  n = (1 - gamma1) * d^2 + gamma1 * n
// g = (1 - gamma1) * d + gamma1 * g;  delta = gamma2 * delta - lr * d / sqrt(n - g^2 + epsilon)
// weight = clip_weights(weight + delta)
void rmspropalex_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double gamma1 = ctx.attrs.get_float("gamma1"), gamma2 = ctx.attrs.get_float("gamma2");
  const double epsilon = ctx.attrs.get_float("epsilon"), clip_weights = ctx.attrs.get_float("clip_weights");
  run_update<3>(ctx, [&]<class C>(C& w, C g, std::array<C, 3>& s) {
    const C d = p.rescaled_with_decay(g, w);
    s[0] = static_cast<C>(1 - gamma1) * d * d + static_cast<C>(gamma1) * s[0];
    s[1] = static_cast<C>(1 - gamma1) * d + static_cast<C>(gamma1) * s[1];
    s[2] = static_cast<C>(gamma2) * s[2] -
           static_cast<C>(p.lr) * d / std::sqrt(s[0] - s[1] * s[1] + static_cast<C>(epsilon));
    w = clip_weight(w + s[2], clip_weights);
  });
}

// MXNet's dense AdaGrad (weight decay stays out of the history):
// history += grad^2;  weight -= lr * (grad / sqrt(history + epsilon) + wd * weight)
void adagrad_kernel(KernelContext& ctx) {
  const UpdateAttrs p(ctx.attrs);
  const double epsilon = ctx.attrs.get_float("epsilon");
  run_update<1>(ctx, [&]<class C>(C& w, C g, std::array<C, 1>& s) {
    const C d = p.rescaled(g);
    s[0] += d * d;
    w -= static_cast<C>(p.lr) * (d / std::sqrt(s[0] + static_cast<C>(epsilon)) + static_cast<C>(p.wd) * w);
  });
}

[[maybe_unused]] const bool kRegistered = [] {
  register_update("SGDUpdate", {})
      .doc("SGD step (MXNet sgd_update): weight = (1 - lr*wd)*weight - lr*clip(rescale_grad*grad).")
      .kernel(sgd_kernel);
  register_update("SGDMomUpdate", {"mom"})
      .doc(
          "SGD with momentum (MXNet sgd_mom_update): mom = momentum*mom - lr*wd*weight - lr*grad; "
          "weight += mom.")
      .attr("momentum", AttrType::kFloat, 0.0, validate_non_negative)
      .kernel(sgd_mom_kernel);
  register_update("NAGMomUpdate", {"mom"})
      .doc(
          "Nesterov momentum (MXNet nag_mom_update): d = grad + wd*weight; mom = momentum*mom - lr*d; "
          "weight += momentum*mom - lr*d.")
      .attr("momentum", AttrType::kFloat, 0.0, validate_non_negative)
      .kernel(nag_mom_kernel);
  register_update("AdamUpdate", {"mean", "var"})
      .doc(
          "Adam step without bias correction (MXNet adam_update): "
          "weight -= lr*mean/(sqrt(var) + epsilon).")
      .attr("beta1", AttrType::kFloat, 0.9, validate_decay_rate)
      .attr("beta2", AttrType::kFloat, 0.999, validate_decay_rate)
      .attr("epsilon", AttrType::kFloat, 1e-8, validate_non_negative)
      .kernel(adam_kernel);
  register_update("AdamWUpdate", {"mean", "var"})
      .doc(
          "AdamW step, decoupled weight decay (MXNet _adamw_update): "
          "weight -= eta*(lr*mean/(sqrt(var) + epsilon) + wd*weight).")
      .required_attr("eta", AttrType::kFloat, validate_non_negative)
      .attr("beta1", AttrType::kFloat, 0.9, validate_decay_rate)
      .attr("beta2", AttrType::kFloat, 0.999, validate_decay_rate)
      .attr("epsilon", AttrType::kFloat, 1e-8, validate_non_negative)
      .kernel(adamw_kernel);
  register_update("RMSPropUpdate", {"n"})
      .doc(
          "RMSProp step (MXNet rmsprop_update): n = (1-gamma1)*d^2 + gamma1*n; "
          "weight -= lr*d/sqrt(n + epsilon).")
      .attr("gamma1", AttrType::kFloat, 0.95, validate_decay_rate)
      .attr("epsilon", AttrType::kFloat, 1e-8, validate_non_negative)
      .attr("clip_weights", AttrType::kFloat, -1.0)
      .kernel(rmsprop_kernel);
  register_update("RMSPropAlexUpdate", {"n", "g", "delta"})
      .doc(
          "Centered RMSProp step (MXNet rmspropalex_update): "
          "delta = gamma2*delta - lr*d/sqrt(n - g^2 + epsilon); weight += delta.")
      .attr("gamma1", AttrType::kFloat, 0.95, validate_decay_rate)
      .attr("gamma2", AttrType::kFloat, 0.9, validate_non_negative)
      .attr("epsilon", AttrType::kFloat, 1e-8, validate_non_negative)
      .attr("clip_weights", AttrType::kFloat, -1.0)
      .kernel(rmspropalex_kernel);
  register_update("AdaGradUpdate", {"history"})
      .doc(
          "AdaGrad step (MXNet AdaGrad): history += grad^2; "
          "weight -= lr*(grad/sqrt(history + epsilon) + wd*weight).")
      .attr("epsilon", AttrType::kFloat, 1e-7, validate_non_negative)
      .kernel(adagrad_kernel);
  return true;
}();

}  // namespace
}  // namespace kiln::ops
