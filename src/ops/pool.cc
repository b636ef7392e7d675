// Pooling over the spatial axes of an (N, C, D1, ..., Dk) tensor: MaxPool (with the optional
// argmax output Indices), AveragePool and LpPool over 1 to 3 spatial axes, and GlobalAveragePool /
// GlobalMaxPool over any number; MaxUnpool puts MaxPool's maxima back where Indices says. Windows follow ONNX
// (pool_util.h): explicit or automatic padding, strides, dilations, ceil_mode. Padding never contributes a
// value; with count_include_pad it only counts in AveragePool's divisor.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/thread_pool.h"
#include "gradient.h"
#include "infer_util.h"
#include "pool_util.h"

namespace kiln::ops {
namespace {

constexpr int kMaxSpatialRank = 3;
// Window taps per task: large enough that scheduling is noise next to the work.
constexpr int64_t kPoolGrain = 1 << 15;

inline constexpr DType kMaxPoolDTypes[] = {DType::kFloat32,  DType::kFloat64, DType::kFloat16,
                                           DType::kBFloat16, DType::kInt8,    DType::kUInt8};

// The number of outputs a call asked for: 1 by default, at most `max`.
int requested_outputs(const InferContext& ctx, int max) {
  const int n = ctx.num_outputs_requested() < 0 ? 1 : ctx.num_outputs_requested();
  KILN_CHECK(n >= 1 && n <= max, ErrorCode::kInvalidArgument, "expected 1",
             max > 1 ? " to " + std::to_string(max) : "", " outputs, got ", n);
  return n;
}

void require_spatial_input(const InferContext& ctx, int max_spatial_rank) {
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) with at least one spatial axis (rank >= 3), got shape ", x);
  KILN_CHECK(x.ndim() - 2 <= max_spatial_rank, ErrorCode::kUnsupported, ctx.input_label(0),
             ": expected at most ", max_spatial_rank, " spatial axes, got shape ", x);
}

// Y (and MaxPool's Indices) of shape (N, C, output sizes...).
std::vector<TensorInfo> infer_window_pool(InferContext& ctx, int max_outputs) {
  const int outputs = requested_outputs(ctx, max_outputs);
  require_spatial_input(ctx, kMaxSpatialRank);
  const Shape& x = ctx.shape(0);
  const PoolWindow w = pool_window(ctx.attrs(), x, ctx.input_label(0));
  Shape y{x[0], x[1]};
  for (int64_t d : w.output) y.push_back(d);
  std::vector<TensorInfo> out{TensorInfo{ctx.dtype(0), y}};
  if (outputs == 2) out.push_back(TensorInfo{DType::kInt64, y});
  return out;
}

// Where the taps of the windows along one spatial axis land, per output position.
struct AxisTaps {
  std::vector<int64_t> start;   // input position of tap 0 (negative inside the leading padding)
  std::vector<int64_t> lo, hi;  // taps [lo, hi) land inside the input
  std::vector<int64_t> padded;  // taps [0, padded) land inside the input or its padding
};

// The window geometry with leading unit axes added up to three spatial axes, so that one loop
// nest serves 1-D to 3-D pooling.
struct Geometry {
  std::array<int64_t, kMaxSpatialRank> in{}, dilation{};
  std::array<AxisTaps, kMaxSpatialRank> taps;
  int64_t in_plane = 1, out_plane = 1, window = 1;
};

Geometry make_geometry(const PoolWindow& w) {
  using pool_detail::ceil_div;
  Geometry g;
  const int lead = kMaxSpatialRank - w.rank();
  for (int a = 0; a < kMaxSpatialRank; ++a) {
    const auto ua = static_cast<size_t>(a);
    AxisTaps& t = g.taps[ua];
    if (a < lead) {
      g.in[ua] = 1;
      g.dilation[ua] = 1;
      t = AxisTaps{{0}, {0}, {1}, {1}};
      continue;
    }
    const auto i = static_cast<size_t>(a - lead);
    const int64_t in = w.input[i], k = w.kernel[i], s = w.strides[i], d = w.dilations[i];
    g.in[ua] = in;
    g.dilation[ua] = d;
    g.in_plane *= in;
    g.out_plane *= w.output[i];
    g.window *= k;
    for (int64_t o = 0; o < w.output[i]; ++o) {
      const int64_t start = o * s - w.pad_begin[i];
      const int64_t lo = start < 0 ? ceil_div(-start, d) : 0;
      t.start.push_back(start);
      t.lo.push_back(std::min(lo, k));
      t.hi.push_back(std::max(std::min(k, ceil_div(in - start, d)), t.lo.back()));
      t.padded.push_back(std::min(k, ceil_div(in + w.pad_end[i] - start, d)));
    }
  }
  return g;
}

// Runs `Reducer` over every window of every (n, c) plane. A reducer is copied per task and has
//   reset()                          before each window,
//   add(value, offset)               per tap inside the input (offset: row-major, within the plane),
//   store(plane, out, valid, padded) after each window (out: flat output index; tap counts).
template <class T, class Reducer>
void pool_planes(const Geometry& g, int64_t planes, const T* x, const Reducer& proto) {
  // Named references rather than a structured binding: lambdas may not capture bindings (clang).
  const AxisTaps& td = g.taps[0];
  const AxisTaps& th = g.taps[1];
  const AxisTaps& tw = g.taps[2];
  const int64_t dd = g.dilation[0], dh = g.dilation[1], dw = g.dilation[2];
  const int64_t height = g.in[1], width = g.in[2];
  const int64_t grain = std::max<int64_t>(1, kPoolGrain / std::max<int64_t>(1, g.out_plane * g.window));
  parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
    Reducer r = proto;
    for (int64_t p = begin; p < end; ++p) {
      const T* plane = x + p * g.in_plane;
      int64_t out = p * g.out_plane;
      for (size_t od = 0; od < td.start.size(); ++od) {
        for (size_t oh = 0; oh < th.start.size(); ++oh) {
          for (size_t ow = 0; ow < tw.start.size(); ++ow, ++out) {
            r.reset();
            for (int64_t kd = td.lo[od]; kd < td.hi[od]; ++kd) {
              const int64_t row_d = (td.start[od] + kd * dd) * height;
              for (int64_t kh = th.lo[oh]; kh < th.hi[oh]; ++kh) {
                const int64_t row_h = (row_d + th.start[oh] + kh * dh) * width;
                for (int64_t kw = tw.lo[ow]; kw < tw.hi[ow]; ++kw) {
                  const int64_t off = row_h + tw.start[ow] + kw * dw;
                  r.add(static_cast<compute_t<T>>(plane[off]), off);
                }
              }
            }
            const int64_t valid = (td.hi[od] - td.lo[od]) * (th.hi[oh] - th.lo[oh]) * (tw.hi[ow] - tw.lo[ow]);
            r.store(p, out, valid, td.padded[od] * th.padded[oh] * tw.padded[ow]);
          }
        }
      }
    }
  });
}

