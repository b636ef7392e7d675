// What the convolution family (Conv, ConvTranspose) shares: the window attributes (auto_pad,
// dilations, group, kernel_shape, pads, strides) and their checks, SAME padding, and the
// im2col / col2im transforms that turn a convolution into a GEMM.
//
// Both ops relate an *image* (Conv's input, ConvTranspose's output) to a *grid* of kernel
// placements (Conv's output, ConvTranspose's input): grid position g and kernel tap t touch
// image position g * stride - pad_begin + t * dilation, for every spatial axis.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {

enum class AutoPad { kNotSet, kSameUpper, kSameLower, kValid };

inline AutoPad parse_auto_pad(const std::string& s) {
  if (s == "NOTSET") return AutoPad::kNotSet;
  if (s == "SAME_UPPER") return AutoPad::kSameUpper;
  if (s == "SAME_LOWER") return AutoPad::kSameLower;
  if (s == "VALID") return AutoPad::kValid;
  raise(ErrorCode::kInvalidArgument, "expected one of NOTSET, SAME_UPPER, SAME_LOWER, VALID, got '", s, "'");
}

inline void validate_auto_pad(const AttrValue& v, const std::string& what) {
  try {
    parse_auto_pad(std::get<std::string>(v.variant()));
  } catch (const Error& e) {
    raise(e.code(), what, ": ", e.what());
  }
}

// An ints attribute as written in messages: [1, 2].
inline std::string ints_text(const std::vector<int64_t>& values) {
  std::string s = "[";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + "]";
}

inline void validate_positive_ints(const AttrValue& v, const std::string& what) {
  const auto& values = std::get<std::vector<int64_t>>(v.variant());
  for (int64_t x : values)
    KILN_CHECK(x >= 1, ErrorCode::kInvalidArgument, what, ": expected values >= 1, got ", ints_text(values));
}

inline void validate_nonnegative_ints(const AttrValue& v, const std::string& what) {
  const auto& values = std::get<std::vector<int64_t>>(v.variant());
  for (int64_t x : values)
    KILN_CHECK(x >= 0, ErrorCode::kInvalidArgument, what, ": expected values >= 0, got ", ints_text(values));
}

inline void validate_group(const AttrValue& v, const std::string& what) {
  const int64_t group = std::get<int64_t>(v.variant());
  KILN_CHECK(group >= 1, ErrorCode::kInvalidArgument, what, ": expected a value >= 1, got ", group);
}

// ONNX Conv's window attributes, which every op built like Conv declares (Conv, ConvInteger,
// QLinearConv and Conv's gradient ops): schema.with(conv_window_attrs).
inline void conv_window_attrs(OpSchema& schema) {
  schema.attr("auto_pad", AttrType::kString, "NOTSET", validate_auto_pad)
      .optional_attr("dilations", AttrType::kInts, validate_positive_ints)
      .attr("group", AttrType::kInt, 1, validate_group)
      .optional_attr("kernel_shape", AttrType::kInts, validate_positive_ints)
      .optional_attr("pads", AttrType::kInts, validate_nonnegative_ints)
      .optional_attr("strides", AttrType::kInts, validate_positive_ints);
}

// The window attributes with their per-axis defaults filled in.
struct WindowAttrs {
  AutoPad auto_pad = AutoPad::kNotSet;
  int64_t group = 1;
  std::vector<int64_t> kernel, strides, dilations;
  std::vector<int64_t> pads;  // begin values of every axis, then end values
};

// A per-axis ints attribute: as many values as `fallback` holds, or `fallback` when absent.
inline std::vector<int64_t> axis_values(const Attrs& attrs, const std::string& name,
                                        std::vector<int64_t> fallback, const char* layout) {
  if (!attrs.has(name)) return fallback;
  const auto& values = attrs.get_ints(name);
  KILN_CHECK(values.size() == fallback.size(), ErrorCode::kInvalidArgument, "attribute '", name,
             "': expected ", fallback.size(), " values (", layout, "), got ", ints_text(values));
  return values;
}

// Reads the window attributes for a weight of shape w (out/in channels, then the kernel).
inline WindowAttrs read_window_attrs(const Attrs& attrs, const Shape& w) {
  const size_t spatial = static_cast<size_t>(w.ndim() - 2);
  WindowAttrs r;
  r.auto_pad = parse_auto_pad(attrs.get_string("auto_pad"));
  r.group = attrs.get_int("group");
  const char* per_axis = "one per spatial axis";
  r.kernel = axis_values(attrs, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()), per_axis);
  r.strides = axis_values(attrs, "strides", std::vector<int64_t>(spatial, 1), per_axis);
  r.dilations = axis_values(attrs, "dilations", std::vector<int64_t>(spatial, 1), per_axis);
  r.pads =
      axis_values(attrs, "pads", std::vector<int64_t>(2 * spatial, 0), "begin and end of each spatial axis");
  return r;
}

