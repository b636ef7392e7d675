// Matrix products and convolutions of 8-bit quantized tensors: MatMulInteger and ConvInteger
// (int32 results), QLinearMatMul and QLinearConv (requantized to 8 bits). Zero points are
// subtracted before the product (so convolution padding is a real zero, as in the ONNX
// reference), products accumulate in 32 bits and wrap on overflow as the spec allows, and
// requantization rounds half to even and saturates.
#include <algorithm>
#include <array>
#include <type_traits>
#include <vector>

#include "broadcast.h"
#include "conv_util.h"
#include "kiln/threading.hpp"
#include "matmul_kernel.h"
#include "quantize_util.h"

namespace kiln::ops {
namespace {

// A scale or zero point of one element, whatever its rank: it applies to the whole tensor.
bool is_single(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return d == 1; });
}

// is_single, where unknown dimensions may turn out to be 1.
bool may_be_single(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](int64_t d) { return dims_agree(d, 1); });
}

void require_single(const InferContext& ctx, int i) {
  KILN_CHECK(may_be_single(ctx.shape(i)), ErrorCode::kShapeMismatch, ctx.input_label(i),
             ": expected a scalar (per tensor), got shape ", ctx.shape(i));
}

// The values of an integer or float tensor as V.
template <class V>
std::vector<V> values_as(const Tensor& t) {
  std::vector<V> values(static_cast<size_t>(t.numel()));
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < values.size(); ++i) values[i] = convert_value<V>(p[static_cast<ptrdiff_t>(i)]);
  });
  return values;
}

// Input i's values as V, or `count` zeros when the optional input is missing.
template <class V>
std::vector<V> values_or_zeros(const KernelContext& ctx, int i, int64_t count) {
  return ctx.has_input(i) ? values_as<V>(ctx.input(i)) : std::vector<V>(static_cast<size_t>(count), V(0));
}

// The wrapping 32-bit product of int16 matrices (8-bit values less their zero points):
// store(i, j0, len, acc) receives each tile row, acc[j] the sum modulo 2^32. Unsigned arithmetic
// makes the wrap the spec allows well defined.
template <class Store>
void integer_gemm(int64_t m, int64_t n, int64_t k, const int16_t* a, int64_t lda, const int16_t* b,
                  int64_t ldb, Store& store) {
  if (m <= 0 || n <= 0) return;
  gemm_detail::product_tiles<uint32_t>(false, m, n, k, a, lda, b, ldb, store);
}

// ---- MatMulInteger, QLinearMatMul ----

// An operand as a stack of matrices: a 1-D A is one row, a 1-D B one column (numpy matmul).
struct MatrixStack {
  Shape batch;
  int64_t rows = 0, cols = 0;
};

MatrixStack matrix_stack(const Shape& s, bool is_a) {
  if (s.ndim() == 1) return is_a ? MatrixStack{Shape{}, 1, s[0]} : MatrixStack{Shape{}, s[0], 1};
  return {Shape(std::vector<int64_t>(s.begin(), s.end() - 2)), s[s.ndim() - 2], s[s.ndim() - 1]};
}

// Checks A (input a) and B (input b): 8-bit, numpy matmul shapes. Returns the product's shape.
Shape infer_matmul_shape(const InferContext& ctx, int a, int b) {
  require_dtype(ctx, a, kQuantizedDTypes);
  require_dtype(ctx, b, kQuantizedDTypes);
  for (int i : {a, b})
    KILN_CHECK(ctx.shape(i).ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(i),
               ": expected rank >= 1, got a scalar");
  const Shape& sa = ctx.shape(a);
  const Shape& sb = ctx.shape(b);
  const MatrixStack ma = matrix_stack(sa, true), mb = matrix_stack(sb, false);
  KILN_CHECK(dims_agree(ma.cols, mb.rows), ErrorCode::kShapeMismatch, ctx.input_label(b), ": expected ",
             ma.cols, " rows to match the columns of ", ctx.input_label(a), " ", sa, ", got shape ", sb);
  Shape out = broadcast_shapes(ma.batch, mb.batch, "batch dimensions");
  if (sa.ndim() >= 2) out.push_back(ma.rows);
  if (sb.ndim() >= 2) out.push_back(mb.cols);
  return out;
}