template <class C>
bool is_nan(C v) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

// The smallest value of C: the maximum of an empty window.
template <class C>
C lowest() {
  if constexpr (std::is_floating_point_v<C>) {
    return -std::numeric_limits<C>::infinity();
  } else {
    return std::numeric_limits<C>::lowest();
  }
}

// Maximum of the window; NaN wins. The first maximal tap (in row-major order) gives the index.
template <class T>
struct MaxReducer {
  using C = compute_t<T>;
  T* y;
  int64_t* indices;  // null when Indices is not requested
  const Geometry* g;
  bool column_major;
  C best{};
  int64_t best_off = -1;

  void reset() {
    best = lowest<C>();
    best_off = -1;
  }
  void add(C v, int64_t off) {
    if (best_off < 0 || v > best || (is_nan(v) && !is_nan(best))) {
      best = v;
      best_off = off;
    }
  }
  // A window with no tap inside the input (possible only when a dilation steps over it) gets
  // the lowest value and index -1.
  void store(int64_t plane, int64_t out, int64_t, int64_t) {
    y[out] = convert_value<T>(best);
    if (indices) indices[out] = best_off < 0 ? -1 : plane * g->in_plane + storage_offset(best_off);
  }
  // ONNX Indices count the spatial position in row-major order (storage_order 0) or
  // column-major order (storage_order 1), plus the plane's offset in the flat input.
  int64_t storage_offset(int64_t off) const {
    if (!column_major) return off;
    const int64_t w = off % g->in[2], h = (off / g->in[2]) % g->in[1], d = off / (g->in[2] * g->in[1]);
    // Column-major over the input's own spatial axes: the first axis varies fastest. Leading unit
    // axes added by make_geometry contribute nothing.
    return d + g->in[0] * (h + g->in[1] * w);
  }
};

