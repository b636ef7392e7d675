// LinearAttention (ONNX opset 27): attention as a recurrence over a fixed-size state per key/value
// head, S (d_k x d_v), for linear-attention and DeltaNet-style models. Per token t:
//   linear:      S = S + k v^T
//   gated:       S = exp(g) S + k v^T
//   delta:       S = S + k (beta (v - S^T k))^T
//   gated_delta: S = exp(g) S, then as delta
// and o = scale q^T S. query, key, value (and decay, beta) are [B, T, heads * dim]; the state is
// (B, H_kv, d_k, d_v). Query heads share key/value heads in groups (GQA): query head h reads KV
// head h / (q_num_heads / kv_num_heads). The recurrence runs token by token in float (double for
// float64), exactly as the spec's reference; chunk_size is a hint for chunked GPU kernels.
#include <cmath>
#include <type_traits>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

struct LinearAttentionDims {
  int64_t batch = 0, tokens = 0, q_heads = 0, kv_heads = 0, d_k = 0, d_v = 0;
  bool gated = false, delta = false;
};

LinearAttentionDims linear_attention_dims(const Attrs& attrs, const Shape& q, const Shape& k,
                                          const Shape& v) {
  LinearAttentionDims d;
  d.q_heads = attrs.get_int("q_num_heads");
  d.kv_heads = attrs.get_int("kv_num_heads");
  KILN_CHECK(d.q_heads > 0 && d.kv_heads > 0 && d.q_heads % d.kv_heads == 0, ErrorCode::kInvalidArgument,
             "attributes 'q_num_heads' (", d.q_heads, ") and 'kv_num_heads' (", d.kv_heads,
             "): expected a positive multiple of a positive count");
  const std::string& rule = attrs.get_string("update_rule");
  d.gated = rule == "gated" || rule == "gated_delta";
  d.delta = rule == "delta" || rule == "gated_delta";
  d.batch = q[0];
  d.tokens = q[1];
  KILN_CHECK(q[2] < 0 || q[2] % d.q_heads == 0, ErrorCode::kShapeMismatch, "input 0 (query): last axis ",
             q[2], " is not q_num_heads (", d.q_heads, ") heads of one size");
  KILN_CHECK(v[2] < 0 || v[2] % d.kv_heads == 0, ErrorCode::kShapeMismatch, "input 2 (value): last axis ",
             v[2], " is not kv_num_heads (", d.kv_heads, ") heads of one size");
  d.d_k = q[2] < 0 ? Shape::kUnknown : q[2] / d.q_heads;
  d.d_v = v[2] < 0 ? Shape::kUnknown : v[2] / d.kv_heads;
  const auto agree = [](int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; };
  KILN_CHECK(agree(k[0], q[0]) && agree(k[1], q[1]) && (d.d_k < 0 || agree(k[2], d.kv_heads * d.d_k)),
             ErrorCode::kShapeMismatch, "input 1 (key): expected (", q[0], ", ", q[1],
             ", kv_num_heads * d_k = ", d.d_k < 0 ? Shape::kUnknown : d.kv_heads * d.d_k, "), got ", k);
  KILN_CHECK(agree(v[0], q[0]) && agree(v[1], q[1]), ErrorCode::kShapeMismatch, "input 2 (value): expected (",
             q[0], ", ", q[1], ", ...), got ", v);
  return d;
}