// Checks a scale or zero point (input p) of the operand in input `operand`: a scalar (per
// tensor), or varying along A's rows (per_row) or B's columns: a vector of that length, or the
// operand's rank with batch dimensions of 1 or the operand's and 1 along the other matrix axis.
void check_matrix_param(const InferContext& ctx, int p, int operand, bool per_row) {
  const Shape& s = ctx.shape(p);
  const Shape& x = ctx.shape(operand);
  if (may_be_single(s)) return;
  const int r = x.ndim();
  bool fits = false;
  if (r >= 2) {
    // The matrix axis the parameter varies along, and the one it must be constant across.
    const int along = per_row ? r - 2 : r - 1, across = per_row ? r - 1 : r - 2;
    if (s.ndim() == 1) fits = dims_agree(s[0], x[along]);
    if (s.ndim() == r) {
      fits = dims_agree(s[across], 1) && (s[along] == 1 || dims_agree(s[along], x[along]));
      for (int d = 0; fits && d < r - 2; ++d) fits = s[d] == 1 || dims_agree(s[d], x[d]);
    }
  }
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(p),
             ": expected a scalar (per tensor) or one value per ", per_row ? "row" : "column", " of ",
             ctx.input_label(operand), " of shape ", x, " (a vector, or shape ",
             per_row ? "(..., M, 1)" : "(..., 1, N)", "), got ", s);
}

// The values of a parameter checked by check_matrix_param, one per (matrix, row) of A or
// (matrix, column) of B: values[batch_index * extent + r].
template <class V>
std::vector<V> expand_matrix_param(const Tensor& p, const Shape& operand, bool per_row) {
  const MatrixStack m = matrix_stack(operand, per_row);
  const int64_t extent = per_row ? m.rows : m.cols, batches = m.batch.numel();
  const std::vector<V> given = values_as<V>(p);
  std::vector<V> values(static_cast<size_t>(batches * extent));
  if (is_single(p.shape())) {
    std::fill(values.begin(), values.end(), given[0]);
    return values;
  }
  // Element strides of p along the operand's batch axes (0 where p has 1) and the varying axis.
  const int r = operand.ndim();
  std::vector<int64_t> batch_strides(static_cast<size_t>(std::max(0, r - 2)), 0);
  int64_t step = 1;
  if (p.ndim() == r) {
    const std::vector<int64_t> strides = contiguous_strides(p.shape());
    for (int d = 0; d < r - 2; ++d)
      batch_strides[static_cast<size_t>(d)] = p.shape()[d] == 1 ? 0 : strides[static_cast<size_t>(d)];
    const int axis = per_row ? r - 2 : r - 1;
    step = p.shape()[axis] == 1 ? 0 : strides[static_cast<size_t>(axis)];
  }
  for (int64_t b = 0; b < batches; ++b) {
    int64_t offset = 0;
    for (int64_t d = r - 3, rest = b; d >= 0; --d) {
      offset += (rest % operand[static_cast<int>(d)]) * batch_strides[static_cast<size_t>(d)];
      rest /= operand[static_cast<int>(d)];
    }
    for (int64_t i = 0; i < extent; ++i)
      values[static_cast<size_t>(b * extent + i)] = given[static_cast<size_t>(offset + i * step)];
  }
  return values;
}

