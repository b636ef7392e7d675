// Attention (opset 25): scaled dot-product attention over 4-D (batch, heads, sequence, head size)
// or 3-D (batch, sequence, heads * head size) Q, K and V, with grouped-query heads (each K/V head
// serves q_num_heads / kv_num_heads query heads), an internal KV cache (past_key / past_value
// concatenated in front of K / V, returned as present_key / present_value), an external cache's
// valid lengths (nonpad_kv_seqlen), a boolean or additive attn_mask, bottom-right causal and
// sliding-window masking, softcap, a softmax precision, and the QK matrix at one of four stages
// as qk_matmul_output.
//
// The ONNX definition is a function whose intermediates (Q and K scaled by sqrt(scale), the QK
// product, the softcapped and biased scores, the probabilities) are tensors of the input type,
// and whose softmax runs in softmax_precision (default: the input type). The kernel computes in
// float (double for double inputs) and rounds each intermediate to that type where the function
// stores it, so 16-bit inputs give what the definition gives, not a more precise answer.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

enum Input { kQ, kK, kV, kMask, kPastKey, kPastValue, kNonpadKvSeqlen };
enum Output { kY, kPresentKey, kPresentValue, kQkMatmul };

// What qk_matmul_output holds.
enum QkMode { kQkRaw = 0, kQkSoftcapped = 1, kQkBiased = 2, kQkProbabilities = 3 };

// Multiply-adds per parallel task.
constexpr int64_t kTaskWork = 1 << 15;

constexpr int64_t kUnknown = Shape::kUnknown;

int64_t known_div(int64_t a, int64_t b) {
  return a < 0 || b <= 0 ? kUnknown : a / b;
}
int64_t known_sum(int64_t a, int64_t b) {
  return a < 0 || b < 0 ? kUnknown : a + b;
}
int64_t known_product(int64_t a, int64_t b) {
  return a < 0 || b < 0 ? kUnknown : a * b;
}
// Two dimensions agree unless both are known and differ.
bool dims_agree(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a == b;
}

// The problem's extents, read from Q, K, V, past_key and the head-count attributes.
struct AttentionDims {
  bool three_d = false;
  int64_t batch = 0, q_heads = 0, kv_heads = 0;
  int64_t q_len = 0, kv_len = 0, past_len = 0, total_len = 0;
  int64_t head_size = 0, k_head_size = 0, v_head_size = 0;
};

AttentionDims read_dims(const Shape& q, const Shape& k, const Shape& v, const Shape* past_key,
                        const Attrs& attrs) {
  AttentionDims d;
  d.three_d = q.ndim() == 3;
  d.batch = q[0];
  if (d.three_d) {
    d.q_heads = attrs.get_int("q_num_heads");
    d.kv_heads = attrs.get_int("kv_num_heads");
    d.q_len = q[1];
    d.kv_len = k[1];
    d.head_size = known_div(q[2], d.q_heads);
    d.k_head_size = known_div(k[2], d.kv_heads);
    d.v_head_size = known_div(v[2], d.kv_heads);
  } else {
    d.q_heads = q[1];
    d.kv_heads = k[1];
    d.q_len = q[2];
    d.kv_len = k[2];
    d.head_size = q[3];
    d.k_head_size = k[3];
    d.v_head_size = v[3];
  }
  d.past_len = past_key ? (*past_key)[2] : 0;
  d.total_len = known_sum(d.past_len, d.kv_len);
  return d;
}

// The dtype the softmax runs in: softmax_precision, or the input type.
DType softmax_dtype(const Attrs& attrs, DType input) {
  return attrs.has("softmax_precision") ? dtype_from_onnx(attrs.get_int("softmax_precision")) : input;
}

void check_head_attr(const InferContext& ctx, const char* attr, int64_t heads, int input) {
  if (!ctx.attrs().has(attr)) return;
  const int64_t given = ctx.attrs().get_int(attr);
  KILN_CHECK(dims_agree(given, heads), ErrorCode::kShapeMismatch, "attribute '", attr, "' = ", given,
             " does not match the ", heads, " heads of ", ctx.input_label(input), " of shape ",
             ctx.shape(input));
}

