// Ops that place values by position rather than compute them: Trilu (keep one triangle of each
// matrix), EyeLike (ones on one diagonal) and OneHot (on_value at each index along a new axis).
// Trilu only moves bytes, so it serves every dtype; a zero element is all-zero bytes in each.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/thread_pool.h"
#include "elementwise.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// The dtypes ONNX allows for OneHot's indices and depth (no bfloat16, no bool).
inline constexpr DType kOneHotIndexDTypes[] = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kInt8,  DType::kUInt8, DType::kInt16,
    DType::kUInt16,  DType::kInt32,   DType::kUInt32,  DType::kInt64, DType::kUInt64};
inline constexpr DType kInt64DType[] = {DType::kInt64};

// Throws unless input i holds exactly one value (a scalar, or a one-element tensor of rank
// <= max_rank). Unknown dims pass: the kernel sees the data.
void require_one_value(const InferContext& ctx, int i, int max_rank) {
  const Shape& s = ctx.shape(i);
  KILN_CHECK(s.ndim() <= max_rank && (s.numel() == 1 || !s.is_known()), ErrorCode::kShapeMismatch,
             ctx.input_label(i), ": expected a scalar", max_rank > 0 ? " or a one-element 1-D tensor" : "",
             ", got shape ", s);
}

// ---- Trilu -------------------------------------------------------------------------------------

std::vector<TensorInfo> infer_trilu(InferContext& ctx) {
  KILN_CHECK(ctx.shape(0).ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected rank >= 2 (*, N, M), got shape ", ctx.shape(0));
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, kInt64DType);
    require_one_value(ctx, 1, 1);
  }
  return {ctx.input(0)};
}

void trilu_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const Shape& s = x.shape();
  const int64_t rows = s[s.ndim() - 2], cols = s[s.ndim() - 1];
  const int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  // Clamped so that row + k cannot overflow; past either end the result no longer changes.
  const int64_t k =
      std::clamp<int64_t>(ctx.has_input(1) ? ctx.input(1).data<int64_t>()[0] : 0, -rows - 1, cols + 1);
  const bool upper = ctx.attrs.get_int("upper") != 0;
  const auto item = static_cast<int64_t>(x.itemsize());
  const auto* in = static_cast<const char*>(x.raw_data());
  auto* out = static_cast<char*>(y.raw_data());
  const int64_t total_rows = matrices * rows;
  parallel_for(0, total_rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, cols)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   const int64_t i = r % rows;
                   // Columns [begin, end) of this row are kept; the rest become zero.
                   const int64_t begin = upper ? std::clamp<int64_t>(i + k, 0, cols) : 0;
                   const int64_t end = upper ? cols : std::clamp<int64_t>(i + k + 1, 0, cols);
                   const char* src = in + r * cols * item;
                   char* dst = out + r * cols * item;
                   std::memset(dst, 0, static_cast<size_t>(begin * item));
                   std::memcpy(dst + begin * item, src + begin * item,
                               static_cast<size_t>((end - begin) * item));
                   std::memset(dst + end * item, 0, static_cast<size_t>((cols - end) * item));
                 }
               });
}

KILN_REGISTER_OP(Trilu)
    .doc(
        "The upper (upper = 1, the default) or lower triangle of each matrix in the last two axes, "
        "zero elsewhere. Upper keeps column j of row i where j >= i + k; lower where j <= i + k. k "
        "(an int64 scalar input) defaults to 0.")
    .input("input")
    .input("k", Arity::kOptional)
    .output("output")
    .attr("upper", AttrType::kInt, 1,
          [](const AttrValue& v, const std::string& what) {
            const int64_t u = std::get<int64_t>(v.variant());
            KILN_CHECK(u == 0 || u == 1, ErrorCode::kInvalidArgument, what, ": expected 0 or 1, got ", u);
          })
    .infer(infer_trilu)
    .kernel(trilu_kernel);

// ---- EyeLike -----------------------------------------------------------------------------------

KILN_REGISTER_OP(EyeLike)
    .doc(
        "A matrix of the input's 2-D shape with ones on diagonal k (element [i, i + k]; default 0, the "
        "main diagonal) and zeros elsewhere, in dtype `dtype` (an ONNX TensorProto.DataType code; "
        "the input's dtype when absent).")
    .input("input")
    .output("output")
    .optional_attr("dtype", AttrType::kInt, validate_compute_dtype)
    .attr("k", AttrType::kInt, 0)
    .infer([](InferContext& ctx) {
      require_rank(ctx, 0, 2, 2);
      const DType dtype =
          ctx.attrs().has("dtype") ? dtype_from_onnx(ctx.attrs().get_int("dtype")) : ctx.dtype(0);
      return std::vector<TensorInfo>{{dtype, ctx.shape(0)}};
    })
    .kernel([](KernelContext& ctx) {
      Tensor& y = ctx.output(0);
      const int64_t rows = y.shape()[0], cols = y.shape()[1];
      // Past either corner no element lies on the diagonal; clamping first keeps i + k from overflowing.
      const int64_t k = std::clamp<int64_t>(ctx.attrs.get_int("k"), -rows, cols);
      if (y.nbytes() == 0) return;  // an empty matrix has no storage to clear
      std::memset(y.raw_data(), 0, y.nbytes());
      const int64_t first = std::max<int64_t>(0, -k), last = std::min(rows, cols - k);
      dispatch_dtype(y.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T* out = y.data<T>();
        const T one = convert_value<T>(1);
        for (int64_t i = first; i < last; ++i) out[i * cols + i + k] = one;
      });
    });