// x - zero_point as int16, the zero points one per (matrix, row) or (matrix, column).
template <class T>
std::vector<int16_t> shifted_matrices(const Tensor& x, const std::vector<int32_t>& zero_points,
                                      bool per_row) {
  const MatrixStack m = matrix_stack(x.shape(), per_row);
  const int64_t rows = m.batch.numel() * m.rows, cols = m.cols;
  std::vector<int16_t> out(static_cast<size_t>(x.numel()));
  const T* px = x.data<T>();
  parallel_for(0, rows, std::max<int64_t>(1, kQuantizeGrain / std::max<int64_t>(1, cols)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t row = begin; row < end; ++row) {
                   // Stack row `row` is row row % m.rows of matrix row / m.rows.
                   const int32_t* zp = zero_points.data() + (per_row ? row : (row / m.rows) * cols);
                   for (int64_t j = 0; j < cols; ++j)
                     out[static_cast<size_t>(row * cols + j)] =
                         static_cast<int16_t>(px[row * cols + j] - zp[per_row ? 0 : j]);
                 }
               });
  return out;
}

std::vector<int16_t> shifted_matrices(const Tensor& x, const std::vector<int32_t>& zero_points,
                                      bool per_row) {
  return x.dtype() == DType::kInt8 ? shifted_matrices<int8_t>(x, zero_points, per_row)
                                   : shifted_matrices<uint8_t>(x, zero_points, per_row);
}

// Computes every product of the broadcast batch of A (input 0 of the kernel) and B: calls
// store(index, ia, ib, i, j0, len, acc) for tile rows of product `index`, which multiplies
// matrix ia of A by matrix ib of B.
template <class Store>
void batched_integer_matmul(const Tensor& a, const Tensor& b, const std::vector<int32_t>& a_zero_points,
                            const std::vector<int32_t>& b_zero_points, Store&& store) {
  const MatrixStack ma = matrix_stack(a.shape(), true), mb = matrix_stack(b.shape(), false);
  const int64_t m = ma.rows, k = ma.cols, n = mb.cols;
  const Shape batch = broadcast_shapes(ma.batch, mb.batch, "batch dimensions");
  const int64_t batches = batch.numel();
  if (batches == 0) return;
  const std::vector<int16_t> sa = shifted_matrices(a, a_zero_points, true);
  const std::vector<int16_t> sb = shifted_matrices(b, b_zero_points, false);
  const BroadcastPlan<2> plan(batch, {ma.batch, mb.batch});
  auto multiply = [&](int64_t first, int64_t last) {
    std::array<int64_t, 2> off;
    for (int64_t index = first; index < last; ++index) {
      plan.row_offsets(index / plan.inner(), off);
      const int64_t j = index % plan.inner();
      const int64_t ia = off[0] + j * plan.inner_stride(0), ib = off[1] + j * plan.inner_stride(1);
      auto tile = [&](int64_t i, int64_t j0, int64_t len, const uint32_t* acc) {
        store(index, ia, ib, i, j0, len, acc);
      };
      integer_gemm(m, n, k, sa.data() + ia * m * k, k, sb.data() + ib * k * n, n, tile);
    }
  };
  // Many products: one per task (each runs serially inside). Few: each splits its own rows.
  if (batches >= num_threads())
    parallel_for(0, batches, std::max<int64_t>(1, gemm_detail::kTaskWork / std::max<int64_t>(1, m * n * k)),
                 multiply);
  else
    multiply(0, batches);
}

std::vector<TensorInfo> infer_matmul_integer(InferContext& ctx) {
  const Shape out = infer_matmul_shape(ctx, 0, 1);
  for (int zp = 2; zp < 4; ++zp) {
    if (!ctx.has_input(zp)) continue;
    require_same_dtype(ctx, zp - 2, zp);
    check_matrix_param(ctx, zp, zp - 2, zp == 2);
  }
  return {TensorInfo{DType::kInt32, out}};
}

// The zero points of input i for the operand `x`, one per (matrix, row) of A (per_row) or
// (matrix, column) of B; zeros when the optional input is missing.
std::vector<int32_t> matrix_zero_points(const KernelContext& ctx, int i, const Tensor& x, bool per_row) {
  if (ctx.has_input(i)) return expand_matrix_param<int32_t>(ctx.input(i), x.shape(), per_row);
  const MatrixStack m = matrix_stack(x.shape(), per_row);
  return std::vector<int32_t>(static_cast<size_t>(m.batch.numel() * (per_row ? m.rows : m.cols)), 0);
}