// 3-D inputs: the hidden size (last axis) of input i must split into `heads` heads.
void check_hidden_split(const InferContext& ctx, int i, const char* attr, int64_t heads) {
  const int64_t hidden = ctx.shape(i)[2];
  KILN_CHECK(hidden < 0 || hidden % heads == 0, ErrorCode::kShapeMismatch, ctx.input_label(i),
             ": expected a hidden size (axis 2) divisible by ", attr, " = ", heads, ", got shape ",
             ctx.shape(i));
}

void check_mask(const InferContext& ctx, const AttentionDims& d) {
  const Shape& m = ctx.shape(kMask);
  const Shape full{d.batch, d.q_heads, d.q_len, d.total_len};
  bool fits = m.ndim() >= 1 && m.ndim() <= 4;
  for (int a = 0; fits && a < m.ndim(); ++a) {
    const int64_t want = full[4 - m.ndim() + a];
    // The key axis is never broadcast: a shorter mask is padded with masked positions.
    fits = a == m.ndim() - 1 ? (m[a] < 0 || want < 0 || m[a] <= want) : (m[a] == 1 || dims_agree(m[a], want));
  }
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(kMask),
             ": expected a shape of rank 1 to 4 that broadcasts to (batch_size, q_num_heads, "
             "q_sequence_length, total_sequence_length) = ",
             full, ", with a last axis of at most ", d.total_len, ", got ", m);
}

