// Linear quantization between floats and 8-bit integers: QuantizeLinear and DequantizeLinear
// (per tensor, per axis, or in blocks along one axis) and DynamicQuantizeLinear (per tensor, its
// scale and zero point taken from the data's range). INT8 post-training quantization builds on
// these, so rounding (half to even), saturation and the precision of each step follow the ONNX
// spec to the bit.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "attr_validators.h"
#include "core/storage_types.h"
#include "core/thread_pool.h"
#include "quantize_util.h"

namespace kiln::ops {
namespace {

template <class T, class... Allowed>
inline constexpr bool is_one_of = (std::is_same_v<T, Allowed> || ...);

// ---- Attributes naming ONNX data types ----

// QuantizeLinear's output_dtype: 0 (unset) or one of kLinearQuantizedDTypes' ONNX codes.
void validate_quantized_type(const AttrValue& v, const std::string& what) {
  const int64_t code = std::get<int64_t>(v.variant());
  if (code == 0) return;
  std::string names;
  for (DType d : kLinearQuantizedDTypes) {
    if (dtype_to_onnx(d) == code) return;
    names += (names.empty() ? "" : ", ") + std::string(dtype_name(d)) + " (" +
             std::to_string(dtype_to_onnx(d)) + ")";
  }
  raise(code == 24 || code == 27 || code == 28 ? ErrorCode::kUnsupported : ErrorCode::kInvalidArgument, what,
        ": expected a quantized type, one of ", names, ", got ", code);
}

// An attribute naming a float type: 0 (unset) or one of `allowed` (FLOAT 1, FLOAT16 10, DOUBLE 11,
// BFLOAT16 16).
template <int64_t... Allowed>
void validate_float_type(const AttrValue& v, const std::string& what) {
  const int64_t code = std::get<int64_t>(v.variant());
  if (code == 0 || ((code == Allowed) || ...)) return;
  std::string names;
  for (int64_t a : {Allowed...})
    names += (names.empty() ? "" : ", ") + std::string(dtype_name(dtype_from_onnx(a))) + " (" +
             std::to_string(a) + ")";
  raise(ErrorCode::kInvalidArgument, what, ": expected one of ", names, ", got ", code);
}

void validate_block_size(const AttrValue& v, const std::string& what) {
  const int64_t block = std::get<int64_t>(v.variant());
  KILN_CHECK(block >= 0, ErrorCode::kInvalidArgument, what, ": expected a value >= 0 (0: not blocked), got ",
             block);
}

// ---- How a scale and zero point map onto the elements of x ----

// A scale of one element, of rank 0 or 1, quantizes the whole tensor (whatever axis says).
bool is_per_tensor(const Shape& scale) {
  return scale.ndim() == 0 || (scale.ndim() == 1 && scale[0] == 1);
}

// Checks the scale (input s) and the optional zero point (input z) against x (input 0) and the
// axis and block_size attributes: a scalar (per tensor), a 1-D tensor of x.shape[axis] values
// (per axis), or x's shape with axis cut into ceil(x.shape[axis] / block_size) blocks.
void check_quantization_params(const InferContext& ctx, int s, int z) {
  const Shape& x = ctx.shape(0);
  const Shape& scale = ctx.shape(s);
  if (ctx.has_input(z)) {
    const Shape& zero_point = ctx.shape(z);
    // Scalars and vectors of one element mix freely, as ONNX Runtime allows.
    bool same = is_per_tensor(zero_point) && is_per_tensor(scale);
    if (!same && zero_point.ndim() == scale.ndim()) {
      same = true;
      for (int a = 0; a < scale.ndim(); ++a) same = same && dims_agree(zero_point[a], scale[a]);
    }
    KILN_CHECK(same, ErrorCode::kShapeMismatch, ctx.input_label(z), ": expected the shape of ",
               ctx.input_label(s), ", ", scale, ", got ", zero_point);
  }
  if (is_per_tensor(scale)) return;
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), x.ndim(), "attribute 'axis'");
  const int64_t block = ctx.attrs().get_int("block_size");
  if (block == 0) {
    KILN_CHECK(
        scale.ndim() == 1, ErrorCode::kShapeMismatch, ctx.input_label(s),
        ": expected a scalar (per tensor) or a 1-D tensor (per axis) unless block_size is set, got shape ",
        scale);
    KILN_CHECK(dims_agree(scale[0], x[axis]), ErrorCode::kShapeMismatch, ctx.input_label(s),
               ": expected shape ", Shape{x[axis]}, ", one value per index of axis ", axis, " of ",
               ctx.input_label(0), " of shape ", x, ", got ", scale);
    return;
  }
  Shape blocked = x;
  if (x[axis] >= 0) blocked[axis] = (x[axis] + block - 1) / block;
  bool fits = scale.ndim() == x.ndim();
  for (int a = 0; fits && a < x.ndim(); ++a) fits = dims_agree(scale[a], blocked[a]);
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(s), ": expected shape ", blocked, " (",
             ctx.input_label(0), " of shape ", x, " with axis ", axis, " in blocks of block_size = ", block,
             "), got ", scale);
}