void matmul_integer_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  const int64_t m = matrix_stack(a.shape(), true).rows, n = matrix_stack(b.shape(), false).cols;
  int32_t* py = ctx.output(0).data<int32_t>();
  batched_integer_matmul(
      a, b, matrix_zero_points(ctx, 2, a, true), matrix_zero_points(ctx, 3, b, false),
      [&](int64_t index, int64_t, int64_t, int64_t i, int64_t j0, int64_t len, const uint32_t* acc) {
        int32_t* row = py + (index * m + i) * n + j0;
        for (int64_t j = 0; j < len; ++j) row[j] = static_cast<int32_t>(acc[j]);
      });
}

KILN_REGISTER_OP(MatMulInteger)
    .doc(
        "int32 matrix product (numpy matmul) of 8-bit A and B less their zero points: a scalar, or one per "
        "row of A / column of B. Accumulates in 32 bits, wrapping on overflow.")
    .input("A")
    .input("B")
    .input("a_zero_point", Arity::kOptional)
    .input("b_zero_point", Arity::kOptional)
    .output("Y")
    .infer(infer_matmul_integer)
    .kernel(matmul_integer_kernel);

// QLinearMatMul's inputs: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point.
std::vector<TensorInfo> infer_qlinear_matmul(InferContext& ctx) {
  const Shape out = infer_matmul_shape(ctx, 0, 3);
  require_dtype(ctx, 1, kScaleDTypes);
  require_same_dtype(ctx, 1, 4);
  require_same_dtype(ctx, 1, 6);
  require_same_dtype(ctx, 0, 2);
  require_same_dtype(ctx, 3, 5);
  require_dtype(ctx, 7, kQuantizedDTypes);
  for (int operand : {0, 3})
    for (int p : {operand + 1, operand + 2}) check_matrix_param(ctx, p, operand, operand == 0);
  require_single(ctx, 6);
  require_single(ctx, 7);
  return {TensorInfo{ctx.dtype(7), out}};
}

void qlinear_matmul_kernel(KernelContext& ctx) {
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(3);
  const auto scale_a = expand_matrix_param<float>(ctx.input(1), a.shape(), true);
  const auto scale_b = expand_matrix_param<float>(ctx.input(4), b.shape(), false);
  const auto zp_a = matrix_zero_points(ctx, 2, a, true);
  const auto zp_b = matrix_zero_points(ctx, 5, b, false);
  const float scale_y = values_as<float>(ctx.input(6))[0];
  const int32_t zp_y = values_as<int32_t>(ctx.input(7))[0];
  Tensor& y = ctx.output(0);
  const int64_t m = matrix_stack(a.shape(), true).rows, n = matrix_stack(b.shape(), false).cols;
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using Q = typename decltype(tag)::type;
    if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t>) {
      Q* py = y.data<Q>();
      batched_integer_matmul(a, b, zp_a, zp_b,
                             [&](int64_t index, int64_t ia, int64_t ib, int64_t i, int64_t j0, int64_t len,
                                 const uint32_t* acc) {
                               const float row_scale = scale_a[static_cast<size_t>(ia * m + i)];
                               const float* col_scales = scale_b.data() + ib * n + j0;
                               Q* row = py + (index * m + i) * n + j0;
                               // The multiplier in float, as the ONNX reference and ONNX Runtime compute it;
                               // the product with the int32 sum in double, which holds the sum exactly.
                               for (int64_t j = 0; j < len; ++j) {
                                 const float multiplier = row_scale * col_scales[j] / scale_y;
                                 row[j] = saturate_round<Q>(
                                     static_cast<double>(static_cast<int32_t>(acc[j])) * multiplier, zp_y);
                               }
                             });
    }
  });
}