std::vector<TensorInfo> infer_attention(InferContext& ctx) {
  const int outputs = ctx.num_outputs_requested() < 0 ? 1 : ctx.num_outputs_requested();
  KILN_CHECK(outputs >= 1 && outputs <= 4, ErrorCode::kInvalidArgument, "expected 1 to 4 outputs, got ",
             outputs);
  require_dtype(ctx, kQ, kFloatDTypes);
  require_same_dtype(ctx, kQ, kK);
  require_dtype(ctx, kV, kFloatDTypes);
  const int rank = ctx.shape(kQ).ndim();
  KILN_CHECK(
      rank == 3 || rank == 4, ErrorCode::kShapeMismatch, ctx.input_label(kQ),
      ": expected 3-D (batch, sequence, hidden) or 4-D (batch, heads, sequence, head_size), got shape ",
      ctx.shape(kQ));
  for (int i : {kK, kV})
    KILN_CHECK(ctx.shape(i).ndim() == rank, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected ",
               rank, "-D like ", ctx.input_label(kQ), ", got shape ", ctx.shape(i));
  const Attrs& attrs = ctx.attrs();
  if (rank == 3) {
    KILN_CHECK(attrs.has("q_num_heads") && attrs.has("kv_num_heads"), ErrorCode::kInvalidArgument,
               "attributes 'q_num_heads' and 'kv_num_heads' are required with 3-D inputs (",
               ctx.input_label(kQ), " has shape ", ctx.shape(kQ), ")");
    check_hidden_split(ctx, kQ, "q_num_heads", attrs.get_int("q_num_heads"));
    check_hidden_split(ctx, kK, "kv_num_heads", attrs.get_int("kv_num_heads"));
    check_hidden_split(ctx, kV, "kv_num_heads", attrs.get_int("kv_num_heads"));
  } else {
    // Opset 25 forbids the attributes with 4-D inputs; older models may still state them.
    check_head_attr(ctx, "q_num_heads", ctx.shape(kQ)[1], kQ);
    check_head_attr(ctx, "kv_num_heads", ctx.shape(kK)[1], kK);
  }
  const bool has_past = ctx.has_input(kPastKey) || ctx.has_input(kPastValue);
  KILN_CHECK(ctx.has_input(kPastKey) == ctx.has_input(kPastValue), ErrorCode::kInvalidArgument,
             ctx.input_label(kPastKey), " and ", ctx.input_label(kPastValue),
             " must be given together, got only ",
             ctx.input_label(ctx.has_input(kPastKey) ? kPastKey : kPastValue));
  const AttentionDims d = read_dims(ctx.shape(kQ), ctx.shape(kK), ctx.shape(kV),
                                    has_past ? &ctx.shape(kPastKey) : nullptr, attrs);
  const std::string q_label = ctx.input_label(kQ);
  for (int i : {kK, kV})
    KILN_CHECK(dims_agree(ctx.shape(i)[0], d.batch), ErrorCode::kShapeMismatch, ctx.input_label(i),
               ": expected batch size ", d.batch, " (from ", q_label, "), got shape ", ctx.shape(i));
  if (rank == 4)
    KILN_CHECK(dims_agree(ctx.shape(kV)[1], d.kv_heads), ErrorCode::kShapeMismatch, ctx.input_label(kV),
               ": expected ", d.kv_heads, " heads like ", ctx.input_label(kK), ", got shape ", ctx.shape(kV));
  KILN_CHECK(dims_agree(ctx.shape(kV)[rank - 2], d.kv_len), ErrorCode::kShapeMismatch, ctx.input_label(kV),
             ": expected sequence length ", d.kv_len, " like ", ctx.input_label(kK), ", got shape ",
             ctx.shape(kV));
  KILN_CHECK(
      d.q_heads < 0 || d.kv_heads < 0 || (d.kv_heads == 0 ? d.q_heads == 0 : d.q_heads % d.kv_heads == 0),
      ErrorCode::kShapeMismatch, ctx.input_label(kK), ": expected a head count that divides the ", d.q_heads,
      " query heads of ", q_label, ", got ", d.kv_heads, " heads (shape ", ctx.shape(kK), ")");
  KILN_CHECK(dims_agree(d.k_head_size, d.head_size), ErrorCode::kShapeMismatch, ctx.input_label(kK),
             ": expected head size ", d.head_size, " like ", q_label, ", got ", d.k_head_size, " (shape ",
             ctx.shape(kK), ")");
  if (has_past) {
    require_same_dtype(ctx, kK, kPastKey);
    require_same_dtype(ctx, kV, kPastValue);
    const Shape want_key{d.batch, d.kv_heads, d.past_len, d.head_size};
    const Shape want_value{d.batch, d.kv_heads, d.past_len, d.v_head_size};
    for (const auto& [i, want] : {std::pair{kPastKey, want_key}, std::pair{kPastValue, want_value}}) {
      const Shape& s = ctx.shape(i);
      bool fits = s.ndim() == 4;
      for (int a = 0; fits && a < 4; ++a) fits = dims_agree(s[a], want[a]);
      KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(i),
                 ": expected shape (batch_size, kv_num_heads, past_sequence_length, ",
                 i == kPastKey ? "head_size" : "v_head_size", ") = ", want, ", got ", s);
    }
  }
  if (ctx.has_input(kNonpadKvSeqlen)) {
    KILN_CHECK(!has_past, ErrorCode::kInvalidArgument, ctx.input_label(kNonpadKvSeqlen),
               " cannot be combined with ", ctx.input_label(kPastKey), " and ", ctx.input_label(kPastValue));
    static constexpr DType kInt64[] = {DType::kInt64};
    require_dtype(ctx, kNonpadKvSeqlen, kInt64);
    const Shape& s = ctx.shape(kNonpadKvSeqlen);
    KILN_CHECK(s.ndim() == 1 && dims_agree(s[0], d.batch), ErrorCode::kShapeMismatch,
               ctx.input_label(kNonpadKvSeqlen), ": expected shape (batch_size,) = ", Shape{d.batch},
               ", got ", s);
  }
  if (ctx.has_input(kMask)) check_mask(ctx, d);

  const DType t1 = ctx.dtype(kQ), t2 = ctx.dtype(kV);
  std::vector<TensorInfo> out;
  if (d.three_d) {
    out.push_back({t1, Shape{d.batch, d.q_len, known_product(d.q_heads, d.v_head_size)}});
  } else {
    out.push_back({t1, Shape{d.batch, d.q_heads, d.q_len, d.v_head_size}});
  }
  if (outputs > kPresentKey) out.push_back({t1, Shape{d.batch, d.kv_heads, d.total_len, d.head_size}});
  if (outputs > kPresentValue) out.push_back({t2, Shape{d.batch, d.kv_heads, d.total_len, d.v_head_size}});
  if (outputs > kQkMatmul) out.push_back({t1, Shape{d.batch, d.q_heads, d.q_len, d.total_len}});
  return out;
}

