// Normalization ops: BatchNormalization (inference, and training mode with batch statistics and
// updated running statistics), InstanceNormalization, LayerNormalization (with its optional Mean
// and InvStdDev outputs), LpNormalization, MeanVarianceNormalization and LRN (AlexNet's local
// response normalization across channels). Statistics are
// accumulated in double with two passes (mean, then squared deviations), which keeps the
// variance non-negative and accurate for inputs far from zero.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "gradient.h"
#include "infer_util.h"
#include "ops/normalization_util.h"

namespace kiln::ops {
namespace {

void validate_momentum(const AttrValue& value, const std::string& what) {
  const double v = std::get<double>(value.variant());
  KILN_CHECK(std::isfinite(v) && v >= 0 && v <= 1, ErrorCode::kInvalidArgument, what,
             ": expected a value in [0, 1], got ", v);
}

// The number of outputs a call asked for: 1 by default, at most `max`.
int requested_outputs(const InferContext& ctx, int max, const std::string& why_not_more = "") {
  const int n = ctx.num_outputs_requested() < 0 ? 1 : ctx.num_outputs_requested();
  KILN_CHECK(n >= 1 && n <= max, ErrorCode::kInvalidArgument, "expected 1",
             max > 1 ? " to " + std::to_string(max) : "", " outputs, got ", n, why_not_more);
  return n;
}

// Throws unless input i is a 1-D tensor of `channels` elements (-1: unknown, not checked).
void require_per_channel(const InferContext& ctx, int i, int64_t channels) {
  const Shape& s = ctx.shape(i);
  const bool fits = s.ndim() == 1 && (channels < 0 || s[0] < 0 || s[0] == channels);
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected shape ", Shape{channels},
             " (one value per channel: axis 1 of ", ctx.input_label(0), " has ", channels, "), got shape ",
             s);
}

// Mean and (population) variance of the n values at p.
template <class T>
std::pair<double, double> moments(const T* p, int64_t n) {
  if (n == 0) return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(static_cast<compute_t<T>>(p[i]));
  const double mean = sum / static_cast<double>(n);
  double sq = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(static_cast<compute_t<T>>(p[i])) - mean;
    sq += d * d;
  }
  return {mean, sq / static_cast<double>(n)};
}

// y = x * a[c] + b[c] over (planes, size) where plane p has channel p % channels.
template <class T>
void affine_per_channel(const T* x, T* y, int64_t planes, int64_t size, int64_t channels,
                        const std::vector<double>& a, const std::vector<double>& b) {
  using C = compute_t<T>;
  parallel_for(0, planes, norm_grain_for(size), [&](int64_t begin, int64_t end) {
    for (int64_t p = begin; p < end; ++p) {
      const auto c = static_cast<size_t>(p % channels);
      const C ac = static_cast<C>(a[c]), bc = static_cast<C>(b[c]);
      const T* in = x + p * size;
      T* out = y + p * size;
      for (int64_t i = 0; i < size; ++i) out[i] = convert_value<T>(static_cast<C>(in[i]) * ac + bc);
    }
  });
}

// ---- BatchNormalization ----------------------------------------------------------------------

std::vector<TensorInfo> infer_batch_norm(InferContext& ctx) {
  const bool training = ctx.attrs().get_int("training_mode") == 1;
  const int outputs = requested_outputs(
      ctx, training ? 3 : 1,
      training ? "" : " (running_mean and running_var are outputs only with training_mode=1)");
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) of rank >= 2, got shape ", x);
  for (int i = 1; i <= 4; ++i) {
    require_dtype(ctx, i, kFloatDTypes);
    require_per_channel(ctx, i, x[1]);
  }
  require_same_dtype(ctx, 1, 2);
  require_same_dtype(ctx, 3, 4);
  std::vector<TensorInfo> out{ctx.input(0)};
  for (int i = 1; i < outputs; ++i) out.push_back(TensorInfo{ctx.dtype(3), Shape{x[1]}});
  return out;
}

