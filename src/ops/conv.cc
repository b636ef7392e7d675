// Convolution: Conv over 1 to 3 spatial axes (auto_pad, dilations, group, kernel_shape, pads,
// strides, optional bias B), computed per (image, group) as im2col followed by one GEMM, with
// the bias and the dtype conversion fused into the GEMM's stores. It is the oracle that faster
// convolution kernels are checked against.
#include <type_traits>

#include "conv_util.h"
#include "gradient.h"
#include "kiln/threading.hpp"
#include "matmul_kernel.h"

namespace kiln::ops {
namespace {

struct ConvAxis {
  int64_t pad_begin = 0, pad_end = 0, output = 0;
};

// The pads and output extent of one spatial axis of `in` elements.
ConvAxis conv_axis(AutoPad auto_pad, int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                   int64_t pad_begin, int64_t pad_end) {
  const int64_t span = (kernel - 1) * dilation + 1;
  switch (auto_pad) {
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      const int64_t out = ceil_div(in, stride);
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
      const int64_t begin = same_pad_begin(auto_pad, total);
      return {begin, total - begin, out};
    }
    case AutoPad::kValid:
      return {0, 0, floor_div(in - span, stride) + 1};
    case AutoPad::kNotSet:
      break;
  }
  return {pad_begin, pad_end, floor_div(in + pad_begin + pad_end - span, stride) + 1};
}

ConvAxis conv_axis(const WindowAttrs& wa, int axis, int64_t in) {
  const size_t a = static_cast<size_t>(axis), spatial = wa.kernel.size();
  return conv_axis(wa.auto_pad, in, wa.kernel[a], wa.strides[a], wa.dilations[a], wa.pads[a],
                   wa.pads[a + spatial]);
}

std::vector<TensorInfo> infer_conv(InferContext& ctx) {
  const WindowAttrs wa = infer_window_attrs(ctx);
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  const int spatial = x.ndim() - 2;
  const int64_t channels = x[1], filters = w[0], group = wa.group;
  if (channels >= 0) {
    KILN_CHECK(channels % group == 0, ErrorCode::kShapeMismatch, ctx.input_label(0),
               ": expected a channel count C divisible by group = ", group, ", got shape ", x);
    KILN_CHECK(w[1] < 0 || w[1] * group == channels, ErrorCode::kShapeMismatch, ctx.input_label(1),
               ": expected shape (M, C/group, ", kernel_dims_text(spatial),
               ") with C/group = ", channels / group, ", got ", w);
  }
  KILN_CHECK(filters < 0 || filters % group == 0, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected a filter count M divisible by group = ", group, ", got shape ", w);
  check_bias(ctx, filters);
  Shape out{x[0], filters};
  for (int a = 0; a < spatial; ++a) {
    const int64_t in = x[a + 2], kernel = wa.kernel[static_cast<size_t>(a)];
    if (in < 0 || kernel < 0) {
      out.push_back(Shape::kUnknown);
      continue;
    }
    const ConvAxis axis = conv_axis(wa, a, in);
    if (wa.auto_pad == AutoPad::kNotSet || wa.auto_pad == AutoPad::kValid) {
      const int64_t padded = in + axis.pad_begin + axis.pad_end;
      const int64_t span = (kernel - 1) * wa.dilations[static_cast<size_t>(a)] + 1;
      KILN_CHECK(padded >= span, ErrorCode::kShapeMismatch, ctx.input_label(0), ": spatial axis ", a + 2,
                 " has ", in, " elements (", padded, " with pads), fewer than the ", span,
                 " the kernel spans (kernel ", kernel, ", dilation ", wa.dilations[static_cast<size_t>(a)],
                 ")");
    }
    out.push_back(axis.output);
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

template <class T>
void conv_typed(KernelContext& ctx) {
  using Acc = compute_t<T>;
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  Tensor& y = ctx.output(0);
  const WindowAttrs wa = read_window_attrs(ctx.attrs, w.shape());
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
  const int64_t col_rows = group_channels * win.kernel_size();
  const bool pointwise = win.is_pointwise();
  const int64_t rows_per_chunk =
      pointwise ? std::max<int64_t>(1, win.grid_rows()) : grid_rows_per_chunk(win, col_rows);
  const int64_t chunks = (win.grid_rows() + rows_per_chunk - 1) / rows_per_chunk;
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  const T* bias = ctx.has_input(2) ? ctx.input(2).data<T>() : nullptr;
  T* py = y.data<T>();

  // Task t computes the output columns of one chunk of grid rows of one (image, group).
  auto run = [&](int64_t t, std::vector<T>& col) {
    const int64_t chunk = t % chunks, image_group = t / chunks;
    const int64_t n = image_group / group, g = image_group % group;
    const int64_t row_begin = chunk * rows_per_chunk,
                  row_end = std::min(win.grid_rows(), row_begin + rows_per_chunk);
    const int64_t first_col = row_begin * width, cols = (row_end - row_begin) * width;
    const T* img = px + (n * channels + g * group_channels) * image;
    const T* columns = img + first_col;
    int64_t ld_columns = image;
    if (!pointwise) {
      col.resize(static_cast<size_t>(col_rows * cols));
      im2col(img, group_channels, win, row_begin, row_end, col.data());
      columns = col.data();
      ld_columns = cols;
    }
    T* out = py + (n * filters + g * group_filters) * grid + first_col;
    gemm_tiles<T>(false, false, group_filters, cols, col_rows, pw + g * group_filters * col_rows, col_rows,
                  columns, ld_columns, [&](int64_t i, int64_t j0, int64_t len, const Acc* acc) {
                    const Acc b = bias ? static_cast<Acc>(bias[g * group_filters + i]) : Acc(0);
                    T* dst = out + i * grid + j0;
                    for (int64_t j = 0; j < len; ++j) dst[j] = convert_value<T>(acc[j] + b);
                  });
  };
  const int64_t tasks = batch * group * chunks;
  // Enough tasks to occupy every thread: split them across the pool, each serial inside. Fewer:
  // run them in turn and let im2col and the GEMM split their own work.
  if (tasks >= num_threads()) {
    const int64_t task_work = std::max<int64_t>(1, group_filters * col_rows * rows_per_chunk * width);
    parallel_for(0, tasks, std::max<int64_t>(1, gemm_detail::kTaskWork / task_work),
                 [&](int64_t begin, int64_t end) {
                   std::vector<T> col;
                   for (int64_t t = begin; t < end; ++t) run(t, col);
                 });
  } else {
    std::vector<T> col;
    for (int64_t t = 0; t < tasks; ++t) run(t, col);
  }
}

void conv_kernel(KernelContext& ctx) {
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) conv_typed<T>(ctx);
  });
}

// The gradient ops' reference kernels: plain loops over every (output position, kernel tap) pair
// that lands inside the image, accumulated in double.
struct ConvTap {
  int64_t image, grid, tap;  // offsets within one image plane, one grid plane, one kernel
};

// The geometry of Conv(X, W) for an image of shape x and a weight of shape w.
ConvWindow3d conv_window(const Attrs& attrs, const Shape& x, const Shape& w, WindowAttrs& wa) {
  wa = read_window_attrs(attrs, w);
  const int spatial = x.ndim() - 2;
  ConvWindow3d win;
  for (int a = 0; a < spatial; ++a) {
    const size_t i = static_cast<size_t>(a);
    const ConvAxis axis = conv_axis(wa, a, x[a + 2]);
    win.set_axis(spatial, a, x[a + 2], axis.output, wa.kernel[i], wa.strides[i], wa.dilations[i],
                 axis.pad_begin);
  }
  return win;
}

std::vector<ConvTap> conv_taps(const ConvWindow3d& w) {
  std::vector<ConvTap> taps;
  for (int64_t o0 = 0; o0 < w.grid[0]; ++o0)
    for (int64_t o1 = 0; o1 < w.grid[1]; ++o1)
      for (int64_t o2 = 0; o2 < w.grid[2]; ++o2)
        for (int64_t t0 = 0; t0 < w.kernel[0]; ++t0)
          for (int64_t t1 = 0; t1 < w.kernel[1]; ++t1)
            for (int64_t t2 = 0; t2 < w.kernel[2]; ++t2) {
              const int64_t i0 = o0 * w.stride[0] - w.pad[0] + t0 * w.dilation[0];
              const int64_t i1 = o1 * w.stride[1] - w.pad[1] + t1 * w.dilation[1];
              const int64_t i2 = o2 * w.stride[2] - w.pad[2] + t2 * w.dilation[2];
              if (i0 < 0 || i0 >= w.image[0] || i1 < 0 || i1 >= w.image[1] || i2 < 0 || i2 >= w.image[2])
                continue;
              taps.push_back({(i0 * w.image[1] + i1) * w.image[2] + i2,
                              (o0 * w.grid[1] + o1) * w.grid[2] + o2,
                              (t0 * w.kernel[1] + t1) * w.kernel[2] + t2});
            }
  return taps;
}

// Calls f(image offset, grid offset, weight offset) for every product that Conv sums, with the
// offsets into X (N, C, ...), Y (N, M, ...) and W (M, C/group, ...).
template <class F>
void for_each_conv_product(const Shape& x, const Shape& w, const ConvWindow3d& win, int64_t group, F f) {
  const auto taps = conv_taps(win);
  const int64_t batch = x[0], channels = x[1], filters = w[0];
  const int64_t group_channels = channels / group, group_filters = filters / group;
  const int64_t image = win.image_size(), grid = win.grid_size(), kernel = win.kernel_size();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t m = 0; m < filters; ++m) {
      const int64_t g = m / group_filters;
      for (int64_t c = 0; c < group_channels; ++c) {
        const int64_t x_base = (n * channels + g * group_channels + c) * image;
        const int64_t y_base = (n * filters + m) * grid;
        const int64_t w_base = (m * group_channels + c) * kernel;
        for (const ConvTap& t : taps) f(x_base + t.image, y_base + t.grid, w_base + t.tap);
      }
    }
}