// The value x (computed in C) takes once stored as a T: rounded to the 16-bit grid, else itself.
template <class T, class C>
C stored_as(C x) {
  if constexpr (std::is_same_v<T, C>) {
    return x;
  } else {
    return static_cast<C>(convert_value<T>(x));
  }
}

// Row `j` of the keys (or values) of one batch entry and K/V head: rows before past_len come from
// the cache, the rest from K (or V), which 3-D inputs hold as (batch, sequence, heads * size).
template <class S>
const S* kv_row(const S* past, const S* current, const AttentionDims& d, int64_t b, int64_t g, int64_t j,
                int64_t size) {
  if (j < d.past_len) return past + ((b * d.kv_heads + g) * d.past_len + j) * size;
  const int64_t t = j - d.past_len;
  return current +
         (d.three_d ? (b * d.kv_len + t) * d.kv_heads + g : (b * d.kv_heads + g) * d.kv_len + t) * size;
}

// The keys or values of every (batch, K/V head) in C, with the present_key / present_value output
// (when asked for) receiving the rows as they are. Keys are scaled by sqrt(scale) and rounded to T,
// as the definition's KScaled, and laid out transposed, (batch * kv_heads) blocks of (size,
// total_len), so that a query's scores accumulate along contiguous keys. Values keep their rows,
// (batch * kv_heads * total_len) rows of `size`.
template <class C, class T>
std::vector<C> gather_kv(const Tensor* past, const Tensor& current, Tensor* present, const AttentionDims& d,
                         int64_t size, bool keys, C scale) {
  const int64_t L = d.total_len, rows = d.batch * d.kv_heads * L;
  std::vector<C> out(static_cast<size_t>(rows * size));
  const T* pp = past ? past->data<T>() : nullptr;
  const T* pc = current.data<T>();
  T* pres = present ? present->data<T>() : nullptr;
  C* po = out.data();
  parallel_for(0, rows, std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, size)),
               [&](int64_t r0, int64_t r1) {
                 for (int64_t r = r0; r < r1; ++r) {
                   const int64_t j = r % L, bg = r / L;
                   const T* src = kv_row(pp, pc, d, bg / d.kv_heads, bg % d.kv_heads, j, size);
                   if (pres) std::copy(src, src + size, pres + r * size);
                   if (keys) {
                     C* block = po + bg * size * L;
                     for (int64_t e = 0; e < size; ++e)
                       block[e * L + j] = stored_as<T>(static_cast<C>(src[e]) * scale);
                   } else {
                     std::transform(src, src + size, po + r * size, [](T v) { return static_cast<C>(v); });
                   }
                 }
               });
  return out;
}

// attn_mask as additive values in C, in its own shape: a boolean mask gives 0 (attend) or -inf,
// any other mask its values rounded to T.
template <class C, class T>
std::vector<C> mask_values(const Tensor& mask) {
  std::vector<C> out(static_cast<size_t>(mask.numel()));
  dispatch_dtype(mask.dtype(), [&](auto tag) {
    using M = typename decltype(tag)::type;
    const M* pm = mask.data<M>();
    for (size_t k = 0; k < out.size(); ++k) {
      if constexpr (std::is_same_v<M, bool>) {
        out[k] = pm[k] ? C(0) : -std::numeric_limits<C>::infinity();
      } else {
        out[k] = stored_as<T>(static_cast<C>(static_cast<compute_t<M>>(pm[k])));
      }
    }
  });
  return out;
}

// Element strides of the mask along (batch, head, query) once right-aligned to 4-D; 0 where it
// broadcasts. Its key axis is contiguous.
std::array<int64_t, 3> mask_strides(const Shape& m) {
  int64_t dims[4] = {1, 1, 1, 1};
  for (int a = 0; a < m.ndim(); ++a) dims[4 - m.ndim() + a] = m[a];
  std::array<int64_t, 3> strides{};
  int64_t stride = dims[3];
  for (int a = 2; a >= 0; --a) {
    strides[static_cast<size_t>(a)] = dims[a] == 1 ? 0 : stride;
    stride *= dims[a];
  }
  return strides;
}