// "kD, kH, kW" for 3 spatial axes, "kH, kW" for 2, "kW" for 1.
inline std::string kernel_dims_text(int spatial) {
  static const char* names[] = {"kD", "kH", "kW"};
  std::string s;
  for (int a = 3 - spatial; a < 3; ++a) s += std::string(s.empty() ? "" : ", ") + names[a];
  return s;
}

// The checks both ops' inference shares: X (input 0) is a float (N, C, spatial...) with 1 to 3
// spatial axes, W (input 1) has X's dtype and rank, and kernel_shape agrees with W's kernel.
// Returns the attributes read against W.
inline WindowAttrs infer_window_attrs(const InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_same_dtype(ctx, 0, 1);
  const Shape& x = ctx.shape(0);
  const Shape& w = ctx.shape(1);
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) with 1 to 3 spatial axes, got shape ", x);
  KILN_CHECK(x.ndim() <= 5, ErrorCode::kUnsupported, ctx.input_label(0),
             ": more than 3 spatial axes are not implemented, got shape ", x);
  KILN_CHECK(w.ndim() == x.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected ", x.ndim(),
             "-D like ", ctx.input_label(0), " of shape ", x, ", got shape ", w);
  const WindowAttrs r = read_window_attrs(ctx.attrs(), w);
  for (int a = 0; a < w.ndim() - 2; ++a) {
    const int64_t from_w = w[a + 2];
    KILN_CHECK(from_w < 0 || from_w == r.kernel[static_cast<size_t>(a)], ErrorCode::kShapeMismatch,
               "attribute 'kernel_shape': expected ", ints_text(std::vector<int64_t>(w.begin() + 2, w.end())),
               ", the kernel of ", ctx.input_label(1), " of shape ", w, ", got ", ints_text(r.kernel));
  }
  return r;
}

// Checks the optional bias B (input 2): same dtype as X, shape (channels_out).
inline void check_bias(const InferContext& ctx, int64_t channels_out) {
  if (!ctx.has_input(2)) return;
  require_same_dtype(ctx, 0, 2);
  const Shape& b = ctx.shape(2);
  KILN_CHECK(b.ndim() == 1 && (b[0] == channels_out || b[0] < 0 || channels_out < 0),
             ErrorCode::kShapeMismatch, ctx.input_label(2), ": expected shape ", Shape{channels_out},
             ", one value per output channel, got ", b);
}

inline int64_t floor_div(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// The leading pad of a SAME_* padding totalling `total` (negative: the output reaches past the
// image). SAME_UPPER puts the odd element at the end, SAME_LOWER at the beginning; floor
// division, as in the ONNX reference.
inline int64_t same_pad_begin(AutoPad auto_pad, int64_t total) {
  return auto_pad == AutoPad::kSameUpper ? floor_div(total, 2) : total - floor_div(total, 2);
}

// The window, padded to three spatial axes (leading unused axes have extent 1).
struct ConvWindow3d {
  std::array<int64_t, 3> image{1, 1, 1}, grid{1, 1, 1}, kernel{1, 1, 1};
  std::array<int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1}, pad{0, 0, 0};  // pad: leading pads

  // Sets spatial axis a of `spatial` (1 to 3).
  void set_axis(int spatial, int a, int64_t image_size, int64_t grid_size, int64_t kernel_size, int64_t step,
                int64_t dilation_size, int64_t pad_begin) {
    const size_t i = static_cast<size_t>(3 - spatial + a);
    image[i] = image_size;
    grid[i] = grid_size;
    kernel[i] = kernel_size;
    stride[i] = step;
    dilation[i] = dilation_size;
    pad[i] = pad_begin;
  }
  int64_t image_size() const { return image[0] * image[1] * image[2]; }
  int64_t grid_size() const { return grid[0] * grid[1] * grid[2]; }
  int64_t kernel_size() const { return kernel[0] * kernel[1] * kernel[2]; }
  // The grid as rows of grid[2] positions: the unit the column matrix is built in chunks of.
  int64_t grid_rows() const { return grid[0] * grid[1]; }
  // A 1x1 kernel with stride 1 and no padding: the image is its own column matrix.
  bool is_pointwise() const {
    for (size_t i = 0; i < 3; ++i)
      if (kernel[i] != 1 || stride[i] != 1 || pad[i] != 0 || grid[i] != image[i]) return false;
    return true;
  }
};

// Column matrices are built for a chunk of grid rows at a time, so their size stays near this
// many elements however large the image: cache-sized work units, one buffer per task.
inline constexpr int64_t kColumnBudget = 1 << 18;

inline int64_t grid_rows_per_chunk(const ConvWindow3d& w, int64_t col_rows) {
  const int64_t per_row = std::max<int64_t>(1, col_rows * w.grid[2]);
  return std::clamp<int64_t>(kColumnBudget / per_row, 1, std::max<int64_t>(1, w.grid_rows()));
}