template <class F>
void dispatch_floating(DType dtype, F f) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) f(tag);
  });
}

template <class T>
std::vector<double> as_doubles(const Tensor& t) {
  const T* p = t.data<T>();
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(static_cast<compute_t<T>>(p[i]));
  return v;
}

template <class T>
void store_doubles(const std::vector<double>& v, Tensor& t) {
  T* p = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = convert_value<T>(v[i]);
}

// dX[x] += dY[y] * W[w] over every product of the convolution.
void conv_grad_data_kernel(KernelContext& ctx) {
  Tensor& dx = ctx.output(0);
  const Shape& w = ctx.input(1).shape();
  WindowAttrs wa;
  const ConvWindow3d win = conv_window(ctx.attrs, dx.shape(), w, wa);
  dispatch_floating(dx.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto dy = as_doubles<T>(ctx.input(0)), weight = as_doubles<T>(ctx.input(1));
    std::vector<double> sums(static_cast<size_t>(dx.numel()), 0.0);
    for_each_conv_product(dx.shape(), w, win, wa.group, [&](int64_t xi, int64_t yi, int64_t wi) {
      sums[static_cast<size_t>(xi)] += dy[static_cast<size_t>(yi)] * weight[static_cast<size_t>(wi)];
    });
    store_doubles<T>(sums, dx);
  });
}