// x viewed as (outer, extent, inner) around the quantization axis: element (o, a, i) takes the
// parameter o * outer_stride + (a / block) * axis_stride + i * inner_stride.
struct ParamLayout {
  bool per_tensor = true;
  int64_t outer = 1, extent = 1, inner = 1, block = 1;
  int64_t outer_stride = 0, axis_stride = 0, inner_stride = 0;
};

ParamLayout param_layout(const Shape& x, const Shape& scale, const Attrs& attrs) {
  ParamLayout l;
  if (is_per_tensor(scale)) return l;
  l.per_tensor = false;
  const int axis = normalize_axis(attrs.get_int("axis"), x.ndim(), "axis");
  for (int a = 0; a < axis; ++a) l.outer *= x[a];
  l.extent = x[axis];
  for (int a = axis + 1; a < x.ndim(); ++a) l.inner *= x[a];
  const int64_t block = attrs.get_int("block_size");
  if (block == 0) {
    l.axis_stride = 1;
  } else {
    l.block = block;
    l.outer_stride = scale[axis] * l.inner;
    l.axis_stride = l.inner;
    l.inner_stride = 1;
  }
  return l;
}

// Calls fn(begin, end, param, param_step) over runs of x's elements: element begin + j takes
// parameter param + j * param_step. Runs are split across the compute pool.
template <class F>
void for_each_param_run(const ParamLayout& l, int64_t numel, F&& fn) {
  if (l.per_tensor) {
    parallel_for(0, numel, kQuantizeGrain,
                 [&](int64_t begin, int64_t end) { fn(begin, end, int64_t{0}, int64_t{0}); });
    return;
  }
  parallel_for(0, l.outer * l.extent, std::max<int64_t>(1, kQuantizeGrain / std::max<int64_t>(1, l.inner)),
               [&](int64_t begin, int64_t end) {
                 // Walk (o, a) along the rows, so that no row pays for a division.
                 int64_t o = begin / l.extent, a = begin % l.extent;
                 int64_t block_index = a / l.block, in_block = a % l.block;
                 for (int64_t r = begin; r < end; ++r) {
                   fn(r * l.inner, (r + 1) * l.inner, o * l.outer_stride + block_index * l.axis_stride,
                      l.inner_stride);
                   if (++in_block == l.block) {
                     in_block = 0;
                     ++block_index;
                   }
                   if (++a == l.extent) {
                     a = in_block = block_index = 0;
                     ++o;
                   }
                 }
               });
}

// The zero points of input i as int32, or `count` zeros when it is missing. The float types'
// must be zero, as the spec says (they have no integer offset to add).
std::vector<int32_t> zero_points(const KernelContext& ctx, int i, int64_t count) {
  if (!ctx.has_input(i)) return std::vector<int32_t>(static_cast<size_t>(count), 0);
  const Tensor& t = ctx.input(i);
  std::vector<int32_t> values(static_cast<size_t>(t.numel()));
  if (is_storage_type(t.dtype())) {
    const auto* bits = static_cast<const uint8_t*>(t.raw_data());
    for (size_t k = 0; k < values.size(); ++k) {
      const double v = storage_to_double(t.dtype(), bits[k]);
      KILN_CHECK(!is_storage_float(t.dtype()) || v == 0, ErrorCode::kInvalidArgument, "input ", i,
                 " (zero point): a ", dtype_name(t.dtype()), " zero point must be 0, got ", v, " at index ",
                 k);
      values[k] = static_cast<int32_t>(v);
    }
    return values;
  }
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_one_of<T, int8_t, uint8_t, int16_t, uint16_t, int32_t>)
      std::copy(t.data<T>(), t.data<T>() + t.numel(), values.begin());
  });
  return values;
}

// The values of a float or int32 tensor rounded to P, held in P's compute type.
template <class P>
std::vector<compute_t<P>> values_in(const Tensor& t) {
  std::vector<compute_t<P>> values(static_cast<size_t>(t.numel()));
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same_v<T, bool>) {
      const T* p = t.data<T>();
      for (size_t i = 0; i < values.size(); ++i)
        values[i] = static_cast<compute_t<P>>(convert_value<P>(p[static_cast<ptrdiff_t>(i)]));
    }
  });
  return values;
}