KILN_REGISTER_OP(QLinearMatMul)
    .doc(
        "Quantized matrix product (numpy matmul): y = saturate(round((a - a_zero_point) (b - b_zero_point) * "
        "a_scale * b_scale / y_scale) + y_zero_point). a's parameters are scalars or per row, b's scalars or "
        "per column, y's scalars.")
    .input("a")
    .input("a_scale")
    .input("a_zero_point")
    .input("b")
    .input("b_scale")
    .input("b_zero_point")
    .input("y_scale")
    .input("y_zero_point")
    .output("y")
    .infer(infer_qlinear_matmul)
    .kernel(qlinear_matmul_kernel);

// ---- ConvInteger, QLinearConv ----

struct ConvAxis {
  int64_t pad_begin = 0, pad_end = 0, output = 0;
};

// The pads and output extent of spatial axis `axis` of `in` elements (as Conv computes them).
ConvAxis conv_axis(const WindowAttrs& wa, int axis, int64_t in) {
  const size_t a = static_cast<size_t>(axis), spatial = wa.kernel.size();
  const int64_t stride = wa.strides[a], span = (wa.kernel[a] - 1) * wa.dilations[a] + 1;
  switch (wa.auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      const int64_t out = ceil_div(in, stride);
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
      const int64_t begin = same_pad_begin(wa.auto_pad, total);
      return {begin, total - begin, out};
    }
    case AutoPad::kValid:
      return {0, 0, floor_div(in - span, stride) + 1};
    case AutoPad::kNotSet:
      break;
  }
  const int64_t begin = wa.pads[a], end = wa.pads[a + spatial];
  return {begin, end, floor_div(in + begin + end - span, stride) + 1};
}

// Checks X (input x) and W (input w) of an integer convolution and the window attributes, as
// Conv does. Returns the output shape.
Shape infer_conv_shape(const InferContext& ctx, int x_in, int w_in) {
  require_dtype(ctx, x_in, kQuantizedDTypes);
  require_dtype(ctx, w_in, kQuantizedDTypes);
  const Shape& x = ctx.shape(x_in);
  const Shape& w = ctx.shape(w_in);
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, ctx.input_label(x_in),
             ": expected (N, C, D1, ...) with 1 to 3 spatial axes, got shape ", x);
  KILN_CHECK(x.ndim() <= 5, ErrorCode::kUnsupported, ctx.input_label(x_in),
             ": more than 3 spatial axes are not implemented, got shape ", x);
  KILN_CHECK(w.ndim() == x.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(w_in), ": expected ", x.ndim(),
             "-D like ", ctx.input_label(x_in), " of shape ", x, ", got shape ", w);
  const WindowAttrs wa = read_window_attrs(ctx.attrs(), w);
  const int spatial = x.ndim() - 2;
  for (int a = 0; a < spatial; ++a)
    KILN_CHECK(dims_agree(w[a + 2], wa.kernel[static_cast<size_t>(a)]), ErrorCode::kShapeMismatch,
               "attribute 'kernel_shape': expected ", ints_text(std::vector<int64_t>(w.begin() + 2, w.end())),
               ", the kernel of ", ctx.input_label(w_in), " of shape ", w, ", got ", ints_text(wa.kernel));
  const int64_t channels = x[1], filters = w[0], group = wa.group;
  if (channels >= 0) {
    KILN_CHECK(channels % group == 0, ErrorCode::kShapeMismatch, ctx.input_label(x_in),
               ": expected a channel count C divisible by group = ", group, ", got shape ", x);
    KILN_CHECK(dims_agree(w[1] * group, channels), ErrorCode::kShapeMismatch, ctx.input_label(w_in),
               ": expected shape (M, C/group, ", kernel_dims_text(spatial),
               ") with C/group = ", channels / group, ", got ", w);
  }
  KILN_CHECK(filters < 0 || filters % group == 0, ErrorCode::kShapeMismatch, ctx.input_label(w_in),
             ": expected a filter count M divisible by group = ", group, ", got shape ", w);
  Shape out{x[0], filters};
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t in = x[a + 2];
    if (in < 0 || wa.kernel[i] < 0) {
      out.push_back(Shape::kUnknown);
      continue;
    }
    const ConvAxis axis = conv_axis(wa, a, in);
    if (wa.auto_pad == AutoPad::kNotSet || wa.auto_pad == AutoPad::kValid) {
      const int64_t padded = in + axis.pad_begin + axis.pad_end;
      const int64_t span = (wa.kernel[i] - 1) * wa.dilations[i] + 1;
      KILN_CHECK(padded >= span, ErrorCode::kShapeMismatch, ctx.input_label(x_in), ": spatial axis ", a + 2,
                 " has ", in, " elements (", padded, " with pads), fewer than the ", span,
                 " the kernel spans (kernel ", wa.kernel[i], ", dilation ", wa.dilations[i], ")");
    }
    out.push_back(axis.output);
  }
  return out;
}