// Mean of the window: over the taps inside the input, or over all taps inside the padded input
// when count_include_pad is set.
template <class T>
struct AverageReducer {
  T* y;
  bool count_include_pad;
  double sum = 0;

  void reset() { sum = 0; }
  void add(compute_t<T> v, int64_t) { sum += static_cast<double>(v); }
  void store(int64_t, int64_t out, int64_t valid, int64_t padded) {
    y[out] = convert_value<T>(sum / static_cast<double>(count_include_pad ? padded : valid));
  }
};

// p-norm of the window: (sum |x|^p)^(1/p).
template <class T>
struct LpReducer {
  T* y;
  int64_t p;
  double sum = 0;

  void reset() { sum = 0; }
  void add(compute_t<T> v, int64_t) {
    const double a = std::abs(static_cast<double>(v));
    sum += p == 1 ? a : p == 2 ? a * a : std::pow(a, static_cast<double>(p));
  }
  void store(int64_t, int64_t out, int64_t, int64_t) {
    y[out] = convert_value<T>(p == 1   ? sum
                              : p == 2 ? std::sqrt(sum)
                                       : std::pow(sum, 1.0 / static_cast<double>(p)));
  }
};

// Runs a reducer over the call's windows; make(type tag, geometry) builds it for the input's dtype.
template <class Make>
void run_window_pool(KernelContext& ctx, Make make) {
  const Tensor& x = ctx.input(0);
  const Geometry g = make_geometry(pool_window(ctx.attrs, x.shape(), "input 0 (X)"));
  const int64_t planes = x.shape()[0] * x.shape()[1];
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) pool_planes<T>(g, planes, x.data<T>(), make(tag, g));
  });
}

void max_pool_kernel(KernelContext& ctx) {
  const bool column_major = ctx.attrs.get_int("storage_order") == 1;
  int64_t* indices = ctx.num_outputs() > 1 ? ctx.output(1).data<int64_t>() : nullptr;
  run_window_pool(ctx, [&](auto tag, const Geometry& g) {
    using T = typename decltype(tag)::type;
    return MaxReducer<T>{ctx.output(0).data<T>(), indices, &g, column_major};
  });
}

void average_pool_kernel(KernelContext& ctx) {
  const bool count_include_pad = ctx.attrs.get_int("count_include_pad") == 1;
  run_window_pool(ctx, [&](auto tag, const Geometry&) {
    using T = typename decltype(tag)::type;
    return AverageReducer<T>{ctx.output(0).data<T>(), count_include_pad};
  });
}

void lp_pool_kernel(KernelContext& ctx) {
  const int64_t p = ctx.attrs.get_int("p");
  run_window_pool(ctx, [&](auto tag, const Geometry&) {
    using T = typename decltype(tag)::type;
    return LpReducer<T>{ctx.output(0).data<T>(), p};
  });
}