// dW[w] += dY[y] * X[x] over every product of the convolution.
void conv_grad_weight_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& dw = ctx.output(0);
  WindowAttrs wa;
  const ConvWindow3d win = conv_window(ctx.attrs, x.shape(), dw.shape(), wa);
  dispatch_floating(dw.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto image = as_doubles<T>(x), dy = as_doubles<T>(ctx.input(1));
    std::vector<double> sums(static_cast<size_t>(dw.numel()), 0.0);
    for_each_conv_product(x.shape(), dw.shape(), win, wa.group, [&](int64_t xi, int64_t yi, int64_t wi) {
      sums[static_cast<size_t>(wi)] += dy[static_cast<size_t>(yi)] * image[static_cast<size_t>(xi)];
    });
    store_doubles<T>(sums, dw);
  });
}

void conv_gradient(GradientContext& ctx) {
  const GradValue g = ctx.output_grad(0);
  const AttrMap& window = ctx.attrs().values();
  if (ctx.needs_input_grad(0))
    ctx.set_input_grad(0, ctx.op1("ConvGradData", {g, ctx.input(1), ctx.input(0)}, window));
  if (ctx.needs_input_grad(1))
    ctx.set_input_grad(1, ctx.op1("ConvGradWeight", {ctx.input(0), g, ctx.input(1)}, window));
  if (ctx.needs_input_grad(2)) {
    std::vector<int64_t> axes{0};
    for (int a = 2; a < ctx.input_info(0).shape.ndim(); ++a) axes.push_back(a);
    ctx.set_input_grad(2, ctx.op1("ReduceSum", {g, ctx.ints(axes)}, {{"keepdims", 0}}));
  }
}

KILN_REGISTER_OP(Conv)
    .doc(
        "Convolution (cross-correlation) of X (N, C, D1, ...) with W (M, C/group, k1, ...) over 1 to 3 "
        "spatial axes, plus the optional bias B (M).")
    .input("X")
    .input("W")
    .input("B", Arity::kOptional)
    .output("Y")
    .with(conv_window_attrs)
    .infer(infer_conv)
    .kernel(conv_kernel)
    .gradient(conv_gradient);

KILN_REGISTER_OP(ConvGradData)
    .doc(
        "Kiln: the gradient of Conv with respect to X, of the shape of `like` (Conv's X); Conv's attributes.")
    .input("dY")
    .input("W")
    .input("like")
    .output("dX")
    .with(conv_window_attrs)
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{{ctx.dtype(0), ctx.shape(2)}};
    })
    .kernel(conv_grad_data_kernel);

KILN_REGISTER_OP(ConvGradWeight)
    .doc(
        "Kiln: the gradient of Conv with respect to W, of the shape of `like` (Conv's W); Conv's attributes.")
    .input("X")
    .input("dY")
    .input("like")
    .output("dW")
    .with(conv_window_attrs)
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{{ctx.dtype(0), ctx.shape(2)}};
    })
    .kernel(conv_grad_weight_kernel);

}  // namespace
}  // namespace kiln::ops
