// Transposed convolution: ConvTranspose over 1 to 3 spatial axes (auto_pad, dilations, group,
// kernel_shape, output_padding, output_shape, pads, strides, optional bias B), the adjoint of
// Conv: per (image, group) one GEMM W^T * X gives every kernel tap's contribution, and col2im
// sums them into the output.
#include <algorithm>
#include <type_traits>

#include "conv_util.h"
#include "gradient.h"
#include "kiln/threading.hpp"
#include "matmul_kernel.h"

namespace kiln::ops {
namespace {

struct TransposeAxis {
  int64_t pad_begin = 0, output = 0;
};

// The leading pad and output extent of one spatial axis of `in` input elements. Without
// output_shape the output is the full extent of the kernel placements plus output_padding,
// less the pads; SAME_* makes it in * stride. output_shape (when given) sets the extent: under
// SAME_* the pads then split the difference; otherwise the explicit leading pads stay and the
// output ends where output_shape says, as in the ONNX reference.
TransposeAxis transpose_axis(const WindowAttrs& wa, int axis, int64_t in, int64_t output_padding,
                             int64_t output_shape) {
  const size_t a = static_cast<size_t>(axis), spatial = wa.kernel.size();
  const int64_t stride = wa.strides[a];
  const int64_t full = stride * (in - 1) + output_padding + (wa.kernel[a] - 1) * wa.dilations[a] + 1;
  if (wa.auto_pad == AutoPad::kSameUpper || wa.auto_pad == AutoPad::kSameLower) {
    const int64_t out = output_shape >= 0 ? output_shape : in * stride;
    return {same_pad_begin(wa.auto_pad, full - out), out};
  }
  const bool valid = wa.auto_pad == AutoPad::kValid;
  const int64_t pad_begin = valid ? 0 : wa.pads[a], pad_end = valid ? 0 : wa.pads[a + spatial];
  return {pad_begin, output_shape >= 0 ? output_shape : full - pad_begin - pad_end};
}

// output_padding and output_shape, one value per spatial axis (-1 in output_shape: not given).
// output_shape may also list N and C first, as some exporters write it.
struct OutputAttrs {
  std::vector<int64_t> padding, shape;
};

OutputAttrs read_output_attrs(const Attrs& attrs, int spatial) {
  const size_t n = static_cast<size_t>(spatial);
  OutputAttrs r{std::vector<int64_t>(n, 0), std::vector<int64_t>(n, -1)};
  if (attrs.has("output_padding")) {
    r.padding = attrs.get_ints("output_padding");
    KILN_CHECK(r.padding.size() == n, ErrorCode::kInvalidArgument, "attribute 'output_padding': expected ", n,
               " values (one per spatial axis), got ", ints_text(r.padding));
  }
  if (attrs.has("output_shape")) {
    const auto& given = attrs.get_ints("output_shape");
    KILN_CHECK(given.size() == n || given.size() == n + 2, ErrorCode::kInvalidArgument,
               "attribute 'output_shape': expected ", n, " values (one per spatial axis), got ",
               ints_text(given));
    r.shape.assign(given.end() - static_cast<std::ptrdiff_t>(n), given.end());
  }
  return r;
}

std::vector<TensorInfo> infer_conv_transpose(InferContext& ctx) {
  const WindowAttrs wa = infer_window_attrs(ctx);
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  const int spatial = x.ndim() - 2;
  const OutputAttrs oa = read_output_attrs(ctx.attrs(), spatial);
  const int64_t channels = x[1], group = wa.group;
  if (channels >= 0) {
    KILN_CHECK(channels % group == 0, ErrorCode::kShapeMismatch, ctx.input_label(0),
               ": expected a channel count C divisible by group = ", group, ", got shape ", x);
    KILN_CHECK(w[0] < 0 || w[0] == channels, ErrorCode::kShapeMismatch, ctx.input_label(1),
               ": expected shape (C, M/group, ", kernel_dims_text(spatial), ") with C = ", channels, ", got ",
               w);
  }
  const int64_t filters = w[1] < 0 ? Shape::kUnknown : w[1] * group;
  check_bias(ctx, filters);
  Shape out{x[0], filters};
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t in = x[a + 2];
    if (in < 0 || wa.kernel[i] < 0) {
      out.push_back(oa.shape[i]);
      continue;
    }
    const TransposeAxis axis = transpose_axis(wa, a, in, oa.padding[i], oa.shape[i]);
    KILN_CHECK(axis.output >= 0, ErrorCode::kShapeMismatch, ctx.input_label(0), ": spatial axis ", a + 2,
               " of ", in, " elements gives an output of ", axis.output, " elements (stride ", wa.strides[i],
               ", kernel ", wa.kernel[i], ", dilation ", wa.dilations[i], ", output_padding ", oa.padding[i],
               ", pads ", wa.pads[i], " and ", wa.pads[i + static_cast<size_t>(spatial)], ")");
    out.push_back(axis.output);
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

template <class T>
void conv_transpose_typed(KernelContext& ctx) {
  using Acc = compute_t<T>;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const int spatial = x.ndim() - 2;
  const WindowAttrs wa = read_window_attrs(ctx.attrs, w.shape());
  const OutputAttrs oa = read_output_attrs(ctx.attrs, spatial);
  // The image is Y, the grid of kernel placements is X.
  ConvWindow3d win;
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const TransposeAxis axis = transpose_axis(wa, a, x.shape()[a + 2], oa.padding[i], oa.shape[i]);
    win.set_axis(spatial, a, y.shape()[a + 2], x.shape()[a + 2], wa.kernel[i], wa.strides[i], wa.dilations[i],
                 axis.pad_begin);
  }
  const int64_t batch = x.shape()[0], channels = x.shape()[1], filters = y.shape()[1], group = wa.group;
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t image = win.image_size(), grid = win.grid_size(), width = win.grid[2];
  const int64_t col_rows = group_filters * win.kernel_size();
  const int64_t rows_per_chunk = grid_rows_per_chunk(win, col_rows);
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  const T* bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  T* py = y.data<T>();

  // Task t computes the output of one (image, group), summing in Acc before one conversion.
  auto run = [&](int64_t t, std::vector<Acc>& col, std::vector<Acc>& sum) {
    const int64_t n = t / group, g = t % group;
    const T* xg = px + (n * channels + g * group_channels) * grid;
    const T* wg = pw + g * group_channels * col_rows;
    sum.assign(static_cast<size_t>(group_filters * image), Acc(0));
    for (int64_t row_begin = 0; row_begin < win.grid_rows(); row_begin += rows_per_chunk) {
      const int64_t row_end = std::min(win.grid_rows(), row_begin + rows_per_chunk);
      const int64_t first_col = row_begin * width, cols = (row_end - row_begin) * width;
      col.resize(static_cast<size_t>(col_rows * cols));
      // col[(filter, tap), j] = sum over the group's channels c of W[c, filter, tap] * X[c, j].
      gemm_tiles<T>(true, false, col_rows, cols, group_channels, wg, col_rows, xg + first_col, grid,
                    [&](int64_t i, int64_t j0, int64_t len, const Acc* acc) {
                      std::copy(acc, acc + len, col.data() + i * cols + j0);
                    });
      col2im(col.data(), group_filters, win, row_begin, row_end, sum.data());
    }
    T* out = py + (n * filters + g * group_filters) * image;
    for (int64_t f = 0; f < group_filters; ++f) {
      const Acc b = bias ? static_cast<Acc>(bias[g * group_filters + f]) : Acc(0);
      for (int64_t p = 0; p < image; ++p)
        out[f * image + p] = convert_value<T>(sum[static_cast<size_t>(f * image + p)] + b);
    }
  };
  const int64_t tasks = batch * group;
  // Enough tasks to occupy every thread: split them across the pool, each serial inside. Fewer:
  // run them in turn and let the GEMM and col2im split their own work.
  if (tasks >= num_threads()) {
    const int64_t task_work = std::max<int64_t>(1, col_rows * group_channels * grid);
    parallel_for(0, tasks, std::max<int64_t>(1, gemm_detail::kTaskWork / task_work),
                 [&](int64_t begin, int64_t end) {
                   std::vector<Acc> col, sum;
                   for (int64_t t = begin; t < end; ++t) run(t, col, sum);
                 });
  } else {
    std::vector<Acc> col, sum;
    for (int64_t t = 0; t < tasks; ++t) run(t, col, sum);
  }
}

void conv_transpose_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) conv_transpose_typed<T>(ctx);
  });
}