// Checks a parameter of W that may be per output channel: a scalar or a vector of M values.
void check_per_channel(const InferContext& ctx, int p, int w_in) {
  const Shape& s = ctx.shape(p);
  if (may_be_single(s)) return;
  const int64_t filters = ctx.shape(w_in)[0];
  KILN_CHECK(s.ndim() == 1 && dims_agree(s[0], filters), ErrorCode::kShapeMismatch, ctx.input_label(p),
             ": expected a scalar (per tensor) or shape ", Shape{filters},
             " (one value per output channel of ", ctx.input_label(w_in), "), got ", s);
}

// x - zero_point as int16, x cut into as many equal runs as there are zero points (one for
// all of x, or one per output channel of W).
std::vector<int16_t> shifted_blocks(const Tensor& x, const std::vector<int32_t>& zero_points) {
  std::vector<int16_t> out(static_cast<size_t>(x.numel()));
  const int64_t blocks = static_cast<int64_t>(zero_points.size());
  const int64_t block = blocks == 0 ? 0 : x.numel() / blocks;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>) {
      const T* px = x.data<T>();
      parallel_for(0, blocks, std::max<int64_t>(1, kQuantizeGrain / std::max<int64_t>(1, block)),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t b = begin; b < end; ++b)
                       for (int64_t i = b * block; i < (b + 1) * block; ++i)
                         out[static_cast<size_t>(i)] =
                             static_cast<int16_t>(px[i] - zero_points[static_cast<size_t>(b)]);
                   });
    }
  });
  return out;
}

