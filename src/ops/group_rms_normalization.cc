// The normalizations with a stash type (ONNX opsets 21 and 23): GroupNormalization (statistics per
// instance and group of channels, scale and bias per channel) and RMSNormalization (x divided by
// its root mean square over the axes [axis, rank), times a broadcast scale).
//
// Both follow ONNX's two stages. Stage one computes the statistics and the normalized values in
// the precision `stash_type` names; here the statistics are accumulated in double (two passes for
// the variance, which keeps it non-negative) and then rounded to the stash type, and the
// normalized value is rounded to X's dtype, as the function bodies cast it back before stage two.
// Stage two scales (and shifts) the normalized values.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/thread_pool.h"
#include "infer_util.h"
#include "ops/normalization_util.h"

namespace kiln::ops {
namespace {

// ONNX TensorProto codes of the float types stage one may compute in.
constexpr int64_t kOnnxFloat = 1, kOnnxFloat16 = 10, kOnnxDouble = 11, kOnnxBFloat16 = 16;

void validate_stash_type(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v == kOnnxFloat || v == kOnnxFloat16 || v == kOnnxDouble || v == kOnnxBFloat16,
             ErrorCode::kInvalidArgument, what,
             ": expected 1 (float32), 10 (float16), 11 (float64) or 16 (bfloat16), got ", v);
}

void validate_num_groups(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v >= 1, ErrorCode::kInvalidArgument, what, ": expected a value >= 1, got ", v);
}

// A statistic as stage one holds it: rounded to the stash type's precision.
double to_stash(double v, int64_t stash_type) {
  switch (stash_type) {
    case kOnnxDouble:
      return v;
    case kOnnxFloat16:
      return static_cast<double>(static_cast<float>(float16(v)));
    case kOnnxBFloat16:
      return static_cast<double>(static_cast<float>(bfloat16(v)));
    default:
      return static_cast<double>(static_cast<float>(v));
  }
}

// A normalized value as stage two sees it: cast back to X's dtype T.
template <class T>
double as_input_type(double v) {
  return static_cast<double>(static_cast<compute_t<T>>(convert_value<T>(v)));
}

// ---- GroupNormalization ----------------------------------------------------------------------

std::vector<TensorInfo> infer_group_norm(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) of rank >= 2, got shape ", x);
  const int64_t channels = x[1];
  const int64_t groups = ctx.attrs().get_int("num_groups");
  KILN_CHECK(channels < 0 || channels % groups == 0, ErrorCode::kShapeMismatch,
             "attribute 'num_groups': ", groups, " does not divide the ", channels, " channels (axis 1 of ",
             ctx.input_label(0), ", shape ", x, ")");
  for (int i = 1; i <= 2; ++i) {
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.shape(i);
    const bool fits = s.ndim() == 1 && (channels < 0 || s[0] < 0 || s[0] == channels);
    KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected shape ", Shape{channels},
               " (one value per channel: axis 1 of ", ctx.input_label(0), " has ", channels, "), got shape ",
               s);
  }
  return {ctx.input(0)};
}

void group_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double epsilon = ctx.attrs.get_float("epsilon");
  const int64_t stash_type = ctx.attrs.get_int("stash_type");
  const int64_t groups = ctx.attrs.get_int("num_groups");
  const int64_t channels = x.shape()[1];
  if (x.numel() == 0) return;
  const int64_t plane = x.numel() / (x.shape()[0] * channels);  // elements per (n, c)
  const int64_t group_channels = channels / groups;
  const int64_t group_size = group_channels * plane;
  const std::vector<double> scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    auto value = [in](int64_t i) { return static_cast<double>(static_cast<C>(in[i])); };
    // A group's channels are adjacent, so group g of instance n is the contiguous run g.
    parallel_for(0, x.shape()[0] * groups, norm_grain_for(group_size), [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t first = g * group_size;
        double sum = 0;
        for (int64_t i = first; i < first + group_size; ++i) sum += value(i);
        const double exact_mean = sum / static_cast<double>(group_size);
        double sq = 0;
        for (int64_t i = first; i < first + group_size; ++i)
          sq += (value(i) - exact_mean) * (value(i) - exact_mean);
        const double mean = to_stash(exact_mean, stash_type);
        const double inv_std =
            to_stash(1.0 / std::sqrt(sq / static_cast<double>(group_size) + epsilon), stash_type);
        for (int64_t k = 0; k < group_channels; ++k) {
          const auto c = static_cast<size_t>((g % groups) * group_channels + k);
          const int64_t base = first + k * plane;
          for (int64_t i = base; i < base + plane; ++i)
            out[i] = convert_value<T>(as_input_type<T>((value(i) - mean) * inv_std) * scale[c] + bias[c]);
        }
      }
    });
  });
}

// ---- RMSNormalization ------------------------------------------------------------------------