namespace conv_detail {

// Grid positions j in [0, grid) whose image position j * stride + shift lies in [0, image).
inline std::pair<int64_t, int64_t> valid_positions(int64_t grid, int64_t image, int64_t stride,
                                                   int64_t shift) {
  const int64_t lo = std::clamp<int64_t>(ceil_div(-shift, stride), 0, grid);
  const int64_t hi = std::clamp<int64_t>(ceil_div(image - shift, stride), lo, grid);
  return {lo, hi};
}

// Visits the column matrix of `channels` image channels over grid rows [row_begin, row_end):
// its rows are (channel, kernel tap) pairs, its columns the grid positions of those rows. For
// each stretch of grid[2] columns calls visit(col_offset, image_offset, lo, hi): columns
// col_offset + j with j in [lo, hi) touch image element image_offset + j * stride[2]; the
// others fall into the padding.
template <class Visit>
void for_each_column_stretch(const ConvWindow3d& w, int64_t channels, int64_t row_begin, int64_t row_end,
                             Visit&& visit) {
  const int64_t width = w.grid[2], cols = (row_end - row_begin) * width;
  int64_t col_row = 0;
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t0 = 0; t0 < w.kernel[0]; ++t0)
      for (int64_t t1 = 0; t1 < w.kernel[1]; ++t1)
        for (int64_t t2 = 0; t2 < w.kernel[2]; ++t2, ++col_row) {
          const int64_t shift = t2 * w.dilation[2] - w.pad[2];
          const auto [lo, hi] = valid_positions(width, w.image[2], w.stride[2], shift);
          for (int64_t r = row_begin; r < row_end; ++r) {
            const int64_t i0 = (r / w.grid[1]) * w.stride[0] + t0 * w.dilation[0] - w.pad[0];
            const int64_t i1 = (r % w.grid[1]) * w.stride[1] + t1 * w.dilation[1] - w.pad[1];
            const int64_t col_offset = col_row * cols + (r - row_begin) * width;
            if (i0 >= 0 && i0 < w.image[0] && i1 >= 0 && i1 < w.image[1])
              visit(col_offset, ((c * w.image[0] + i0) * w.image[1] + i1) * w.image[2] + shift, lo, hi);
            else
              visit(col_offset, int64_t{0}, int64_t{0}, int64_t{0});
          }
        }
}

// Splits `channels` across the compute pool, about 32K elements of work per task.
template <class F>
void for_channel_ranges(int64_t channels, int64_t per_channel, F&& fn) {
  parallel_for(0, channels, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, per_channel)), fn);
}

}  // namespace conv_detail

// col[(c, tap), j] = image[c, position of (tap, grid position j)], or 0 in the padding, for the
// grid rows [row_begin, row_end). col holds channels * kernel_size rows of
// (row_end - row_begin) * grid[2] columns.
template <class T>
void im2col(const T* image, int64_t channels, const ConvWindow3d& w, int64_t row_begin, int64_t row_end,
            T* col) {
  const int64_t taps = w.kernel_size(), cols = (row_end - row_begin) * w.grid[2];
  const int64_t width = w.grid[2], step = w.stride[2];
  conv_detail::for_channel_ranges(channels, taps * cols, [&](int64_t c_begin, int64_t c_end) {
    const T* src = image + c_begin * w.image_size();
    T* dst_base = col + c_begin * taps * cols;
    conv_detail::for_each_column_stretch(
        w, c_end - c_begin, row_begin, row_end,
        [&](int64_t col_offset, int64_t image_offset, int64_t lo, int64_t hi) {
          T* dst = dst_base + col_offset;
          std::fill(dst, dst + lo, T{});
          for (int64_t j = lo; j < hi; ++j) dst[j] = src[image_offset + j * step];
          std::fill(dst + hi, dst + width, T{});
        });
  });
}

// The adjoint of im2col: image[c, position of (tap, j)] += col[(c, tap), j].
template <class Acc>
void col2im(const Acc* col, int64_t channels, const ConvWindow3d& w, int64_t row_begin, int64_t row_end,
            Acc* image) {
  const int64_t taps = w.kernel_size(), cols = (row_end - row_begin) * w.grid[2];
  const int64_t step = w.stride[2];
  // Channels own disjoint image planes, so they can be summed into concurrently.
  conv_detail::for_channel_ranges(channels, taps * cols, [&](int64_t c_begin, int64_t c_end) {
    const Acc* src_base = col + c_begin * taps * cols;
    Acc* dst = image + c_begin * w.image_size();
    conv_detail::for_each_column_stretch(
        w, c_end - c_begin, row_begin, row_end,
        [&](int64_t col_offset, int64_t image_offset, int64_t lo, int64_t hi) {
          const Acc* src = src_base + col_offset;
          for (int64_t j = lo; j < hi; ++j) dst[image_offset + j * step] += src[j];
        });
  });
}

}  // namespace kiln::ops