// The softmax of one row of scores (in C) in precision P, step by step as the ONNX reference
// computes it in numpy: the shifted scores, their exponentials, their sum and the quotients are
// each rounded to P, which for 16-bit P moves results by more than an ulp against one rounding at
// the end. A row whose maximum is -inf has no attendable key and gives zeros.
template <class P, class C>
void softmax_row(const C* x, C* p, int64_t n) {
  using W = compute_t<P>;
  W max = -std::numeric_limits<W>::infinity();
  for (int64_t j = 0; j < n; ++j) {
    const W v = stored_as<P>(static_cast<W>(x[j]));
    if (v > max || std::isnan(v)) max = v;
    if (std::isnan(max)) break;
  }
  if (max == -std::numeric_limits<W>::infinity()) max = 0;
  W sum = 0;
  for (int64_t j = 0; j < n; ++j) {
    const W e = stored_as<P>(std::exp(stored_as<P>(stored_as<P>(static_cast<W>(x[j])) - max)));
    p[j] = static_cast<C>(e);
    sum += e;
  }
  sum = stored_as<P>(sum);
  if (sum == 0) sum = 1;
  for (int64_t j = 0; j < n; ++j) p[j] = static_cast<C>(stored_as<P>(static_cast<W>(p[j]) / sum));
}

struct AttentionOptions {
  bool causal = false;
  int64_t left_window = -1, right_window = -1;
  double scale = 0, softcap = 0;
  int64_t qk_mode = kQkRaw;
};