// Global pooling: Y of shape (N, C, 1, ..., 1), one value per contiguous (n, c) plane.
std::vector<TensorInfo> infer_global_pool(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_spatial_input(ctx, std::numeric_limits<int>::max());
  const Shape& x = ctx.shape(0);
  Shape y{x[0], x[1]};
  for (int i = 2; i < x.ndim(); ++i) y.push_back(1);
  return {TensorInfo{ctx.dtype(0), y}};
}

template <bool kMax>
void global_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const int64_t planes = x.shape()[0] * x.shape()[1];
  const int64_t size = planes == 0 ? 0 : x.numel() / planes;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_floating(dtype_of<T>)) {
      const T* in = x.data<T>();
      T* out = ctx.output(0).data<T>();
      auto pool_plane = [&](int64_t p) {
        const T* plane = in + p * size;
        if constexpr (kMax) {
          MaxReducer<T> r{out, nullptr, nullptr, false};
          r.reset();
          for (int64_t i = 0; i < size; ++i) r.add(static_cast<compute_t<T>>(plane[i]), i);
          r.store(p, p, size, size);
        } else {
          double sum = 0;
          for (int64_t i = 0; i < size; ++i) sum += static_cast<double>(static_cast<compute_t<T>>(plane[i]));
          out[p] = convert_value<T>(sum / static_cast<double>(size));
        }
      };
      parallel_for(0, planes, std::max<int64_t>(1, kPoolGrain / std::max<int64_t>(size, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t p = b; p < e; ++p) pool_plane(p);
                   });
    }
  });
}

// The gradient ops walk the same windows as the forward ops. Each (n, c) plane's windows only
// touch that plane of dX, so planes are summed into concurrently.
// MaxPoolGrad: each window's dY goes to its (first) maximum.
template <class T>
struct MaxGradReducer {
  using C = compute_t<T>;
  const T* dy;
  double* dx;
  const Geometry* g;
  MaxReducer<T> max{nullptr, nullptr, nullptr, false};

  void reset() { max.reset(); }
  void add(C v, int64_t off) { max.add(v, off); }
  void store(int64_t plane, int64_t out, int64_t, int64_t) {
    if (max.best_off >= 0)
      dx[plane * g->in_plane + max.best_off] += static_cast<double>(static_cast<C>(dy[out]));
  }
};

// AveragePoolGrad: each window's dY is shared out over the taps its mean divided by.
template <class T>
struct AverageGradReducer {
  const T* dy;
  double* dx;
  const Geometry* g;
  bool count_include_pad;
  std::vector<int64_t> taps;

  void reset() { taps.clear(); }
  void add(compute_t<T>, int64_t off) { taps.push_back(off); }
  void store(int64_t plane, int64_t out, int64_t valid, int64_t padded) {
    const double share = static_cast<double>(static_cast<compute_t<T>>(dy[out])) /
                         static_cast<double>(count_include_pad ? padded : valid);
    for (int64_t off : taps) dx[plane * g->in_plane + off] += share;
  }
};

// Runs a gradient reducer over the windows of X (input 1), the result accumulated in double.
template <class Make>
void run_pool_grad(KernelContext& ctx, Make make) {
  const Tensor& x = ctx.input(1);
  Tensor& dx = ctx.output(0);
  const Geometry g = make_geometry(pool_window(ctx.attrs, x.shape(), "input 1 (X)"));
  const int64_t planes = x.shape()[0] * x.shape()[1];
  std::vector<double> sums(static_cast<size_t>(dx.numel()), 0.0);
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      pool_planes<T>(g, planes, x.data<T>(), make(tag, g, ctx.input(0).data<T>(), sums.data()));
      T* out = dx.data<T>();
      for (size_t i = 0; i < sums.size(); ++i) out[i] = convert_value<T>(sums[i]);
    }
  });
}