void batch_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double epsilon = ctx.attrs.get_float("epsilon");
  const bool training = ctx.attrs.get_int("training_mode") == 1;
  const int64_t channels = x.shape()[1];
  const int64_t planes = x.shape()[0] * channels;
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  const auto scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
  auto mean = to_doubles(ctx.input(3)), var = to_doubles(ctx.input(4));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    if (training) {
      // Batch statistics per channel, over the batch and spatial axes; the running statistics
      // are then blended: running = input * momentum + batch * (1 - momentum). An empty batch
      // carries no statistics, so it leaves the running ones as they are.
      const int64_t batch = x.shape()[0];
      std::vector<double> batch_mean = mean, batch_var = var;
      auto value = [in](int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(in[i])); };
      parallel_for(0, channels, norm_grain_for(batch * size), [&](int64_t begin, int64_t end) {
        const int64_t n = batch * size;
        for (int64_t c = begin; c < end && n > 0; ++c) {
          double sum = 0, sq = 0;
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t i = 0; i < size; ++i) sum += value((b * channels + c) * size + i);
          const double m = sum / static_cast<double>(n);
          for (int64_t b = 0; b < batch; ++b)
            for (int64_t i = 0; i < size; ++i) {
              const double d = value((b * channels + c) * size + i) - m;
              sq += d * d;
            }
          batch_mean[static_cast<size_t>(c)] = m;
          batch_var[static_cast<size_t>(c)] = sq / static_cast<double>(n);
        }
      });
      const double momentum = ctx.attrs.get_float("momentum");
      for (int k = 1; k < ctx.num_outputs(); ++k) {
        const auto& running = k == 1 ? mean : var;
        const auto& current = k == 1 ? batch_mean : batch_var;
        Tensor& out = ctx.output(k);
        dispatch_dtype(out.dtype(), [&](auto otag) {
          using U = typename decltype(otag)::type;
          U* o = out.data<U>();
          for (size_t c = 0; c < current.size(); ++c)
            o[c] = convert_value<U>(running[c] * momentum + current[c] * (1 - momentum));
        });
      }
      mean = std::move(batch_mean);
      var = std::move(batch_var);
    }
    std::vector<double> a(static_cast<size_t>(channels)), b(static_cast<size_t>(channels));
    for (size_t c = 0; c < a.size(); ++c) {
      a[c] = scale[c] / std::sqrt(var[c] + epsilon);
      b[c] = bias[c] - mean[c] * a[c];
    }
    affine_per_channel(in, ctx.output(0).data<T>(), planes, size, channels, a, b);
  });
}

// ---- InstanceNormalization -------------------------------------------------------------------

std::vector<TensorInfo> infer_instance_norm(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) with at least one spatial axis (rank >= 3), got shape ", x);
  for (int i = 1; i <= 2; ++i) {
    require_same_dtype(ctx, 0, i);
    require_per_channel(ctx, i, x[1]);
  }
  return {ctx.input(0)};
}

void instance_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const double epsilon = ctx.attrs.get_float("epsilon");
  const int64_t channels = x.shape()[1];
  const int64_t planes = x.shape()[0] * channels;
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  const auto scale = to_doubles(ctx.input(1)), bias = to_doubles(ctx.input(2));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    parallel_for(0, planes, norm_grain_for(size), [&](int64_t begin, int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const auto [mean, var] = moments(in + p * size, size);
        const auto c = static_cast<size_t>(p % channels);
        const double a = scale[c] / std::sqrt(var + epsilon);
        const C ac = static_cast<C>(a), bc = static_cast<C>(bias[c] - mean * a);
        for (int64_t i = p * size; i < (p + 1) * size; ++i)
          out[i] = convert_value<T>(static_cast<C>(in[i]) * ac + bc);
      }
    });
  });
}

// ---- LayerNormalization ----------------------------------------------------------------------

// ONNX TensorProto codes allowed for stash_type (the dtype of Mean and InvStdDev).
constexpr int64_t kOnnxFloat = 1, kOnnxBFloat16 = 16;

void validate_stash_type(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v == kOnnxFloat || v == kOnnxBFloat16, ErrorCode::kInvalidArgument, what,
             ": expected 1 (float32) or 16 (bfloat16), got ", v);
}

// Throws unless input i (Scale or B) broadcasts to `normalized` (the shape X.shape[axis:]).
void require_broadcasts_to(const InferContext& ctx, int i, const Shape& normalized) {
  const Shape& s = ctx.shape(i);
  bool fits = s.ndim() <= normalized.ndim();
  for (int k = 1; fits && k <= s.ndim(); ++k) {
    const int64_t d = s[s.ndim() - k], n = normalized[normalized.ndim() - k];
    fits = d == 1 || d == n || d < 0 || n < 0;
  }
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected a shape that broadcasts to ",
             normalized, " (the normalized axes of ", ctx.input_label(0), "), got shape ", s);
}