// The integer convolution of x (less x_zero_point) with w (less w_zero_point, a scalar or one
// per output channel), computed per (image, group) as im2col followed by one wrapping GEMM, as
// Conv does. Calls store(channel, offset, len, acc) with the sums of output elements
// [offset, offset + len) of output channel `channel`.
template <class Store>
void integer_conv(const Tensor& x, const Tensor& w, const Attrs& attrs, int32_t x_zero_point,
                  const std::vector<int32_t>& w_zero_points, Store&& store) {
  const WindowAttrs wa = read_window_attrs(attrs, w.shape());
  const int spatial = x.ndim() - 2;
  ConvWindow3d win;
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const ConvAxis axis = conv_axis(wa, a, x.shape()[a + 2]);
    win.set_axis(spatial, a, x.shape()[a + 2], axis.output, wa.kernel[i], wa.strides[i], wa.dilations[i],
                 axis.pad_begin);
  }
  const int64_t batch = x.shape()[0], channels = x.shape()[1], filters = w.shape()[0], group = wa.group;
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t image = win.image_size(), grid = win.grid_size(), width = win.grid[2];
  if (batch == 0 || filters == 0 || grid == 0) return;
  const int64_t col_rows = group_channels * win.kernel_size();
  // A filter's zero point is its own (per channel) or the one of all filters.
  std::vector<int32_t> filter_zero_points = w_zero_points;
  if (filter_zero_points.size() == 1)
    filter_zero_points.assign(static_cast<size_t>(filters), w_zero_points[0]);
  const std::vector<int16_t> sx = shifted_blocks(x, {x_zero_point});
  const std::vector<int16_t> sw = shifted_blocks(w, filter_zero_points);
  const bool pointwise = win.is_pointwise();
  const int64_t rows_per_chunk =
      pointwise ? std::max<int64_t>(1, win.grid_rows()) : grid_rows_per_chunk(win, col_rows);
  const int64_t chunks = (win.grid_rows() + rows_per_chunk - 1) / rows_per_chunk;

  // Task t computes the output columns of one chunk of grid rows of one (image, group).
  auto run = [&](int64_t t, std::vector<int16_t>& col) {
    const int64_t chunk = t % chunks, image_group = t / chunks;
    const int64_t n = image_group / group, g = image_group % group;
    const int64_t row_begin = chunk * rows_per_chunk,
                  row_end = std::min(win.grid_rows(), row_begin + rows_per_chunk);
    const int64_t first_col = row_begin * width, cols = (row_end - row_begin) * width;
    const int16_t* img = sx.data() + (n * channels + g * group_channels) * image;
    const int16_t* columns = img + first_col;
    int64_t ld_columns = image;
    if (!pointwise) {
      // Padding is 0 in the shifted image: the zero point, a real zero.
      col.resize(static_cast<size_t>(col_rows * cols));
      im2col(img, group_channels, win, row_begin, row_end, col.data());
      columns = col.data();
      ld_columns = cols;
    }
    auto tile = [&](int64_t i, int64_t j0, int64_t len, const uint32_t* acc) {
      const int64_t channel = g * group_filters + i;
      store(channel, (n * filters + channel) * grid + first_col + j0, len, acc);
    };
    integer_gemm(group_filters, cols, col_rows, sw.data() + g * group_filters * col_rows, col_rows, columns,
                 ld_columns, tile);
  };
  const int64_t tasks = batch * group * chunks;
  // Enough tasks to occupy every thread: split them across the pool, each serial inside. Fewer:
  // run them in turn and let im2col and the GEMM split their own work.
  if (tasks >= num_threads()) {
    const int64_t task_work = std::max<int64_t>(1, group_filters * col_rows * rows_per_chunk * width);
    parallel_for(0, tasks, std::max<int64_t>(1, gemm_detail::kTaskWork / task_work),
                 [&](int64_t begin, int64_t end) {
                   std::vector<int16_t> col;
                   for (int64_t t = begin; t < end; ++t) run(t, col);
                 });
  } else {
    std::vector<int16_t> col;
    for (int64_t t = 0; t < tasks; ++t) run(t, col);
  }
}

std::vector<TensorInfo> infer_conv_integer(InferContext& ctx) {
  const Shape out = infer_conv_shape(ctx, 0, 1);
  if (ctx.has_input(2)) {
    require_same_dtype(ctx, 0, 2);
    require_single(ctx, 2);
  }
  if (ctx.has_input(3)) {
    require_same_dtype(ctx, 1, 3);
    check_per_channel(ctx, 3, 1);
  }
  return {TensorInfo{DType::kInt32, out}};
}

void conv_integer_kernel(KernelContext& ctx) {
  const auto x_zp = values_or_zeros<int32_t>(ctx, 2, 1);
  const auto w_zp = values_or_zeros<int32_t>(ctx, 3, 1);
  int32_t* py = ctx.output(0).data<int32_t>();
  integer_conv(ctx.input(0), ctx.input(1), ctx.attrs, x_zp[0], w_zp,
               [&](int64_t, int64_t offset, int64_t len, const uint32_t* acc) {
                 for (int64_t j = 0; j < len; ++j) py[offset + j] = static_cast<int32_t>(acc[j]);
               });
}

KILN_REGISTER_OP(ConvInteger)
    .doc(
        "int32 convolution of 8-bit x (N, C, D1, ...) and w (M, C/group, k1, ...) less their zero points "
        "(x's a scalar, w's a scalar or one per output channel), over 1 to 3 spatial axes; pads are real "
        "zeros.")
    .input("x")
    .input("w")
    .input("x_zero_point", Arity::kOptional)
    .input("w_zero_point", Arity::kOptional)
    .output("y")
    .with(conv_window_attrs)
    .infer(infer_conv_integer)
    .kernel(conv_integer_kernel);