void max_pool_grad_kernel(KernelContext& ctx) {
  run_pool_grad(ctx, [](auto tag, const Geometry& g, const auto* dy, double* dx) {
    using T = typename decltype(tag)::type;
    return MaxGradReducer<T>{dy, dx, &g};
  });
}

void average_pool_grad_kernel(KernelContext& ctx) {
  const bool count_include_pad = ctx.attrs.get_int("count_include_pad") == 1;
  run_pool_grad(ctx, [count_include_pad](auto tag, const Geometry& g, const auto* dy, double* dx) {
    using T = typename decltype(tag)::type;
    return AverageGradReducer<T>{dy, dx, &g, count_include_pad, {}};
  });
}

// dX of shape X (input 1), in dY's dtype.
std::vector<TensorInfo> infer_pool_grad(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_same_dtype(ctx, 0, 1);
  return {TensorInfo{ctx.dtype(0), ctx.shape(1)}};
}

// The forward op's attributes (ceil_mode, pads, ...) travel to its gradient op unchanged;
// storage_order only orders MaxPool's Indices, which MaxPoolGrad does not produce.
AttrMap pool_window_attrs(const GradientContext& ctx) {
  AttrMap attrs = ctx.attrs().values();
  attrs.erase("storage_order");
  return attrs;
}

void max_pool_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("MaxPoolGrad", {ctx.output_grad(0), ctx.input(0)}, pool_window_attrs(ctx)));
}

void average_pool_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0,
                     ctx.op1("AveragePoolGrad", {ctx.output_grad(0), ctx.input(0)}, pool_window_attrs(ctx)));
}

// The mean of each plane: dY / (elements per plane), broadcast over the plane.
void global_average_pool_gradient(GradientContext& ctx) {
  const Shape& x = ctx.input_info(0).shape;
  int64_t plane = 1;
  for (int a = 2; a < x.ndim(); ++a) plane = (plane < 0 || x[a] < 0) ? -1 : plane * x[a];
  const DType dtype = ctx.input_info(0).dtype;
  GradValue count;
  if (plane >= 0) {
    count = ctx.scalar(static_cast<double>(plane), dtype);
  } else {
    const GradValue spatial = ctx.op1("Shape", {ctx.input(0)}, {{"start", 2}});
    count = ctx.op1("Cast", {ctx.op1("ReduceProd", {spatial}, {{"keepdims", 0}})},
                    {{"to", static_cast<int64_t>(dtype_to_onnx(dtype))}});
  }
  const GradValue spread = ctx.op1("Expand", {ctx.output_grad(0), ctx.shape_of_input(0)});
  ctx.set_input_grad(0, ctx.div(spread, count));
}

void validate_positive(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v >= 1, ErrorCode::kInvalidArgument, what, ": expected a value >= 1, got ", v);
}

// The window attributes MaxPool, AveragePool and their gradient ops share (ONNX's, less the
// op-specific storage_order and count_include_pad): schema.with(declare_pool_window_attrs).
void declare_pool_window_attrs(OpSchema& schema) {
  schema.attr("auto_pad", AttrType::kString, "NOTSET", validate_auto_pad)
      .attr("ceil_mode", AttrType::kInt, 0, require_flag)
      .optional_attr("dilations", AttrType::kInts)
      .required_attr("kernel_shape", AttrType::kInts)
      .optional_attr("pads", AttrType::kInts)
      .optional_attr("strides", AttrType::kInts);
}

KILN_REGISTER_OP(MaxPool)
    .doc(
        "Maximum over sliding windows of the spatial axes; Indices holds each maximum's flat input "
        "index (row-major, or column-major over the spatial axes with storage_order=1).")
    .input("X")
    .output("Y")
    .output("Indices", Arity::kOptional)
    .with(declare_pool_window_attrs)
    .attr("storage_order", AttrType::kInt, 0, require_flag)
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kMaxPoolDTypes);
      return infer_window_pool(ctx, 2);
    })
    .kernel(max_pool_kernel)
    .gradient(max_pool_gradient);