// T: Q's dtype (Y, the intermediates); P: the softmax's. V may be any float type (T2).
template <class T, class P>
void attention_typed(KernelContext& ctx, const AttentionDims& d, const AttentionOptions& opt) {
  using C = compute_t<T>;
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  const bool has_past = ctx.has_input(kPastKey), has_mask = ctx.has_input(kMask);
  const bool has_nonpad = ctx.has_input(kNonpadKvSeqlen);
  const int n_out = ctx.num_outputs();
  const int64_t L = d.total_len, D = d.head_size, Dv = d.v_head_size;
  const C sqrt_scale = stored_as<T>(static_cast<C>(std::sqrt(opt.scale)));
  const C softcap = stored_as<T>(static_cast<C>(opt.softcap));

  const std::vector<C> keys_t =
      gather_kv<C, T>(has_past ? &ctx.input(kPastKey) : nullptr, ctx.input(kK),
                      n_out > kPresentKey ? &ctx.output(kPresentKey) : nullptr, d, D, true, sqrt_scale);
  std::vector<C> values;
  dispatch_dtype(ctx.input(kV).dtype(), [&](auto tag) {
    using V = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<V>))
      values =
          gather_kv<C, V>(has_past ? &ctx.input(kPastValue) : nullptr, ctx.input(kV),
                          n_out > kPresentValue ? &ctx.output(kPresentValue) : nullptr, d, Dv, false, C(1));
  });
  std::vector<C> mask;
  std::array<int64_t, 3> mask_stride{};
  int64_t mask_len = 0;
  if (has_mask) {
    const Tensor& m = ctx.input(kMask);
    mask = mask_values<C, T>(m);
    mask_stride = mask_strides(m.shape());
    mask_len = m.shape()[m.ndim() - 1];
  }
  const std::vector<int64_t> nonpad =
      has_nonpad ? ctx.input(kNonpadKvSeqlen).to_vector<int64_t>() : std::vector<int64_t>{};

  const T* pq = ctx.input(kQ).data<T>();
  T* py = ctx.output(kY).data<T>();
  T* pqk = n_out > kQkMatmul ? ctx.output(kQkMatmul).data<T>() : nullptr;
  const int64_t group = d.kv_heads > 0 ? d.q_heads / d.kv_heads : 1;
  const int64_t rows = d.batch * d.q_heads * d.q_len;

  // One task takes consecutive query rows, which mostly share a head and so its keys and values.
  parallel_for(
      0, rows, std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, L * (D + Dv))),
      [&](int64_t r0, int64_t r1) {
        std::vector<C> scratch(static_cast<size_t>(D + 3 * L + Dv));
        C* q = scratch.data();
        C* scores = q + D;
        C* bias = scores + L;
        C* probs = bias + L;
        C* y = probs + L;
        for (int64_t r = r0; r < r1; ++r) {
          const int64_t i = r % d.q_len, h = (r / d.q_len) % d.q_heads, b = r / (d.q_len * d.q_heads);
          const int64_t bg = b * d.kv_heads + h / group;
          // Where this row's query and output sit: 3-D tensors interleave the heads on the last axis.
          const int64_t q_row = d.three_d ? (b * d.q_len + i) * d.q_heads + h : r;
          T* qk_row = pqk ? pqk + r * L : nullptr;
          auto emit_qk = [&](int64_t mode, const C* stage) {
            if (qk_row && opt.qk_mode == mode)
              for (int64_t j = 0; j < L; ++j) qk_row[j] = convert_value<T>(stage[j]);
          };

          const T* q_src = pq + q_row * D;
          for (int64_t e = 0; e < D; ++e) q[e] = stored_as<T>(static_cast<C>(q_src[e]) * sqrt_scale);
          std::fill(scores, scores + L, C(0));
          const C* k_block = keys_t.data() + bg * D * L;
          for (int64_t e = 0; e < D; ++e) {
            const C qe = q[e];
            const C* k_row = k_block + e * L;
            for (int64_t j = 0; j < L; ++j) scores[j] += qe * k_row[j];
          }
          for (int64_t j = 0; j < L; ++j) scores[j] = stored_as<T>(scores[j]);
          emit_qk(kQkRaw, scores);
          if (softcap > 0)
            for (int64_t j = 0; j < L; ++j)
              scores[j] = stored_as<T>(stored_as<T>(std::tanh(stored_as<T>(scores[j] / softcap))) * softcap);
          emit_qk(kQkSoftcapped, scores);

          // The bias: the mask's value (keys past its end are masked), plus -inf wherever the causal
          // frontier, the window or the external cache's valid length excludes the key. The frontier
          // is bottom-right aligned: query i sits at absolute position i + offset.
          const int64_t offset = has_past     ? d.past_len
                                 : has_nonpad ? nonpad[static_cast<size_t>(b)] - d.q_len
                                              : 0;
          const int64_t position = i + offset;
          const int64_t valid = has_nonpad ? nonpad[static_cast<size_t>(b)] : L;
          const C* mask_row = mask.data() + b * mask_stride[0] + h * mask_stride[1] + i * mask_stride[2];
          bool all_masked = true;
          for (int64_t j = 0; j < L; ++j) {
            C v = !has_mask ? C(0) : j < mask_len ? mask_row[j] : kNegInf;
            const bool allowed = (!opt.causal || j <= position) &&
                                 (opt.left_window < 0 || position - j <= opt.left_window) &&
                                 (opt.right_window < 0 || j - position <= opt.right_window) && j < valid;
            if (!allowed) v += kNegInf;
            bias[j] = v;
            all_masked = all_masked && v == kNegInf;
          }
          for (int64_t j = 0; j < L; ++j) scores[j] = stored_as<T>(scores[j] + bias[j]);
          emit_qk(kQkBiased, scores);

          softmax_row<P>(scores, probs, L);
          // A query no key may attend gets zero probabilities (and a zero output), whatever its scores.
          for (int64_t j = 0; j < L; ++j) probs[j] = all_masked ? C(0) : stored_as<T>(probs[j]);
          emit_qk(kQkProbabilities, probs);

          std::fill(y, y + Dv, C(0));
          const C* v_block = values.data() + bg * L * Dv;
          for (int64_t j = 0; j < L; ++j) {
            const C p = probs[j];
            const C* v_row = v_block + j * Dv;
            for (int64_t e = 0; e < Dv; ++e) y[e] += p * v_row[e];
          }
          T* y_row = py + q_row * Dv;
          for (int64_t e = 0; e < Dv; ++e) y_row[e] = convert_value<T>(y[e]);
        }
      });
}

