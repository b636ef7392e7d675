// RotaryEmbedding (opset 23): rotary positional embeddings (RoPE). The first rotary_embedding_dim
// values of each head are taken as rotary_embedding_dim / 2 pairs (x1, x2), either the two halves
// of that span or, with `interleaved`, its even and odd positions, and each pair is rotated by
// the angle of its token's position:
//   x1' = cos * x1 - sin * x2,   x2' = sin * x1 + cos * x2
// The cos / sin values are rows of the caches picked by position_ids, or given per (batch, token)
// when there are no position ids. The rest of each head passes through.
#include <algorithm>
#include <string>
#include <vector>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

enum Input { kX, kCos, kSin, kPositionIds };

inline constexpr DType kRotaryDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16};
inline constexpr DType kPositionDTypes[] = {DType::kInt64};

// Elements per parallel task.
constexpr int64_t kTaskWork = 1 << 15;

// The input's layout: (batch, heads, sequence, head_size) for 4-D, (batch, sequence, heads *
// head_size) for 3-D; and the span of each head that rotates.
struct RotaryDims {
  bool three_d = false;
  int64_t batch = 0, heads = 0, seq = 0, head_size = 0, rotary_dim = 0;
};

RotaryDims read_dims(const Shape& x, const Attrs& attrs) {
  RotaryDims d;
  d.three_d = x.ndim() == 3;
  d.batch = x[0];
  if (d.three_d) {
    d.heads = attrs.get_int("num_heads");
    d.seq = x[1];
    d.head_size = x[2] < 0 ? Shape::kUnknown : x[2] / d.heads;
  } else {
    d.heads = x[1];
    d.seq = x[2];
    d.head_size = x[3];
  }
  const int64_t dim = attrs.get_int("rotary_embedding_dim");
  d.rotary_dim = dim == 0 ? d.head_size : dim;
  return d;
}

bool dims_agree(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a == b;
}

std::vector<TensorInfo> infer_rotary_embedding(InferContext& ctx) {
  require_dtype(ctx, kX, kRotaryDTypes);
  require_same_dtype(ctx, kX, kCos);
  require_same_dtype(ctx, kX, kSin);
  const Shape& x = ctx.shape(kX);
  KILN_CHECK(
      x.ndim() == 3 || x.ndim() == 4, ErrorCode::kShapeMismatch, ctx.input_label(kX),
      ": expected 4-D (batch, heads, sequence, head_size) or 3-D (batch, sequence, hidden), got shape ", x);
  const Attrs& attrs = ctx.attrs();
  if (x.ndim() == 3) {
    KILN_CHECK(attrs.has("num_heads"), ErrorCode::kInvalidArgument,
               "attribute 'num_heads' is required with a 3-D ", ctx.input_label(kX), " (shape ", x, ")");
    const int64_t heads = attrs.get_int("num_heads");
    KILN_CHECK(x[2] < 0 || x[2] % heads == 0, ErrorCode::kShapeMismatch, ctx.input_label(kX),
               ": expected a hidden size (axis 2) divisible by num_heads = ", heads, ", got shape ", x);
  } else if (attrs.has("num_heads")) {
    KILN_CHECK(dims_agree(attrs.get_int("num_heads"), x[1]), ErrorCode::kShapeMismatch,
               "attribute 'num_heads' = ", attrs.get_int("num_heads"), " does not match the ", x[1],
               " heads of ", ctx.input_label(kX), " of shape ", x);
  }
  const RotaryDims d = read_dims(x, attrs);
  if (d.head_size >= 0) {
    KILN_CHECK(d.rotary_dim <= d.head_size, ErrorCode::kInvalidArgument,
               "attribute 'rotary_embedding_dim': expected at most the head size ", d.head_size, " of ",
               ctx.input_label(kX), " (shape ", x, "), got ", d.rotary_dim);
    KILN_CHECK(d.rotary_dim % 2 == 0, ErrorCode::kShapeMismatch,
               "the rotated span must be even: rotary_embedding_dim (0: the head size of ",
               ctx.input_label(kX), ", shape ", x, ") is ", d.rotary_dim);
  }
  const int64_t half = d.rotary_dim < 0 ? Shape::kUnknown : d.rotary_dim / 2;
  // Cache shape: (max_position_id_plus_1, rotary_dim / 2) indexed by position_ids, else
  // (batch, sequence, rotary_dim / 2).
  Shape want_cache;
  if (ctx.has_input(kPositionIds)) {
    require_dtype(ctx, kPositionIds, kPositionDTypes);
    const Shape& p = ctx.shape(kPositionIds);
    KILN_CHECK(p.ndim() == 2 && dims_agree(p[0], d.batch) && dims_agree(p[1], d.seq),
               ErrorCode::kShapeMismatch, ctx.input_label(kPositionIds),
               ": expected shape (batch_size, sequence_length) = (", d.batch, ", ", d.seq, "), got ", p);
    want_cache = Shape{ctx.shape(kCos).ndim() == 2 ? ctx.shape(kCos)[0] : Shape::kUnknown, half};
  } else {
    want_cache = Shape{d.batch, d.seq, half};
  }
  for (int i : {kCos, kSin}) {
    const Shape& c = ctx.shape(i);
    bool fits = c.ndim() == want_cache.ndim();
    for (int a = 0; fits && a < c.ndim(); ++a) fits = dims_agree(c[a], want_cache[a]);
    KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected shape ",
               ctx.has_input(kPositionIds) ? "(max_position_id_plus_1, rotary_embedding_dim / 2)"
                                           : "(batch_size, sequence_length, rotary_embedding_dim / 2)",
               " = ", want_cache, ", got ", c);
  }
  KILN_CHECK(dims_agree(ctx.shape(kCos)[0], ctx.shape(kSin)[0]), ErrorCode::kShapeMismatch,
             ctx.input_label(kSin), ": expected the shape of ", ctx.input_label(kCos), " ", ctx.shape(kCos),
             ", got ", ctx.shape(kSin));
  return {ctx.input(kX)};
}