// ---- MaxUnpool ----

// The shape a MaxPool with these attributes turns into X's shape: (in - 1) * stride + kernel - pads.
Shape unpooled_shape(const Attrs& attrs, const Shape& x, const std::string& x_label) {
  const auto rank = static_cast<size_t>(x.ndim() - 2);
  const std::vector<int64_t> kernel = pool_detail::axis_list(attrs, "kernel_shape", rank, 1, 1, x_label);
  const std::vector<int64_t> strides = pool_detail::axis_list(attrs, "strides", rank, 1, 1, x_label);
  const std::vector<int64_t> pads = pool_detail::axis_list(attrs, "pads", 2 * rank, 0, 0, x_label);
  Shape out = x;
  for (size_t i = 0; i < rank; ++i) {
    const int axis = static_cast<int>(i) + 2;
    if (x[axis] < 0) continue;
    out[axis] = (x[axis] - 1) * strides[i] + kernel[i] - pads[i] - pads[i + rank];
    KILN_CHECK(out[axis] >= 0, ErrorCode::kInvalidArgument, "axis ", axis, " unpools to ", out[axis],
               " elements: the pads are wider than the window");
  }
  return out;
}

// That shape, or output_shape's values when given: at least as large on every axis, since the
// unpooled values keep their places and the rest is zeros.
std::vector<TensorInfo> infer_max_unpool(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  const DType int64[] = {DType::kInt64};
  require_dtype(ctx, 1, int64);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) with at least one spatial axis, got shape ", x);
  KILN_CHECK(ctx.shape(1).ndim() == x.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected the shape of ", ctx.input_label(0), ", ", x, ", got ", ctx.shape(1));
  const Shape unpooled = unpooled_shape(ctx.attrs(), x, ctx.input_label(0));
  if (!ctx.has_input(2)) return {TensorInfo{ctx.dtype(0), unpooled}};
  const std::vector<int64_t> dims = ctx.value(2).cast(DType::kInt64).to_vector<int64_t>();
  KILN_CHECK(static_cast<int>(dims.size()) == x.ndim(), ErrorCode::kInvalidArgument, ctx.input_label(2),
             ": expected ", x.ndim(), " sizes, one per axis of ", ctx.input_label(0), ", got ", dims.size());
  for (int a = 0; a < x.ndim(); ++a) {
    const int64_t need = unpooled[a];
    KILN_CHECK(
        need < 0 || (a < 2 ? dims[static_cast<size_t>(a)] == need : dims[static_cast<size_t>(a)] >= need),
        ErrorCode::kInvalidArgument, ctx.input_label(2), ": size ", dims[static_cast<size_t>(a)], " of axis ",
        a, " cannot hold the unpooled ", need);
  }
  return {TensorInfo{ctx.dtype(0), Shape(dims)}};
}

// Zeros, each X value at the flat index (into the unpooled shape) its I entry gives, and the
// unpooled block at the origin of a larger output_shape.
void max_unpool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> indices = ctx.input(1).to_vector<int64_t>();
  Tensor& out = ctx.output(0);
  KILN_CHECK(static_cast<int64_t>(indices.size()) == x.numel(), ErrorCode::kShapeMismatch,
             "input 1 (I): expected one index per element of input 0 (X), ", x.numel(), ", got ",
             indices.size());
  const Shape unpooled = unpooled_shape(ctx.attrs, x.shape(), "input 0 (X)");
  Tensor block = Tensor::zeros(unpooled, x.dtype());
  const auto* src = static_cast<const char*>(x.raw_data());
  auto* dst = static_cast<char*>(block.raw_data());
  const size_t item = x.itemsize();
  for (size_t i = 0; i < indices.size(); ++i) {
    const int64_t at = indices[i];
    KILN_CHECK(at >= 0 && at < block.numel(), ErrorCode::kOutOfRange, "input 1 (I): index ", at,
               " at position ", i, " is outside the unpooled ", block.numel(), " elements (shape ", unpooled,
               ")");
    std::memcpy(dst + static_cast<size_t>(at) * item, src + i * item, item);
  }
  if (out.shape() == unpooled) {
    out.copy_from(block);
    return;
  }
  std::memset(out.raw_data(), 0, out.nbytes());
  Tensor corner = out;
  for (int a = 2; a < out.ndim(); ++a) corner = corner.slice(a, 0, unpooled[a]);
  corner.copy_from(block);
}