std::vector<TensorInfo> infer_layer_norm(InferContext& ctx) {
  const int outputs = requested_outputs(ctx, 3);
  require_dtype(ctx, 0, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected rank >= 1, got shape ",
             x);
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), x.ndim(), "attribute 'axis'");
  const Shape normalized(std::vector<int64_t>(x.begin() + axis, x.end()));
  for (int i = 1; i <= 2; ++i) {
    if (!ctx.has_input(i)) continue;
    require_same_dtype(ctx, 0, i);
    require_broadcasts_to(ctx, i, normalized);
  }
  std::vector<TensorInfo> out{ctx.input(0)};
  Shape stats(std::vector<int64_t>(x.begin(), x.begin() + axis));
  for (int i = axis; i < x.ndim(); ++i) stats.push_back(1);
  const DType stash = ctx.attrs().get_int("stash_type") == kOnnxBFloat16 ? DType::kBFloat16 : DType::kFloat32;
  for (int i = 1; i < outputs; ++i) out.push_back(TensorInfo{stash, stats});
  return out;
}

// A parameter broadcast to the normalized shape, flattened: cols values as doubles.
std::vector<double> expand_to(const Tensor& param, const Shape& normalized) {
  const std::vector<double> values = to_doubles(param);
  const int64_t cols = normalized.numel();
  if (static_cast<int64_t>(values.size()) == cols) return values;
  std::vector<double> out(static_cast<size_t>(cols));
  const Shape& s = param.shape();
  const int lead = normalized.ndim() - s.ndim();
  const std::vector<int64_t> strides = contiguous_strides(s);
  for (int64_t j = 0; j < cols; ++j) {
    int64_t rest = j, src = 0;
    for (int a = normalized.ndim() - 1; a >= lead; --a) {
      const int64_t coord = rest % normalized[a];
      rest /= normalized[a];
      if (s[a - lead] != 1) src += coord * strides[static_cast<size_t>(a - lead)];
    }
    out[static_cast<size_t>(j)] = values[static_cast<size_t>(src)];
  }
  return out;
}

void layer_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), x.ndim(), "attribute 'axis'");
  const double epsilon = ctx.attrs.get_float("epsilon");
  const Shape normalized(std::vector<int64_t>(x.shape().begin() + axis, x.shape().end()));
  const int64_t cols = normalized.numel();
  const int64_t rows = cols == 0
                           ? Shape(std::vector<int64_t>(x.shape().begin(), x.shape().begin() + axis)).numel()
                           : x.numel() / cols;
  const std::vector<double> scale = expand_to(ctx.input(1), normalized);
  const std::vector<double> bias = ctx.has_input(2) ? expand_to(ctx.input(2), normalized)
                                                    : std::vector<double>(static_cast<size_t>(cols), 0.0);
  const bool stash_bf16 = ctx.attrs.get_int("stash_type") == kOnnxBFloat16;
  // The statistics take the stash type's precision before they normalize, as ONNX specifies.
  auto stash = [stash_bf16](double v) {
    return stash_bf16 ? static_cast<double>(static_cast<float>(bfloat16(v)))
                      : static_cast<double>(static_cast<float>(v));
  };
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    parallel_for(0, rows, norm_grain_for(cols), [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        const auto [m, v] = moments(in + r * cols, cols);
        const double mean = stash(m), inv_std = stash(1.0 / std::sqrt(v + epsilon));
        for (int64_t j = 0; j < cols; ++j) {
          const auto k = static_cast<size_t>(j);
          const double normalized_value =
              (static_cast<double>(static_cast<C>(in[r * cols + j])) - mean) * inv_std;
          out[r * cols + j] = convert_value<T>(static_cast<C>(normalized_value * scale[k] + bias[k]));
        }
        for (int k = 1; k < ctx.num_outputs(); ++k) {
          const double value = k == 1 ? mean : inv_std;
          if (stash_bf16) {
            ctx.output(k).data<bfloat16>()[r] = bfloat16(value);
          } else {
            ctx.output(k).data<float>()[r] = static_cast<float>(value);
          }
        }
      }
    });
  });
}

// ---- LpNormalization -------------------------------------------------------------------------