// QLinearConv's inputs: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B.
std::vector<TensorInfo> infer_qlinear_conv(InferContext& ctx) {
  const Shape out = infer_conv_shape(ctx, 0, 3);
  const DType float32[] = {DType::kFloat32};
  for (int scale : {1, 4, 6}) require_dtype(ctx, scale, float32);
  require_same_dtype(ctx, 0, 2);
  require_same_dtype(ctx, 3, 5);
  require_dtype(ctx, 7, kQuantizedDTypes);
  for (int p : {1, 2, 6, 7}) require_single(ctx, p);
  for (int p : {4, 5}) check_per_channel(ctx, p, 3);
  if (ctx.has_input(8)) {
    const DType int32[] = {DType::kInt32};
    require_dtype(ctx, 8, int32);
    const Shape& b = ctx.shape(8);
    KILN_CHECK(b.ndim() == 1 && dims_agree(b[0], out[1]), ErrorCode::kShapeMismatch, ctx.input_label(8),
               ": expected shape ", Shape{out[1]}, ", one value per output channel, got ", b);
  }
  return {TensorInfo{ctx.dtype(7), out}};
}

void qlinear_conv_kernel(KernelContext& ctx) {
  const Tensor& w = ctx.input(3);
  const int64_t filters = w.shape()[0];
  const float x_scale = values_as<float>(ctx.input(1))[0], y_scale = values_as<float>(ctx.input(6))[0];
  const auto w_scales = values_as<float>(ctx.input(4));
  const int32_t y_zp = values_as<int32_t>(ctx.input(7))[0];
  const auto bias = values_or_zeros<int32_t>(ctx, 8, filters);
  // One multiplier per output channel, in float as the ONNX reference and ONNX Runtime compute it.
  std::vector<float> multipliers(static_cast<size_t>(filters));
  for (size_t c = 0; c < multipliers.size(); ++c)
    multipliers[c] = x_scale * w_scales[w_scales.size() == 1 ? 0 : c] / y_scale;
  Tensor& y = ctx.output(0);
  dispatch_dtype(y.dtype(), [&](auto tag) {
    using Q = typename decltype(tag)::type;
    if constexpr (std::is_same_v<Q, int8_t> || std::is_same_v<Q, uint8_t>) {
      Q* py = y.data<Q>();
      integer_conv(
          ctx.input(0), w, ctx.attrs, values_as<int32_t>(ctx.input(2))[0], values_as<int32_t>(ctx.input(5)),
          [&](int64_t channel, int64_t offset, int64_t len, const uint32_t* acc) {
            const uint32_t b = static_cast<uint32_t>(bias[static_cast<size_t>(channel)]);
            const double multiplier = multipliers[static_cast<size_t>(channel)];
            for (int64_t j = 0; j < len; ++j)
              py[offset + j] =
                  saturate_round<Q>(static_cast<double>(static_cast<int32_t>(acc[j] + b)) * multiplier, y_zp);
          });
    }
  });
}

KILN_REGISTER_OP(QLinearConv)
    .doc(
        "Quantized convolution: y = saturate(round((conv(x - x_zero_point, w - w_zero_point) + B) * x_scale "
        "* "
        "w_scale / y_scale) + y_zero_point); w's parameters are scalars or per output channel, the others "
        "scalars, B int32 per output channel.")
    .input("x")
    .input("x_scale")
    .input("x_zero_point")
    .input("w")
    .input("w_scale")
    .input("w_zero_point")
    .input("y_scale")
    .input("y_zero_point")
    .input("B", Arity::kOptional)
    .output("y")
    .with(conv_window_attrs)
    .infer(infer_qlinear_conv)
    .kernel(qlinear_conv_kernel);

}  // namespace
}  // namespace kiln::ops