KILN_REGISTER_OP(MaxUnpool)
    .doc(
        "The partial inverse of MaxPool: zeros of the unpooled shape with each X value at the flat index its "
        "I entry gives (MaxPool's Indices). output_shape, when given, fixes the shape.")
    .input("X")
    .input("I")
    .shape_input("output_shape", Arity::kOptional)
    .output("output")
    .required_attr("kernel_shape", AttrType::kInts)
    .optional_attr("pads", AttrType::kInts)
    .optional_attr("strides", AttrType::kInts)
    .infer(infer_max_unpool)
    .kernel(max_unpool_kernel);

KILN_REGISTER_OP(AveragePool)
    .doc(
        "Mean over sliding windows of the spatial axes; count_include_pad=1 divides by the taps inside "
        "the padded input rather than those inside the input.")
    .input("X")
    .output("Y")
    .with(declare_pool_window_attrs)
    .attr("count_include_pad", AttrType::kInt, 0, require_flag)
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      return infer_window_pool(ctx, 1);
    })
    .kernel(average_pool_kernel)
    .gradient(average_pool_gradient);

KILN_REGISTER_OP(LpPool)
    .doc("p-norm (sum |x|^p)^(1/p) over sliding windows of the spatial axes.")
    .input("X")
    .output("Y")
    .attr("auto_pad", AttrType::kString, "NOTSET", validate_auto_pad)
    .attr("ceil_mode", AttrType::kInt, 0, require_flag)
    .optional_attr("dilations", AttrType::kInts)
    .required_attr("kernel_shape", AttrType::kInts)
    .attr("p", AttrType::kInt, 2, validate_positive)
    .optional_attr("pads", AttrType::kInts)
    .optional_attr("strides", AttrType::kInts)
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kFloatDTypes);
      return infer_window_pool(ctx, 1);
    })
    .kernel(lp_pool_kernel);

KILN_REGISTER_OP(GlobalAveragePool)
    .doc("Mean over all spatial axes: (N, C, D1, ...) -> (N, C, 1, ...).")
    .input("X")
    .output("Y")
    .infer(infer_global_pool)
    .kernel(global_pool_kernel<false>)
    .gradient(global_average_pool_gradient);

KILN_REGISTER_OP(GlobalMaxPool)
    .doc("Maximum over all spatial axes: (N, C, D1, ...) -> (N, C, 1, ...); NaN wins.")
    .input("X")
    .output("Y")
    .infer(infer_global_pool)
    .kernel(global_pool_kernel<true>);

KILN_REGISTER_OP(MaxPoolGrad)
    .doc("Kiln: the gradient of MaxPool (same attributes): dY of each window added at its maximum in X.")
    .input("dY")
    .input("X")
    .output("dX")
    .with(declare_pool_window_attrs)
    .infer(infer_pool_grad)
    .kernel(max_pool_grad_kernel);

KILN_REGISTER_OP(AveragePoolGrad)
    .doc("Kiln: the gradient of AveragePool (same attributes): dY of each window shared over its taps.")
    .input("dY")
    .input("X")
    .output("dX")
    .with(declare_pool_window_attrs)
    .attr("count_include_pad", AttrType::kInt, 0, require_flag)
    .infer(infer_pool_grad)
    .kernel(average_pool_grad_kernel);

}  // namespace
}  // namespace kiln::ops