void validate_lp_norm_p(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v == 1 || v == 2, ErrorCode::kInvalidArgument, what, ": expected 1 or 2, got ", v);
}

std::vector<TensorInfo> infer_lp_norm(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  KILN_CHECK(ctx.shape(0).ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected rank >= 1, got shape ", ctx.shape(0));
  normalize_axis(ctx.attrs().get_int("axis"), ctx.shape(0).ndim(), "attribute 'axis'");
  return {ctx.input(0)};
}

// Lines along the axis handled together when it is not the last axis: the block's elements are
// contiguous at each step along the axis, so every pass reads whole cache lines.
constexpr int64_t kLineBlock = 256;

// x / ||x||_p along the axis; a zero vector stays zero.
void lp_norm_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), x.ndim(), "attribute 'axis'");
  const bool l1 = ctx.attrs.get_int("p") == 1;
  const int64_t len = x.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int i = axis + 1; i < x.ndim(); ++i) inner *= x.shape()[i];
  const int64_t block = std::min(inner, kLineBlock);
  const int64_t blocks_per_outer = block == 0 ? 0 : (inner + block - 1) / block;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    auto value = [](T v) { return static_cast<double>(static_cast<C>(v)); };
    parallel_for(0, outer * blocks_per_outer, norm_grain_for(len * block), [&](int64_t begin, int64_t end) {
      double scale[kLineBlock];
      for (int64_t item = begin; item < end; ++item) {
        const int64_t j0 = (item % blocks_per_outer) * block, count = std::min(block, inner - j0);
        const int64_t offset = (item / blocks_per_outer) * len * inner + j0;
        const T* in = x.data<T>() + offset;
        T* out = ctx.output(0).data<T>() + offset;
        std::fill(scale, scale + count, 0.0);
        for (int64_t k = 0; k < len; ++k) {
          for (int64_t j = 0; j < count; ++j) {
            const double v = value(in[k * inner + j]);
            scale[j] += l1 ? std::abs(v) : v * v;
          }
        }
        for (int64_t j = 0; j < count; ++j) {
          const double norm = l1 ? scale[j] : std::sqrt(scale[j]);
          scale[j] = norm == 0 ? 0.0 : 1.0 / norm;
        }
        for (int64_t k = 0; k < len; ++k)
          for (int64_t j = 0; j < count; ++j)
            out[k * inner + j] = convert_value<T>(value(in[k * inner + j]) * scale[j]);
      }
    });
  });
}

// ---- MeanVarianceNormalization ---------------------------------------------------------------

// The axes of a shape split into kept ones (one group per combination) and reduced ones (the
// elements of a group).
struct AxisGroups {
  std::vector<int64_t> kept_dims, kept_strides, reduced_dims, reduced_strides;
  int64_t groups = 1, group_size = 1;

  AxisGroups(const Shape& shape, const std::vector<int>& reduced) {
    const std::vector<int64_t> strides = contiguous_strides(shape);
    for (int a = 0; a < shape.ndim(); ++a) {
      const bool is_reduced = std::find(reduced.begin(), reduced.end(), a) != reduced.end();
      (is_reduced ? reduced_dims : kept_dims).push_back(shape[a]);
      (is_reduced ? reduced_strides : kept_strides).push_back(strides[static_cast<size_t>(a)]);
      (is_reduced ? group_size : groups) *= shape[a];
    }
  }

  // The flat offset of group g's first element.
  int64_t base(int64_t g) const {
    int64_t off = 0;
    for (size_t a = kept_dims.size(); a-- > 0;) {
      off += (g % kept_dims[a]) * kept_strides[a];
      g /= kept_dims[a];
    }
    return off;
  }

  // Calls f(offset) for each element of the group starting at `base`, in row-major order.
  template <class F>
  void for_each(int64_t base_offset, F f) const {
    if (group_size == 0) return;
    const size_t n = reduced_dims.size();
    if (n == 0) {
      f(base_offset);
      return;
    }
    std::vector<int64_t> index(n, 0);
    const int64_t last = reduced_dims[n - 1], last_stride = reduced_strides[n - 1];
    int64_t off = base_offset;
    while (true) {
      for (int64_t i = 0; i < last; ++i) f(off + i * last_stride);
      size_t a = n - 1;
      while (a-- > 0) {
        off += reduced_strides[a];
        if (++index[a] < reduced_dims[a]) break;
        off -= reduced_strides[a] * reduced_dims[a];
        index[a] = 0;
      }
      if (a == static_cast<size_t>(-1)) return;
    }
  }
};