void attention_kernel(KernelContext& ctx) {
  const Tensor& q = ctx.input(kQ);
  const bool has_past = ctx.has_input(kPastKey);
  const AttentionDims d = read_dims(q.shape(), ctx.input(kK).shape(), ctx.input(kV).shape(),
                                    has_past ? &ctx.input(kPastKey).shape() : nullptr, ctx.attrs);
  AttentionOptions opt;
  opt.causal = ctx.attrs.get_int("is_causal") != 0;
  opt.left_window = ctx.attrs.get_int("left_window_size");
  opt.right_window = ctx.attrs.get_int("right_window_size");
  opt.softcap = ctx.attrs.get_float("softcap");
  opt.qk_mode = ctx.attrs.get_int("qk_matmul_output_mode");
  opt.scale = ctx.attrs.has("scale") ? ctx.attrs.get_float("scale")
                                     : 1.0 / std::sqrt(static_cast<double>(d.head_size));
  dispatch_dtype(q.dtype(), [&](auto t_tag) {
    using T = typename decltype(t_tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      dispatch_dtype(softmax_dtype(ctx.attrs, q.dtype()), [&](auto p_tag) {
        using P = typename decltype(p_tag)::type;
        if constexpr (is_floating(dtype_of<P>)) attention_typed<T, P>(ctx, d, opt);
      });
    }
  });
}

void validate_heads(const AttrValue& v, const std::string& what) {
  const int64_t heads = std::get<int64_t>(v.variant());
  KILN_CHECK(heads >= 1, ErrorCode::kInvalidArgument, what, ": expected a value >= 1, got ", heads);
}

void validate_window(const AttrValue& v, const std::string& what) {
  const int64_t size = std::get<int64_t>(v.variant());
  KILN_CHECK(size >= -1, ErrorCode::kInvalidArgument, what, ": expected -1 (unbounded) or a value >= 0, got ",
             size);
}

void validate_qk_mode(const AttrValue& v, const std::string& what) {
  const int64_t mode = std::get<int64_t>(v.variant());
  KILN_CHECK(mode >= kQkRaw && mode <= kQkProbabilities, ErrorCode::kInvalidArgument, what,
             ": expected 0 (raw), 1 (softcapped), 2 (biased) or 3 (softmax), got ", mode);
}

void validate_nonnegative(const AttrValue& v, const std::string& what) {
  const double x = std::get<double>(v.variant());
  // Q and K are each scaled by sqrt(scale), so a negative scale has no meaning here.
  KILN_CHECK(x >= 0, ErrorCode::kInvalidArgument, what, ": expected a value >= 0, got ", x);
}

void validate_softmax_precision(const AttrValue& v, const std::string& what) {
  const int64_t code = std::get<int64_t>(v.variant());
  KILN_CHECK(code == 1 || code == 10 || code == 11 || code == 16, ErrorCode::kInvalidArgument, what,
             ": expected 1 (FLOAT), 10 (FLOAT16), 11 (DOUBLE) or 16 (BFLOAT16), got ", code);
}

KILN_REGISTER_OP(Attention)
    .doc(
        "softmax(Q K^T * scale + bias) V over 3-D or 4-D Q, K, V with grouped-query heads, an optional "
        "KV cache, boolean or additive mask, causal and sliding-window masking, and softcap.")
    .input("Q")
    .input("K")
    .input("V")
    .input("attn_mask", Arity::kOptional)
    .input("past_key", Arity::kOptional)
    .input("past_value", Arity::kOptional)
    .input("nonpad_kv_seqlen", Arity::kOptional)
    .output("Y")
    .output("present_key", Arity::kOptional)
    .output("present_value", Arity::kOptional)
    .output("qk_matmul_output", Arity::kOptional)
    .attr("is_causal", AttrType::kInt, 0, require_flag)
    .optional_attr("kv_num_heads", AttrType::kInt, validate_heads)
    .attr("left_window_size", AttrType::kInt, -1, validate_window)
    .optional_attr("q_num_heads", AttrType::kInt, validate_heads)
    .attr("qk_matmul_output_mode", AttrType::kInt, 0, validate_qk_mode)
    .attr("right_window_size", AttrType::kInt, -1, validate_window)
    .optional_attr("scale", AttrType::kFloat, validate_nonnegative)
    .attr("softcap", AttrType::kFloat, 0.0, validate_nonnegative)
    .optional_attr("softmax_precision", AttrType::kInt, validate_softmax_precision)
    .infer(infer_attention)
    .kernel(attention_kernel);

}  // namespace
}  // namespace kiln::ops
