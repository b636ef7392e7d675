// DeformConv (ONNX opset 19, 2-D): a convolution whose taps are moved by learned offsets. Tap
// (a, b) of output position (i, j) reads X at (i * stride_h - pad_top + a * dilation_h +
// offset_h, j * stride_w - pad_left + b * dilation_w + offset_w), sampled bilinearly with zeros
// outside the image, and is scaled by the optional mask. Offsets and mask come per offset group
// of input channels: offset has (N, offset_group * kH * kW * 2, oH, oW), the pairs (dy, dx) in
// tap order; mask (N, offset_group * kH * kW, oH, oW). Sums run in double.
#include <cmath>
#include <type_traits>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

struct DeformGeometry {
  int64_t batch = 0, in_channels = 0, height = 0, width = 0, out_channels = 0;
  int64_t kernel_h = 0, kernel_w = 0, out_h = 0, out_w = 0;
  int64_t stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1, pad_top = 0, pad_left = 0;
  int64_t group = 1, offset_group = 1;
};

std::vector<int64_t> pair_attr(const Attrs& attrs, const char* name, size_t count, int64_t fallback) {
  if (!attrs.has(name)) return std::vector<int64_t>(count, fallback);
  const std::vector<int64_t>& v = attrs.get_ints(name);
  KILN_CHECK(v.size() == count, ErrorCode::kInvalidArgument, "attribute '", name, "': expected ", count,
             " values for 2 spatial axes, got ", v.size());
  return v;
}

DeformGeometry deform_geometry(const Attrs& attrs, const Shape& x, const Shape& w) {
  KILN_CHECK(x.ndim() == 4 && w.ndim() == 4, ErrorCode::kUnsupported,
             "DeformConv: only 2-D images are supported; X ", x, ", W ", w);
  DeformGeometry g;
  g.batch = x[0];
  g.in_channels = x[1];
  g.height = x[2];
  g.width = x[3];
  g.out_channels = w[0];
  g.group = attrs.get_int("group");
  g.offset_group = attrs.get_int("offset_group");
  KILN_CHECK(g.group >= 1 && g.offset_group >= 1, ErrorCode::kInvalidArgument,
             "attributes 'group' and 'offset_group': expected at least 1");
  const std::vector<int64_t> kernel = pair_attr(attrs, "kernel_shape", 2, -1);
  g.kernel_h = kernel[0] < 0 ? w[2] : kernel[0];
  g.kernel_w = kernel[1] < 0 ? w[3] : kernel[1];
  KILN_CHECK(g.kernel_h == w[2] && g.kernel_w == w[3], ErrorCode::kShapeMismatch,
             "attribute 'kernel_shape' does not match W's spatial shape ", w);
  const std::vector<int64_t> strides = pair_attr(attrs, "strides", 2, 1);
  const std::vector<int64_t> dilations = pair_attr(attrs, "dilations", 2, 1);
  const std::vector<int64_t> pads = pair_attr(attrs, "pads", 4, 0);
  g.stride_h = strides[0];
  g.stride_w = strides[1];
  g.dilation_h = dilations[0];
  g.dilation_w = dilations[1];
  KILN_CHECK(g.stride_h >= 1 && g.stride_w >= 1 && g.dilation_h >= 1 && g.dilation_w >= 1,
             ErrorCode::kInvalidArgument, "attributes 'strides' and 'dilations': expected values >= 1");
  g.pad_top = pads[0];
  g.pad_left = pads[1];
  KILN_CHECK(g.in_channels < 0 || (g.in_channels == w[1] * g.group && g.in_channels % g.offset_group == 0),
             ErrorCode::kShapeMismatch, "X has ", g.in_channels, " channels; W (", w, ") with group ",
             g.group, " takes ", w[1] * g.group, ", and offset_group ", g.offset_group, " must divide them");
  KILN_CHECK(g.out_channels % g.group == 0, ErrorCode::kShapeMismatch, "W has ", g.out_channels,
             " output channels, not a multiple of group ", g.group);
  const int64_t extent_h = (g.kernel_h - 1) * g.dilation_h + 1,
                extent_w = (g.kernel_w - 1) * g.dilation_w + 1;
  const int64_t span_h = g.height + pads[0] + pads[2] - extent_h,
                span_w = g.width + pads[1] + pads[3] - extent_w;
  KILN_CHECK((g.height < 0 || span_h >= 0) && (g.width < 0 || span_w >= 0), ErrorCode::kShapeMismatch,
             "X's image ", g.height, " x ", g.width, " with its pads is smaller than the window, ", extent_h,
             " x ", extent_w);
  g.out_h = g.height < 0 ? Shape::kUnknown : span_h / g.stride_h + 1;
  g.out_w = g.width < 0 ? Shape::kUnknown : span_w / g.stride_w + 1;
  return g;
}