std::vector<int> mvn_axes(const Attrs& attrs, int rank) {
  const auto& axes = attrs.get_ints("axes");
  if (axes.empty()) {  // ReduceMean over no listed axes reduces them all
    std::vector<int> all(static_cast<size_t>(rank));
    for (int a = 0; a < rank; ++a) all[static_cast<size_t>(a)] = a;
    return all;
  }
  return normalize_axes(axes, rank, "attribute 'axes'");
}

std::vector<TensorInfo> infer_mvn(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  mvn_axes(ctx.attrs(), ctx.shape(0).ndim());
  return {ctx.input(0)};
}

// y = (x - mean) / (std + 1e-9), the statistics taken over `axes` (ONNX's function body).
void mvn_kernel(KernelContext& ctx) {
  constexpr double kEpsilon = 1e-9;
  const Tensor& x = ctx.input(0);
  const AxisGroups split(x.shape(), mvn_axes(ctx.attrs, x.ndim()));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using C = compute_t<T>;
    const T* in = x.data<T>();
    T* out = ctx.output(0).data<T>();
    auto value = [&](int64_t i) { return static_cast<double>(static_cast<C>(in[i])); };
    parallel_for(0, split.groups, norm_grain_for(split.group_size), [&](int64_t begin, int64_t end) {
      for (int64_t g = begin; g < end; ++g) {
        const int64_t base = split.base(g);
        double sum = 0, sq = 0;
        split.for_each(base, [&](int64_t i) { sum += value(i); });
        const double mean = sum / static_cast<double>(split.group_size);
        split.for_each(base, [&](int64_t i) { sq += (value(i) - mean) * (value(i) - mean); });
        const double inv = 1.0 / (std::sqrt(sq / static_cast<double>(split.group_size)) + kEpsilon);
        split.for_each(
            base, [&](int64_t i) { out[i] = convert_value<T>(static_cast<C>((value(i) - mean) * inv)); });
      }
    });
  });
}

// ---- Gradient rules ---------------------------------------------------------------------------

// With xhat = (x - mean) * inv_std over the normalized axes (kept as 1) and dxhat = dy * scale:
//   dx = inv_std * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)),
// the batch statistics' own dependence on x included. The statistics are recomputed in X's
// dtype rather than read from the optional outputs, so the rule works whichever were requested.
struct NormalizedGrad {
  GradientContext& ctx;
  GradValue axes, xhat, inv_std;

  NormalizedGrad(GradientContext& c, const std::vector<int64_t>& reduced, double epsilon)
      : ctx(c), axes(c.ints(reduced)) {
    const GradValue x = c.input(0);
    const GradValue centered = c.sub(x, mean(x));
    const GradValue var = mean(c.mul(centered, centered));
    const GradValue eps = c.scalar(epsilon, c.input_info(0).dtype);
    inv_std = c.op1("Reciprocal", {c.op1("Sqrt", {c.add(var, eps)})});
    xhat = c.mul(centered, inv_std);
  }
  GradValue mean(GradValue v) { return ctx.op1("ReduceMean", {v, axes}, {{"keepdims", 1}}); }
  GradValue sum(GradValue v) { return ctx.op1("ReduceSum", {v, axes}, {{"keepdims", 0}}); }
  GradValue input_grad(GradValue dxhat) {
    const GradValue inner = ctx.sub(ctx.sub(dxhat, mean(dxhat)), ctx.mul(xhat, mean(ctx.mul(dxhat, xhat))));
    return ctx.mul(inv_std, inner);
  }
};

std::vector<int64_t> axes_from(int first, int rank) {
  std::vector<int64_t> axes;
  for (int a = first; a < rank; ++a) axes.push_back(a);
  return axes;
}

// A per-channel (C) parameter as (C, 1, ..., 1), to broadcast over X's spatial axes.
GradValue per_channel(GradientContext& ctx, GradValue v, int rank) {
  if (rank <= 2) return v;
  return ctx.op1("Unsqueeze", {v, ctx.ints(axes_from(1, rank - 1))});
}