std::vector<TensorInfo> infer_linear_attention(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  for (int i = 0; i < 3; ++i) {
    require_rank(ctx, i, 3, 3);
    require_same_dtype(ctx, 0, i);
  }
  const LinearAttentionDims d = linear_attention_dims(ctx.attrs(), ctx.shape(0), ctx.shape(1), ctx.shape(2));
  const std::string& rule = ctx.attrs().get_string("update_rule");
  KILN_CHECK(d.gated == ctx.has_input(4), ErrorCode::kInvalidArgument, "input 4 (decay): update_rule '", rule,
             d.gated ? "' needs it" : "' takes none");
  KILN_CHECK(d.delta == ctx.has_input(5), ErrorCode::kInvalidArgument, "input 5 (beta): update_rule '", rule,
             d.delta ? "' needs it" : "' takes none");
  const Shape state{d.batch, d.kv_heads, d.d_k, d.d_v};
  DType state_dtype = ctx.dtype(0);
  if (ctx.has_input(3)) {
    require_dtype(ctx, 3, kFloatDTypes);
    state_dtype = ctx.dtype(3);
    const Shape& s = ctx.shape(3);
    bool fits = s.ndim() == 4;
    for (int a = 0; fits && a < 4; ++a) fits = s[a] < 0 || state[a] < 0 || s[a] == state[a];
    KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(3),
               ": expected (B, kv_num_heads, d_k, d_v) = ", state, ", got ", s);
  }
  if (d.gated) {
    require_same_dtype(ctx, 0, 4);
    require_rank(ctx, 4, 3, 3);
    const int64_t last = ctx.shape(4)[2];
    KILN_CHECK(last < 0 || last == d.kv_heads || (d.d_k >= 0 && last == d.kv_heads * d.d_k),
               ErrorCode::kShapeMismatch, ctx.input_label(4), ": expected a last axis of kv_num_heads (",
               d.kv_heads, ", one decay per head) or kv_num_heads * d_k, got ", ctx.shape(4));
  }
  if (d.delta) {
    require_same_dtype(ctx, 0, 5);
    require_rank(ctx, 5, 3, 3);
    const int64_t last = ctx.shape(5)[2];
    KILN_CHECK(last < 0 || last == d.kv_heads || last == 1, ErrorCode::kShapeMismatch, ctx.input_label(5),
               ": expected a last axis of kv_num_heads (", d.kv_heads, ") or 1, got ", ctx.shape(5));
  }
  const Shape out{d.batch, d.tokens, d.d_v < 0 ? Shape::kUnknown : d.q_heads * d.d_v};
  if (ctx.num_outputs_requested() == 1) return {TensorInfo{ctx.dtype(0), out}};
  return {TensorInfo{ctx.dtype(0), out}, TensorInfo{state_dtype, state}};
}