// ---- OneHot ------------------------------------------------------------------------------------

// The depth input as an integer, truncating a floating value as ONNX casts it to int64.
int64_t read_depth(const Tensor& depth, const std::string& label) {
  const double value = depth.contiguous().cast(DType::kFloat64).data<double>()[0];
  KILN_CHECK(std::isfinite(value) && value >= 0 && value < 9.2e18, ErrorCode::kInvalidArgument, label,
             ": expected a depth >= 0, got ", value);
  return static_cast<int64_t>(value);
}

std::vector<TensorInfo> infer_one_hot(InferContext& ctx) {
  require_dtype(ctx, 0, kOneHotIndexDTypes);
  require_dtype(ctx, 1, kOneHotIndexDTypes);
  require_one_value(ctx, 1, 1);
  const Shape& values = ctx.shape(2);
  KILN_CHECK(values.ndim() == 1 && (values[0] == 2 || values[0] == Shape::kUnknown),
             ErrorCode::kShapeMismatch, ctx.input_label(2),
             ": expected shape (2,) holding [off_value, on_value], got shape ", values);
  const Shape& indices = ctx.shape(0);
  const int64_t axis_attr = ctx.attrs().get_int("axis"), rank = indices.ndim();
  KILN_CHECK(axis_attr >= -rank - 1 && axis_attr <= rank, ErrorCode::kOutOfRange,
             "attribute 'axis': expected ", -rank - 1, " <= axis <= ", rank, " for ", ctx.input_label(0),
             " of rank ", rank, ", got ", axis_attr);
  const int axis = normalize_axis(axis_attr, indices.ndim() + 1, "attribute 'axis'");
  std::vector<int64_t> dims = indices.dims();
  dims.insert(dims.begin() + axis, read_depth(ctx.value(1), ctx.input_label(1)));
  return {TensorInfo{ctx.dtype(2), Shape(std::move(dims))}};
}

void one_hot_kernel(KernelContext& ctx) {
  const Tensor& indices = ctx.input(0);
  Tensor& y = ctx.output(0);
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), y.ndim(), "attribute 'axis'");
  const int64_t depth = y.shape()[axis];
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= y.shape()[i];
  for (int i = axis + 1; i < y.ndim(); ++i) inner *= y.shape()[i];

  // Each index as its class in [0, depth), or -1 where it is outside [-depth, depth).
  std::vector<int64_t> classes(static_cast<size_t>(indices.numel()));
  dispatch_dtype(indices.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = indices.data<T>();
    for (size_t i = 0; i < classes.size(); ++i) {
      int64_t c = -1;
      if constexpr (std::is_integral_v<T>) {
        c = static_cast<int64_t>(in[i]);
      } else {
        // Truncated and range-checked in double: NaN and values beyond int64 have no int64 value.
        const double v = std::trunc(static_cast<double>(static_cast<compute_t<T>>(in[i])));
        c = v >= -static_cast<double>(depth) && v < static_cast<double>(depth) ? static_cast<int64_t>(v)
                                                                               : depth;
      }
      classes[i] = c >= 0 && c < depth ? c : c < 0 && c >= -depth ? c + depth : -1;
    }
  });

  dispatch_dtype(y.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* values = ctx.input(2).data<T>();
    const T off = values[0], on = values[1];
    T* out = y.data<T>();
    const int64_t row = depth * inner;
    parallel_for(0, outer, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, row)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t o = b; o < e; ++o) {
                     const int64_t* cls = classes.data() + o * inner;
                     T* dst = out + o * row;
                     for (int64_t c = 0; c < depth; ++c)
                       for (int64_t j = 0; j < inner; ++j) dst[c * inner + j] = cls[j] == c ? on : off;
                   }
                 });
  });
}

KILN_REGISTER_OP(OneHot)
    .doc(
        "Inserts an axis of size `depth` at `axis` (default -1, the last): element c along it is "
        "on_value where the index is c (or c - depth), off_value elsewhere; values = [off_value, "
        "on_value]. Floating indices and depth are truncated to integers; indices outside "
        "[-depth, depth) give all off_value.")
    .input("indices")
    .shape_input("depth")
    .input("values")
    .output("output")
    .attr("axis", AttrType::kInt, -1)
    .infer(infer_one_hot)
    .kernel(one_hot_kernel);

}  // namespace
}  // namespace kiln::ops