// Gradient rule. ConvTranspose with W is the adjoint of Conv with W (from Y's space to X's), so
// <ConvTranspose(X), dY> = <X, Conv(dY)>: dX = Conv(dY, W) and dW = ConvGradWeight of that Conv
// (its input dY, its output gradient X), with the same strides, dilations and groups and the
// leading pads ConvTranspose used. The trailing pads are those that make Conv's output X's size
// (ONNX keeps output_padding below the stride, so they are never negative by more than the floor
// of Conv's size formula absorbs); they need X's and Y's sizes, known imperatively and after shape
// binding. dB sums dY over all but the channel axis.
void conv_transpose_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  const Shape& x = ctx.input_info(0).shape;
  const Shape& y = ctx.output_info(0).shape;
  KILN_CHECK(x.is_known() && y.is_known(), ErrorCode::kUnsupported,
             "the gradient of ConvTranspose needs the sizes of X and Y; got X ", x, " and Y ", y);
  const int spatial = x.ndim() - 2;
  const WindowAttrs wa = read_window_attrs(ctx.attrs(), ctx.input_info(1).shape);
  const OutputAttrs oa = read_output_attrs(ctx.attrs(), spatial);
  std::vector<int64_t> pads(static_cast<size_t>(2 * spatial));
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const int64_t begin = transpose_axis(wa, a, x[a + 2], oa.padding[i], oa.shape[i]).pad_begin;
    const int64_t extent = (wa.kernel[i] - 1) * wa.dilations[i] + 1;
    pads[i] = begin;
    pads[i + static_cast<size_t>(spatial)] =
        std::max<int64_t>(0, wa.strides[i] * (x[a + 2] - 1) + extent - y[a + 2] - begin);
  }
  const AttrMap conv{{"strides", wa.strides},
                     {"dilations", wa.dilations},
                     {"group", wa.group},
                     {"kernel_shape", wa.kernel},
                     {"pads", pads}};
  if (ctx.needs_input_grad(0)) ctx.set_input_grad(0, ctx.op1("Conv", {g, ctx.input(1)}, conv));
  if (ctx.needs_input_grad(1))
    ctx.set_input_grad(1, ctx.op1("ConvGradWeight", {g, ctx.input(0), ctx.input(1)}, conv));
  if (ctx.needs_input_grad(2)) {
    std::vector<int64_t> axes{0};
    for (int a = 2; a < x.ndim(); ++a) axes.push_back(a);
    ctx.set_input_grad(2, ctx.op1("ReduceSum", {g, ctx.ints(axes)}, {{"keepdims", 0}}));
  }
}

KILN_REGISTER_OP(ConvTranspose)
    .doc(
        "Transposed convolution of X (N, C, D1, ...) with W (C, M/group, k1, ...) over 1 to 3 spatial "
        "axes, plus the optional bias B (M); the adjoint (gradient) of Conv.")
    .input("X")
    .input("W")
    .input("B", Arity::kOptional)
    .output("Y")
    .attr("auto_pad", AttrType::kString, "NOTSET", validate_auto_pad)
    .optional_attr("dilations", AttrType::kInts, validate_positive_ints)
    .attr("group", AttrType::kInt, 1, validate_group)
    .optional_attr("kernel_shape", AttrType::kInts, validate_positive_ints)
    .optional_attr("output_padding", AttrType::kInts, validate_nonnegative_ints)
    .optional_attr("output_shape", AttrType::kInts, validate_nonnegative_ints)
    .optional_attr("pads", AttrType::kInts, validate_nonnegative_ints)
    .optional_attr("strides", AttrType::kInts, validate_positive_ints)
    .infer(infer_conv_transpose)
    .kernel(conv_transpose_kernel)
    .gradient(conv_transpose_gradient);

}  // namespace
}  // namespace kiln::ops