// The cache row (offset in elements) of each (batch, token); position ids are checked here, where
// their values are known.
std::vector<int64_t> cache_rows(const KernelContext& ctx, const RotaryDims& d, int64_t half) {
  const int64_t tokens = d.batch * d.seq;
  std::vector<int64_t> rows(static_cast<size_t>(tokens));
  if (!ctx.has_input(kPositionIds)) {
    for (int64_t t = 0; t < tokens; ++t) rows[static_cast<size_t>(t)] = t * half;
    return rows;
  }
  const int64_t* ids = ctx.input(kPositionIds).data<int64_t>();
  const int64_t positions = ctx.input(kCos).shape()[0];
  for (int64_t t = 0; t < tokens; ++t) {
    KILN_CHECK(ids[t] >= 0 && ids[t] < positions, ErrorCode::kOutOfRange, "input 3 (position_ids): value ",
               ids[t], " at index ", t, " is outside [0, ", positions, "), the rows of ",
               "input 1 (cos_cache)");
    rows[static_cast<size_t>(t)] = ids[t] * half;
  }
  return rows;
}

void rotary_embedding_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(kX);
  const RotaryDims d = read_dims(x.shape(), ctx.attrs);
  const bool interleaved = ctx.attrs.get_int("interleaved") != 0;
  const int64_t half = d.rotary_dim / 2, D = d.head_size;
  const std::vector<int64_t> rows = cache_rows(ctx, d, half);
  const int64_t heads_rows = d.batch * d.heads * d.seq;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      using C = compute_t<T>;
      const T* px = x.data<T>();
      const T* pcos = ctx.input(kCos).data<T>();
      const T* psin = ctx.input(kSin).data<T>();
      T* py = ctx.output(0).data<T>();
      // Pair k is (k, k + half) or, interleaved, (2k, 2k + 1).
      const int64_t first_step = interleaved ? 2 : 1, second_offset = interleaved ? 1 : half;
      parallel_for(0, heads_rows, std::max<int64_t>(1, kTaskWork / std::max<int64_t>(1, D)),
                   [&](int64_t r0, int64_t r1) {
                     for (int64_t r = r0; r < r1; ++r) {
                       // r walks the rows of the input in memory order.
                       const int64_t token =
                           d.three_d ? r / d.heads : (r / (d.heads * d.seq)) * d.seq + r % d.seq;
                       const T* cos_row = pcos + rows[static_cast<size_t>(token)];
                       const T* sin_row = psin + rows[static_cast<size_t>(token)];
                       const T* in = px + r * D;
                       T* out = py + r * D;
                       for (int64_t k = 0; k < half; ++k) {
                         const int64_t a = k * first_step, b = a + second_offset;
                         const C x1 = static_cast<C>(in[a]), x2 = static_cast<C>(in[b]);
                         const C c = static_cast<C>(cos_row[k]), s = static_cast<C>(sin_row[k]);
                         out[a] = convert_value<T>(c * x1 - s * x2);
                         out[b] = convert_value<T>(s * x1 + c * x2);
                       }
                       std::copy(in + d.rotary_dim, in + D, out + d.rotary_dim);
                     }
                   });
    }
  });
}

void validate_positive(const AttrValue& v, const std::string& what) {
  const int64_t n = std::get<int64_t>(v.variant());
  KILN_CHECK(n >= 1, ErrorCode::kInvalidArgument, what, ": expected a value >= 1, got ", n);
}

void validate_nonnegative(const AttrValue& v, const std::string& what) {
  const int64_t n = std::get<int64_t>(v.variant());
  KILN_CHECK(n >= 0, ErrorCode::kInvalidArgument, what, ": expected a value >= 0 (0: the head size), got ",
             n);
}

KILN_REGISTER_OP(RotaryEmbedding)
    .doc(
        "Rotary positional embeddings: rotates pairs of each head's first rotary_embedding_dim values by "
        "their token's cos / sin cache entries (halves or interleaved pairs).")
    .input("X")
    .input("cos_cache")
    .input("sin_cache")
    .input("position_ids", Arity::kOptional)
    .output("Y")
    .attr("interleaved", AttrType::kInt, 0, require_flag)
    .optional_attr("num_heads", AttrType::kInt, validate_positive)
    .attr("rotary_embedding_dim", AttrType::kInt, 0, validate_nonnegative)
    .infer(infer_rotary_embedding)
    .kernel(rotary_embedding_kernel);

}  // namespace
}  // namespace kiln::ops