template <class T, class S>
void linear_attention_typed(KernelContext& ctx, const LinearAttentionDims& d) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* q = ctx.input(0).data<T>();
  const T* k = ctx.input(1).data<T>();
  const T* v = ctx.input(2).data<T>();
  const S* past = ctx.has_input(3) ? ctx.input(3).data<S>() : nullptr;
  const T* decay = d.gated ? ctx.input(4).data<T>() : nullptr;
  const T* beta = d.delta ? ctx.input(5).data<T>() : nullptr;
  const int64_t decay_width = d.gated ? ctx.input(4).shape()[2] : 0;
  const int64_t beta_width = d.delta ? ctx.input(5).shape()[2] : 0;
  T* out = ctx.output(0).data<T>();
  S* present = ctx.num_outputs() > 1 ? ctx.output(1).data<S>() : nullptr;
  const double scale_attr = ctx.attrs.get_float("scale");
  const C scale = scale_attr == 0 ? C(1) / std::sqrt(static_cast<C>(d.d_k)) : static_cast<C>(scale_attr);
  const int64_t group = d.q_heads / d.kv_heads;
  const int64_t state_size = d.d_k * d.d_v;
  parallel_for(0, d.batch * d.kv_heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> state(static_cast<size_t>(state_size)), update(static_cast<size_t>(d.d_v));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / d.kv_heads, h = bh % d.kv_heads;
      for (int64_t i = 0; i < state_size; ++i)
        state[static_cast<size_t>(i)] =
            past ? static_cast<C>(static_cast<compute_t<S>>(past[bh * state_size + i])) : C(0);
      for (int64_t t = 0; t < d.tokens; ++t) {
        const int64_t row = b * d.tokens + t;
        const T* kt = k + row * d.kv_heads * d.d_k + h * d.d_k;
        const T* vt = v + row * d.kv_heads * d.d_v + h * d.d_v;
        if (d.gated) {
          const T* g = decay + row * decay_width;
          for (int64_t i = 0; i < d.d_k; ++i) {
            const auto factor = std::exp(static_cast<C>(decay_width == d.kv_heads ? g[h] : g[h * d.d_k + i]));
            for (int64_t m = 0; m < d.d_v; ++m) state[static_cast<size_t>(i * d.d_v + m)] *= factor;
          }
        }
        for (int64_t m = 0; m < d.d_v; ++m) update[static_cast<size_t>(m)] = static_cast<C>(vt[m]);
        if (d.delta) {
          const auto rate = static_cast<C>(beta[row * beta_width + (beta_width == 1 ? 0 : h)]);
          for (int64_t m = 0; m < d.d_v; ++m) {
            C retrieved = 0;
            for (int64_t i = 0; i < d.d_k; ++i)
              retrieved += state[static_cast<size_t>(i * d.d_v + m)] * static_cast<C>(kt[i]);
            update[static_cast<size_t>(m)] = rate * (update[static_cast<size_t>(m)] - retrieved);
          }
        }
        for (int64_t i = 0; i < d.d_k; ++i)
          for (int64_t m = 0; m < d.d_v; ++m)
            state[static_cast<size_t>(i * d.d_v + m)] +=
                static_cast<C>(kt[i]) * update[static_cast<size_t>(m)];
        for (int64_t qh = h * group; qh < (h + 1) * group; ++qh) {
          const T* qt = q + row * d.q_heads * d.d_k + qh * d.d_k;
          T* ot = out + row * d.q_heads * d.d_v + qh * d.d_v;
          for (int64_t m = 0; m < d.d_v; ++m) {
            C sum = 0;
            for (int64_t i = 0; i < d.d_k; ++i)
              sum += static_cast<C>(qt[i]) * state[static_cast<size_t>(i * d.d_v + m)];
            ot[m] = convert_value<T>(scale * sum);
          }
        }
      }
      for (int64_t i = 0; present && i < state_size; ++i)
        present[bh * state_size + i] = convert_value<S>(state[static_cast<size_t>(i)]);
    }
  });
}

void linear_attention_kernel(KernelContext& ctx) {
  const LinearAttentionDims d =
      linear_attention_dims(ctx.attrs, ctx.input(0).shape(), ctx.input(1).shape(), ctx.input(2).shape());
  const DType state = ctx.has_input(3) ? ctx.input(3).dtype() : ctx.input(0).dtype();
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      dispatch_dtype(state, [&](auto state_tag) {
        using S = typename decltype(state_tag)::type;
        if constexpr (std::is_floating_point_v<compute_t<S>>) linear_attention_typed<T, S>(ctx, d);
      });
    }
  });
}

KILN_REGISTER_OP(LinearAttention)
    .doc(
        "Attention as a recurrence over a (d_k, d_v) state per key/value head: linear S += k v^T, gated S = "
        "exp(decay) S + k v^T, delta S += k (beta (v - S^T k))^T, gated_delta both; output scale q^T S per "
        "token (scale 0: 1 / sqrt(d_k)). query/key/value are [B, T, heads * dim]; past_state and "
        "present_state "
        "(B, kv_num_heads, d_k, d_v).")
    .input("query")
    .input("key")
    .input("value")
    .input("past_state", Arity::kOptional)
    .input("decay", Arity::kOptional)
    .input("beta", Arity::kOptional)
    .output("output")
    .output("present_state", Arity::kOptional)
    .attr("chunk_size", AttrType::kInt, 64)
    .required_attr("kv_num_heads", AttrType::kInt)
    .required_attr("q_num_heads", AttrType::kInt)
    .attr("scale", AttrType::kFloat, 0.0)
    .attr("update_rule", AttrType::kString, std::string("gated_delta"),
          one_of({"linear", "gated", "delta", "gated_delta"}))
    .infer(infer_linear_attention)
    .kernel(linear_attention_kernel);

}  // namespace
}  // namespace kiln::ops