std::vector<TensorInfo> infer_deform_conv(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  for (int i = 1; i < 5; ++i)
    if (ctx.has_input(i)) require_same_dtype(ctx, 0, i);
  const DeformGeometry g = deform_geometry(ctx.attrs(), ctx.shape(0), ctx.shape(1));
  const Shape expected_offset{g.batch, g.offset_group * g.kernel_h * g.kernel_w * 2, g.out_h, g.out_w};
  const auto fits = [](const Shape& s, const Shape& want) {
    bool ok = s.ndim() == want.ndim();
    for (int a = 0; ok && a < s.ndim(); ++a) ok = s[a] < 0 || want[a] < 0 || s[a] == want[a];
    return ok;
  };
  KILN_CHECK(fits(ctx.shape(2), expected_offset), ErrorCode::kShapeMismatch, ctx.input_label(2),
             ": expected ", expected_offset, ", got ", ctx.shape(2));
  if (ctx.has_input(3))
    KILN_CHECK(fits(ctx.shape(3), Shape{g.out_channels}), ErrorCode::kShapeMismatch, ctx.input_label(3),
               ": expected one bias per output channel, ", Shape{g.out_channels}, ", got ", ctx.shape(3));
  const Shape expected_mask{g.batch, g.offset_group * g.kernel_h * g.kernel_w, g.out_h, g.out_w};
  if (ctx.has_input(4))
    KILN_CHECK(fits(ctx.shape(4), expected_mask), ErrorCode::kShapeMismatch, ctx.input_label(4),
               ": expected ", expected_mask, ", got ", ctx.shape(4));
  return {TensorInfo{ctx.dtype(0), Shape{g.batch, g.out_channels, g.out_h, g.out_w}}};
}

// X[y, x] for a real position, bilinear between the four pixels around it; pixels outside are 0.
template <class T>
double sample(const T* image, int64_t height, int64_t width, double y, double x) {
  const double y0 = std::floor(y), x0 = std::floor(x);
  double sum = 0;
  for (int dy = 0; dy < 2; ++dy) {
    for (int dx = 0; dx < 2; ++dx) {
      const auto r = static_cast<int64_t>(y0) + dy, c = static_cast<int64_t>(x0) + dx;
      if (r < 0 || r >= height || c < 0 || c >= width) continue;
      const double weight = (dy ? y - y0 : 1 - (y - y0)) * (dx ? x - x0 : 1 - (x - x0));
      sum += weight * static_cast<double>(static_cast<compute_t<T>>(image[r * width + c]));
    }
  }
  return sum;
}

void deform_conv_kernel(KernelContext& ctx) {
  const DeformGeometry g = deform_geometry(ctx.attrs, ctx.input(0).shape(), ctx.input(1).shape());
  const int64_t taps = g.kernel_h * g.kernel_w, plane = g.out_h * g.out_w;
  const int64_t in_per_group = g.in_channels / g.group, out_per_group = g.out_channels / g.group;
  const int64_t in_per_offset_group = g.in_channels / g.offset_group;
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      const T* x = ctx.input(0).data<T>();
      const T* w = ctx.input(1).data<T>();
      const T* offset = ctx.input(2).data<T>();
      const T* bias = ctx.has_input(3) ? ctx.input(3).data<T>() : nullptr;
      const T* mask = ctx.has_input(4) ? ctx.input(4).data<T>() : nullptr;
      T* y = ctx.output(0).data<T>();
      const auto value = [](const T* p, int64_t i) {
        return static_cast<double>(static_cast<compute_t<T>>(p[i]));
      };
      parallel_for(0, g.batch * g.out_channels, 1, [&](int64_t begin, int64_t end) {
        for (int64_t no = begin; no < end; ++no) {
          const int64_t n = no / g.out_channels, oc = no % g.out_channels, grp = oc / out_per_group;
          for (int64_t i = 0; i < g.out_h; ++i) {
            for (int64_t j = 0; j < g.out_w; ++j) {
              double sum = bias ? value(bias, oc) : 0.0;
              for (int64_t ic = grp * in_per_group; ic < (grp + 1) * in_per_group; ++ic) {
                const int64_t og = ic / in_per_offset_group;
                const T* image = x + (n * g.in_channels + ic) * g.height * g.width;
                for (int64_t a = 0; a < g.kernel_h; ++a) {
                  for (int64_t b = 0; b < g.kernel_w; ++b) {
                    const int64_t tap = (og * taps + a * g.kernel_w + b);
                    const double dy =
                        value(offset, ((n * g.offset_group * taps * 2) + tap * 2) * plane + i * g.out_w + j);
                    const double dx = value(
                        offset, ((n * g.offset_group * taps * 2) + tap * 2 + 1) * plane + i * g.out_w + j);
                    const double scale =
                        mask ? value(mask, (n * g.offset_group * taps + tap) * plane + i * g.out_w + j) : 1.0;
                    const double row =
                        static_cast<double>(i * g.stride_h - g.pad_top + a * g.dilation_h) + dy;
                    const double col =
                        static_cast<double>(j * g.stride_w - g.pad_left + b * g.dilation_w) + dx;
                    sum += value(w, ((oc * in_per_group + ic - grp * in_per_group) * g.kernel_h + a) *
                                            g.kernel_w +
                                        b) *
                           scale * sample(image, g.height, g.width, row, col);
                  }
                }
              }
              y[(no * g.out_h + i) * g.out_w + j] = convert_value<T>(sum);
            }
          }
        }
      });
    }
  });
}

KILN_REGISTER_OP(DeformConv)
    .doc(
        "2-D convolution with each tap moved by offset (N, offset_group * kH * kW * 2, oH, oW) and scaled by "
        "the "
        "optional mask (N, offset_group * kH * kW, oH, oW); samples are bilinear, zero outside the image.")
    .input("X")
    .input("W")
    .input("offset")
    .input("B", Arity::kOptional)
    .input("mask", Arity::kOptional)
    .output("Y")
    .optional_attr("dilations", AttrType::kInts)
    .attr("group", AttrType::kInt, 1)
    .optional_attr("kernel_shape", AttrType::kInts)
    .attr("offset_group", AttrType::kInt, 1)
    .optional_attr("pads", AttrType::kInts)
    .optional_attr("strides", AttrType::kInts)
    .infer(infer_deform_conv)
    .kernel(deform_conv_kernel);

}  // namespace
}  // namespace kiln::ops