// ---- QuantizeLinear ----

inline constexpr DType kQuantizeInputDTypes[] = {DType::kFloat32, DType::kFloat16, DType::kBFloat16,
                                                 DType::kInt32};

// The type x / y_scale is computed in: the precision attribute, else y_scale's type (double
// for an int32 scale, whose quotient is still a real number).
DType division_dtype(const Attrs& attrs, DType scale) {
  if (const int64_t code = attrs.get_int("precision"); code != 0) return dtype_from_onnx(code);
  return scale == DType::kInt32 ? DType::kFloat64 : scale;
}

std::vector<TensorInfo> infer_quantize(InferContext& ctx) {
  require_dtype(ctx, 0, kQuantizeInputDTypes);
  require_dtype(ctx, 1, kQuantizeInputDTypes);
  check_quantization_params(ctx, 1, 2);
  const int64_t code = ctx.attrs().get_int("output_dtype");
  DType out = code == 0 ? DType::kUInt8 : dtype_from_onnx(code);
  if (ctx.has_input(2)) {
    require_dtype(ctx, 2, kLinearQuantizedDTypes);
    KILN_CHECK(code == 0 || ctx.dtype(2) == out, ErrorCode::kTypeMismatch, ctx.input_label(2),
               ": expected the dtype attribute 'output_dtype' names, ", dtype_name(out), ", got ",
               dtype_name(ctx.dtype(2)));
    out = ctx.dtype(2);
  }
  return {TensorInfo{out, ctx.shape(0)}};
}

// y = store(P(x) / P(scale), zero_point), the quotient rounded to P; store saturates and rounds
// it into the output type (saturate_round for the integers).
template <class X, class P, class Q, class Store>
void quantize_with(const Tensor& x, const std::vector<compute_t<P>>& scales,
                   const std::vector<int32_t>& zero_points, const ParamLayout& layout, Tensor& y,
                   Store store) {
  using Acc = compute_t<P>;
  const X* px = x.data<X>();
  Q* py = static_cast<Q*>(y.raw_data());  // Q = uint8_t holds the storage types' bytes
  for_each_param_run(layout, x.numel(), [&](int64_t begin, int64_t end, int64_t p, int64_t step) {
    for (int64_t i = begin; i < end; ++i, p += step) {
      Acc quotient = static_cast<Acc>(convert_value<P>(px[i])) / scales[static_cast<size_t>(p)];
      if constexpr (!std::is_same_v<P, Acc>) quotient = static_cast<Acc>(P(quotient));
      py[i] = store(static_cast<double>(quotient), zero_points[static_cast<size_t>(p)]);
    }
  });
}

template <class X, class P, class Q>
void quantize_typed(const Tensor& x, const std::vector<compute_t<P>>& scales,
                    const std::vector<int32_t>& zero_points, const ParamLayout& layout, Tensor& y) {
  quantize_with<X, P, Q>(x, scales, zero_points, layout, y, [](double quotient, int32_t zero_point) {
    return saturate_round<Q>(quotient, zero_point);
  });
}

// Into a storage type: the 4- and 2-bit integers saturate to their range; the floats round to
// nearest even, past their range to the largest value when `saturate`, else infinity or NaN.
template <class X, class P>
void quantize_to_storage(const Tensor& x, const std::vector<compute_t<P>>& scales,
                         const std::vector<int32_t>& zero_points, const ParamLayout& layout, Tensor& y,
                         bool saturate) {
  const DType q = y.dtype();
  if (is_storage_float(q)) {
    const CastOptions options{saturate, RoundMode::kUp};
    quantize_with<X, P, uint8_t>(x, scales, zero_points, layout, y, [q, options](double quotient, int32_t) {
      return storage_float_from_double(q, quotient, options);
    });
    return;
  }
  const double lo = storage_int_min(q), hi = storage_int_max(q);
  quantize_with<X, P, uint8_t>(
      x, scales, zero_points, layout, y, [lo, hi](double quotient, int32_t zero_point) {
        return static_cast<uint8_t>(static_cast<int>(saturate_round_in(quotient, zero_point, lo, hi)));
      });
}

void quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  Tensor& y = ctx.output(0);
  const ParamLayout layout = param_layout(x.shape(), scale.shape(), ctx.attrs);
  const std::vector<int32_t> zp = zero_points(ctx, 2, scale.numel());
  dispatch_dtype(division_dtype(ctx.attrs, scale.dtype()), [&](auto precision_tag) {
    using P = typename decltype(precision_tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<P>>) {
      const std::vector<compute_t<P>> scales = values_in<P>(scale);
      dispatch_dtype(x.dtype(), [&](auto x_tag) {
        using X = typename decltype(x_tag)::type;
        if constexpr (is_one_of<X, float, float16, bfloat16, int32_t>) {
          if (is_storage_type(y.dtype())) {
            quantize_to_storage<X, P>(x, scales, zp, layout, y, ctx.attrs.get_int("saturate") != 0);
            return;
          }
          dispatch_dtype(y.dtype(), [&](auto q_tag) {
            using Q = typename decltype(q_tag)::type;
            if constexpr (is_one_of<Q, int8_t, uint8_t, int16_t, uint16_t>)
              quantize_typed<X, P, Q>(x, scales, zp, layout, y);
          });
        }
      });
    }
  });
}

KILN_REGISTER_OP(QuantizeLinear)
    .takes_storage_types()
    .doc(
        "y = saturate(round(x / y_scale) + y_zero_point), rounding half to even, per tensor, per axis or in "
        "blocks of block_size along axis. The output type is y_zero_point's, else output_dtype, else uint8.")
    .input("x")
    .input("y_scale")
    .input("y_zero_point", Arity::kOptional)
    .output("y")
    .attr("axis", AttrType::kInt, 1)
    .attr("block_size", AttrType::kInt, 0, validate_block_size)
    .attr("output_dtype", AttrType::kInt, 0, validate_quantized_type)
    .attr("precision", AttrType::kInt, 0, validate_float_type<1, 10, 11, 16>)
    // Only float8 outputs saturate optionally; integer outputs always saturate.
    .attr("saturate", AttrType::kInt, 1, require_flag)
    .infer(infer_quantize)
    .kernel(quantize_kernel);

// ---- DequantizeLinear ----

// DequantizeLinear also reads int32 (the accumulators of quantized matmuls and convolutions).
inline constexpr DType kDequantizeInputDTypes[] = {
    DType::kInt8,           DType::kUInt8,        DType::kInt16,          DType::kUInt16,
    DType::kInt32,          DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
    DType::kFloat8E5M2FNUZ, DType::kFloat4E2M1,   DType::kInt4,           DType::kUInt4,
    DType::kInt2,           DType::kUInt2};

std::vector<TensorInfo> infer_dequantize(InferContext& ctx) {
  require_dtype(ctx, 0, kDequantizeInputDTypes);
  require_dtype(ctx, 1, kScaleDTypes);
  if (ctx.has_input(2)) require_same_dtype(ctx, 0, 2);
  check_quantization_params(ctx, 1, 2);
  const int64_t code = ctx.attrs().get_int("output_dtype");
  return {TensorInfo{code == 0 ? ctx.dtype(1) : dtype_from_onnx(code), ctx.shape(0)}};
}

// y = (x - zero_point) * scale, computed in float (double for int32 x, whose differences float
// would round) and rounded once to the output type, as the ONNX reference does.
template <class X, class Out>
void dequantize_typed(const Tensor& x, const Tensor& scale, const std::vector<int32_t>& zero_points,
                      const ParamLayout& layout, Tensor& y) {
  using Acc = std::conditional_t<std::is_same_v<X, int32_t>, double, float>;
  const std::vector<Acc> scales = values_in<Acc>(scale);
  const X* px = x.data<X>();
  Out* py = y.data<Out>();
  for_each_param_run(layout, x.numel(), [&](int64_t begin, int64_t end, int64_t p, int64_t step) {
    for (int64_t i = begin; i < end; ++i, p += step) {
      const int64_t shifted = int64_t{px[i]} - zero_points[static_cast<size_t>(p)];
      py[i] = convert_value<Out>(static_cast<Acc>(shifted) * scales[static_cast<size_t>(p)]);
    }
  });
}

// From a storage type: its exact value, less the zero point, times the scale, in float.
template <class Out>
void dequantize_storage(const Tensor& x, const Tensor& scale, const std::vector<int32_t>& zero_points,
                        const ParamLayout& layout, Tensor& y) {
  const std::vector<float> scales = values_in<float>(scale);
  const auto* px = static_cast<const uint8_t*>(x.raw_data());
  Out* py = y.data<Out>();
  for_each_param_run(layout, x.numel(), [&](int64_t begin, int64_t end, int64_t p, int64_t step) {
    for (int64_t i = begin; i < end; ++i, p += step) {
      const auto shifted =
          static_cast<float>(storage_to_double(x.dtype(), px[i]) - zero_points[static_cast<size_t>(p)]);
      py[i] = convert_value<Out>(shifted * scales[static_cast<size_t>(p)]);
    }
  });
}

void dequantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const Tensor& scale = ctx.input(1);
  Tensor& y = ctx.output(0);
  const ParamLayout layout = param_layout(x.shape(), scale.shape(), ctx.attrs);
  const std::vector<int32_t> zp = zero_points(ctx, 2, scale.numel());
  if (is_storage_type(x.dtype())) {
    dispatch_dtype(y.dtype(), [&](auto out_tag) {
      using Out = typename decltype(out_tag)::type;
      if constexpr (is_one_of<Out, float, float16, bfloat16>)
        dequantize_storage<Out>(x, scale, zp, layout, y);
    });
    return;
  }
  dispatch_dtype(x.dtype(), [&](auto x_tag) {
    using X = typename decltype(x_tag)::type;
    if constexpr (is_one_of<X, int8_t, uint8_t, int16_t, uint16_t, int32_t>) {
      dispatch_dtype(y.dtype(), [&](auto out_tag) {
        using Out = typename decltype(out_tag)::type;
        if constexpr (is_one_of<Out, float, float16, bfloat16>)
          dequantize_typed<X, Out>(x, scale, zp, layout, y);
      });
    }
  });
}

KILN_REGISTER_OP(DequantizeLinear)
    .takes_storage_types()
    .doc(
        "y = (x - x_zero_point) * x_scale, per tensor, per axis or in blocks of block_size along axis. The "
        "output type is output_dtype, else x_scale's.")
    .input("x")
    .input("x_scale")
    .input("x_zero_point", Arity::kOptional)
    .output("y")
    .attr("axis", AttrType::kInt, 1)
    .attr("block_size", AttrType::kInt, 0, validate_block_size)
    .attr("output_dtype", AttrType::kInt, 0, validate_float_type<1, 10, 16>)
    .infer(infer_dequantize)
    .kernel(dequantize_kernel);

// ---- DynamicQuantizeLinear ----

std::vector<TensorInfo> infer_dynamic_quantize(InferContext& ctx) {
  const DType float32[] = {DType::kFloat32};
  require_dtype(ctx, 0, float32);
  return {TensorInfo{DType::kUInt8, ctx.shape(0)}, TensorInfo{DType::kFloat32, Shape{}},
          TensorInfo{DType::kUInt8, Shape{}}};
}

// The range [min(0, min x), max(0, max x)] of x's values, NaNs left out.
std::pair<float, float> range_with_zero(const float* x, int64_t n) {
  const int64_t chunks = (n + kQuantizeGrain - 1) / kQuantizeGrain;
  // One slot even for an empty x, whose range is [0, 0].
  std::vector<float> lows(static_cast<size_t>(std::max<int64_t>(1, chunks)), 0.0f), highs = lows;
  parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c) {
      float lo = 0.0f, hi = 0.0f;
      for (int64_t i = c * kQuantizeGrain; i < std::min(n, (c + 1) * kQuantizeGrain); ++i) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
      }
      lows[static_cast<size_t>(c)] = lo;
      highs[static_cast<size_t>(c)] = hi;
    }
  });
  return {*std::min_element(lows.begin(), lows.end()), *std::max_element(highs.begin(), highs.end())};
}

void dynamic_quantize_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const auto [lo, hi] = range_with_zero(x.data<float>(), x.numel());
  // All in float, as the spec's formulas. An empty range (x all zeros, or empty) has no scale
  // of its own; 1 keeps y_scale usable, as in ONNX Runtime.
  const float scale = lo == hi ? 1.0f : (hi - lo) / 255.0f;
  const float zero_point = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  ctx.output(1).data<float>()[0] = scale;
  ctx.output(2).data<uint8_t>()[0] = static_cast<uint8_t>(zero_point);
  quantize_typed<float, float, uint8_t>(x, {scale}, {static_cast<int32_t>(zero_point)}, ParamLayout{},
                                        ctx.output(0));
}

KILN_REGISTER_OP(DynamicQuantizeLinear)
    .doc(
        "Quantizes float x to uint8 over its range widened to include 0: y_scale = (max - min) / 255, "
        "y_zero_point = round(-min / y_scale) saturated, y = saturate(round(x / y_scale) + y_zero_point).")
    .input("x")
    .output("y")
    .output("y_scale")
    .output("y_zero_point")
    .infer(infer_dynamic_quantize)
    .kernel(dynamic_quantize_kernel);

}  // namespace
}  // namespace kiln::ops