std::vector<TensorInfo> infer_rms_norm(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_dtype(ctx, 1, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected rank >= 1, got shape ",
             x);
  normalize_axis(ctx.attrs().get_int("axis"), x.ndim(), "attribute 'axis'");
  // Scale broadcasts to X in one direction: it may not widen X.
  const Shape& s = ctx.shape(1);
  bool fits = s.ndim() <= x.ndim();
  for (int k = 1; fits && k <= s.ndim(); ++k) {
    const int64_t d = s[s.ndim() - k], n = x[x.ndim() - k];
    fits = d == 1 || d == n || d < 0 || n < 0;
  }
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected a shape that broadcasts to ", x,
             " (the shape of ", ctx.input_label(0), "), got shape ", s);
  return {TensorInfo{ctx.dtype(1), x}};
}

// Where scale's element for X's flat index r * cols + j sits: row_offset(r) + col_offsets[j].
struct ScaleIndex {
  std::vector<int64_t> lead_dims, lead_strides;  // the axes before `axis`
  std::vector<int64_t> col_offsets;

  ScaleIndex(const Shape& x, const Shape& scale, int axis) {
    std::vector<int64_t> strides(static_cast<size_t>(x.ndim()), 0);  // 0 where scale repeats
    int64_t stride = 1;
    for (int k = 1; k <= scale.ndim(); ++k) {
      const int a = x.ndim() - k;
      if (scale[scale.ndim() - k] != 1) strides[static_cast<size_t>(a)] = stride;
      stride *= scale[scale.ndim() - k];
    }
    for (int a = 0; a < axis; ++a) {
      lead_dims.push_back(x[a]);
      lead_strides.push_back(strides[static_cast<size_t>(a)]);
    }
    col_offsets.assign(1, 0);
    for (int a = axis; a < x.ndim(); ++a) {
      std::vector<int64_t> next;
      next.reserve(col_offsets.size() * static_cast<size_t>(x[a]));
      for (int64_t base : col_offsets)
        for (int64_t i = 0; i < x[a]; ++i) next.push_back(base + i * strides[static_cast<size_t>(a)]);
      col_offsets = std::move(next);
    }
  }

  int64_t row_offset(int64_t r) const {
    int64_t off = 0;
    for (size_t a = lead_dims.size(); a-- > 0;) {
      off += (r % lead_dims[a]) * lead_strides[a];
      r /= lead_dims[a];
    }
    return off;
  }
};

void rms_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  if (x.numel() == 0) return;
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), x.ndim(), "attribute 'axis'");
  const double epsilon = ctx.attrs.get_float("epsilon");
  const int64_t stash_type = ctx.attrs.get_int("stash_type");
  const ScaleIndex index(x.shape(), ctx.input(1).shape(), axis);
  const auto cols = static_cast<int64_t>(index.col_offsets.size());
  const int64_t rows = x.numel() / cols;
  const std::vector<double> scale = to_doubles(ctx.input(1));
  Tensor& y = ctx.output(0);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    auto value = [in](int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(in[i])); };
    dispatch_dtype(y.dtype(), [&](auto out_tag) {
      using V = typename decltype(out_tag)::type;
      V* out = y.data<V>();
      parallel_for(0, rows, norm_grain_for(cols), [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const int64_t first = r * cols;
          double sq = 0;
          for (int64_t j = 0; j < cols; ++j) sq += value(first + j) * value(first + j);
          const double inv_rms =
              to_stash(1.0 / std::sqrt(sq / static_cast<double>(cols) + epsilon), stash_type);
          const double* row_scale = scale.data() + index.row_offset(r);
          for (int64_t j = 0; j < cols; ++j) {
            const double normalized = as_input_type<T>(value(first + j) * inv_rms);
            out[first + j] =
                convert_value<V>(normalized * row_scale[index.col_offsets[static_cast<size_t>(j)]]);
          }
        }
      });
    });
  });
}

KILN_REGISTER_OP(GroupNormalization)
    .doc(
        "y = scale[c] * (x - mean) / sqrt(var + epsilon) + bias[c], the statistics per instance over "
        "each of num_groups groups of adjacent channels (and the spatial axes).")
    .input("X")
    .input("scale")
    .input("bias")
    .output("Y")
    .required_attr("num_groups", AttrType::kInt, validate_num_groups)
    .attr("epsilon", AttrType::kFloat, 1e-5, validate_epsilon)
    .attr("stash_type", AttrType::kInt, kOnnxFloat, validate_stash_type)
    .infer(infer_group_norm)
    .kernel(group_norm_kernel);

KILN_REGISTER_OP(RMSNormalization)
    .doc(
        "Y = X / sqrt(mean(X^2) + epsilon) * scale, the mean over the axes [axis, rank); scale "
        "broadcasts to X and gives Y its dtype.")
    .input("X")
    .input("scale")
    .output("Y")
    .attr("axis", AttrType::kInt, -1)
    .attr("epsilon", AttrType::kFloat, 1e-5, validate_epsilon)
    .attr("stash_type", AttrType::kInt, kOnnxFloat, validate_stash_type)
    .infer(infer_rms_norm)
    .kernel(rms_norm_kernel);

}  // namespace
}  // namespace kiln::ops