void batch_norm_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  if (!g.defined()) return;  // only the running statistics were used: they take no gradient
  const int rank = ctx.input_info(0).shape.ndim();
  const double epsilon = ctx.attrs().get_float("epsilon");
  std::vector<int64_t> reduced = axes_from(1, rank);
  reduced[0] = 0;  // every axis but the channels (1)
  const GradValue scale = per_channel(ctx, ctx.input(1), rank);
  if (ctx.attrs().get_int("training_mode") == 1) {
    NormalizedGrad n(ctx, reduced, epsilon);
    if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, n.input_grad(ctx.mul(g, scale)));
    if (ctx.needs_input_grad(1)) ctx.set_input_grad(1, n.sum(ctx.mul(g, n.xhat)));
    if (ctx.needs_input_grad(2)) ctx.set_input_grad(2, n.sum(g));
    return;
  }
  // Inference: y = (x - mean) * inv_std * scale + B with the given statistics, a per-channel
  // affine map of x.
  const DType dtype = ctx.input_info(0).dtype;
  const GradValue axes = ctx.ints(reduced);
  const auto sum = [&](GradValue v) { return ctx.op1("ReduceSum", {v, axes}, {{"keepdims", 0}}); };
  const GradValue var_eps = ctx.add(ctx.input(4), ctx.scalar(epsilon, dtype));
  const GradValue inv_std = ctx.op1("Reciprocal", {ctx.op1("Sqrt", {var_eps})});
  const GradValue centered = ctx.sub(ctx.input(0), per_channel(ctx, ctx.input(3), rank));
  const GradValue inv_std_c = per_channel(ctx, inv_std, rank);
  if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, ctx.mul(g, ctx.mul(scale, inv_std_c)));
  if (ctx.needs_input_grad(1)) ctx.set_input_grad(1, sum(ctx.mul(g, ctx.mul(centered, inv_std_c))));
  if (ctx.needs_input_grad(2)) ctx.set_input_grad(2, sum(g));
  const GradValue scaled_inv = ctx.mul(ctx.input(1), inv_std);
  if (ctx.needs_input_grad(3)) ctx.set_input_grad(3, ctx.neg(ctx.mul(sum(g), scaled_inv)));
  if (ctx.needs_input_grad(4)) {
    // d inv_std / d var = -inv_std / (2 (var + eps)).
    const GradValue d = ctx.div(ctx.mul(scaled_inv, ctx.scalar(-0.5, dtype)), var_eps);
    ctx.set_input_grad(4, ctx.mul(sum(ctx.mul(g, centered)), d));
  }
}

// Y's gradient only: Mean and InvStdDev are statistics, and gradients flowing into them are
// not propagated.
void layer_norm_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  if (!g.defined()) return;
  const int rank = ctx.input_info(0).shape.ndim();
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), rank, "attribute 'axis'");
  NormalizedGrad n(ctx, axes_from(axis, rank), ctx.attrs().get_float("epsilon"));
  if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, n.input_grad(ctx.mul(g, ctx.input(1))));
  if (ctx.needs_input_grad(1))
    ctx.set_input_grad(1, ctx.op1("ReduceSumLike", {ctx.mul(g, n.xhat), ctx.input(1)}));
  if (ctx.needs_input_grad(2)) ctx.set_input_grad(2, ctx.op1("ReduceSumLike", {g, ctx.input(2)}));
}

KILN_REGISTER_OP(BatchNormalization)
    .doc(
        "Y = (X - mean) / sqrt(var + epsilon) * scale + B per channel (axis 1). training_mode=1 uses the "
        "batch's statistics and also outputs running_mean/running_var = input * momentum + "
        "batch * (1 - momentum).")
    .input("X")
    .input("scale")
    .input("B")
    .input("input_mean")
    .input("input_var")
    .output("Y")
    .output("running_mean", Arity::kOptional)
    .output("running_var", Arity::kOptional)
    .attr("epsilon", AttrType::kFloat, 1e-5, validate_epsilon)
    .attr("momentum", AttrType::kFloat, 0.9, validate_momentum)
    .attr("training_mode", AttrType::kInt, 0, require_flag)
    .infer(infer_batch_norm)
    .kernel(batch_norm_kernel)
    .gradient(batch_norm_gradient);

KILN_REGISTER_OP(InstanceNormalization)
    .doc(
        "y = scale[c] * (x - mean) / sqrt(var + epsilon) + B[c], statistics per (n, c) over the "
        "spatial axes.")
    .input("input")
    .input("scale")
    .input("B")
    .output("output")
    .attr("epsilon", AttrType::kFloat, 1e-5, validate_epsilon)
    .infer(infer_instance_norm)
    .kernel(instance_norm_kernel);

KILN_REGISTER_OP(LayerNormalization)
    .doc(
        "Normalizes over the axes [axis, rank): Y = (X - mean) / sqrt(var + epsilon) * Scale + B; "
        "optional outputs Mean and InvStdDev (of stash_type's dtype) keep the reduced axes as 1.")
    .input("X")
    .input("Scale")
    .input("B", Arity::kOptional)
    .output("Y")
    .output("Mean", Arity::kOptional)
    .output("InvStdDev", Arity::kOptional)
    .attr("axis", AttrType::kInt, -1)
    .attr("epsilon", AttrType::kFloat, 1e-5, validate_epsilon)
    .attr("stash_type", AttrType::kInt, kOnnxFloat, validate_stash_type)
    .infer(infer_layer_norm)
    .kernel(layer_norm_kernel)
    .gradient(layer_norm_gradient);

KILN_REGISTER_OP(LpNormalization)
    .doc("x / ||x||_p along `axis` (p = 1 or 2); a zero vector stays zero.")
    .input("input")
    .output("output")
    .attr("axis", AttrType::kInt, -1)
    .attr("p", AttrType::kInt, 2, validate_lp_norm_p)
    .infer(infer_lp_norm)
    .kernel(lp_norm_kernel);

KILN_REGISTER_OP(MeanVarianceNormalization)
    .doc(
        "Y = (X - mean) / (std + 1e-9), mean and standard deviation taken over `axes` "
        "(all axes when empty).")
    .input("X")
    .output("Y")
    .attr("axes", AttrType::kInts, std::vector<int64_t>{0, 2, 3})
    .infer(infer_mvn)
    .kernel(mvn_kernel);

// ---- LRN ----

void validate_lrn_size(const AttrValue& value, const std::string& what) {
  const int64_t size = std::get<int64_t>(value.variant());
  KILN_CHECK(size >= 1, ErrorCode::kInvalidArgument, what, ": expected a window of at least 1 channel, got ",
             size);
}

// Y = X / (bias + alpha / size * sum of X^2 over the channels [c - floor((size-1)/2),
// c + ceil((size-1)/2)])^beta, the sum in double over a window clipped to the channels there are.
void lrn_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int64_t size = ctx.attrs.get_int("size");
  const double alpha = ctx.attrs.get_float("alpha"), beta = ctx.attrs.get_float("beta"),
               bias = ctx.attrs.get_float("bias");
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  const int64_t inner = x.numel() / std::max<int64_t>(1, batch * channels);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const T* px = x.data<T>();
      T* py = y.data<T>();
      parallel_for(0, batch * channels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t nc = begin; nc < end; ++nc) {
          const int64_t n = nc / channels, c = nc % channels;
          const int64_t lo = std::max<int64_t>(0, c - before), hi = std::min(channels - 1, c + after);
          for (int64_t i = 0; i < inner; ++i) {
            double square_sum = 0;
            for (int64_t k = lo; k <= hi; ++k) {
              const auto v =
                  static_cast<double>(static_cast<compute_t<T>>(px[(n * channels + k) * inner + i]));
              square_sum += v * v;
            }
            const auto v = static_cast<double>(static_cast<compute_t<T>>(px[nc * inner + i]));
            py[nc * inner + i] =
                convert_value<T>(v / std::pow(bias + alpha / static_cast<double>(size) * square_sum, beta));
          }
        }
      });
    }
  });
}

KILN_REGISTER_OP(LRN)
    .doc(
        "Local response normalization across channels: Y = X / (bias + alpha / size * square_sum)^beta, "
        "square_sum over the `size` channels around each one (clipped at the edges).")
    .input("X")
    .output("Y")
    .attr("alpha", AttrType::kFloat, 0.0001)
    .attr("beta", AttrType::kFloat, 0.75)
    .attr("bias", AttrType::kFloat, 1.0)
    .required_attr("size", AttrType::kInt, validate_lrn_size)
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      KILN_CHECK(ctx.shape(0).ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
                 ": expected (N, C, ...), at least 2-D, got shape ", ctx.shape(0));
      return std::vector<TensorInfo>{ctx.input(0)};
    })
    .kernel(lrn_kernel);

}  // namespace
}  // namespace kiln::ops
