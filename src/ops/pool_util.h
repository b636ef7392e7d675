// Sliding-window geometry of the pooling ops (MaxPool, AveragePool, LpPool): reads kernel_shape,
// strides, dilations, pads, auto_pad and ceil_mode, validates them against the input's shape and
// computes the output's spatial sizes with ONNX's rules.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "attr_validators.h"
#include "op_schema.h"

namespace kiln::ops {

// One pooling call over the spatial axes of an (N, C, D1, ..., Dk) input.
struct PoolWindow {
  std::vector<int64_t> input;  // spatial input sizes
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pad_begin;
  std::vector<int64_t> pad_end;
  std::vector<int64_t> output;  // spatial output sizes

  int rank() const { return static_cast<int>(input.size()); }
  // The span of input positions one window covers along spatial axis i.
  int64_t extent(int i) const {
    const auto k = static_cast<size_t>(i);
    return (kernel[k] - 1) * dilations[k] + 1;
  }
};

// Bind-time check of the auto_pad attribute.
inline void validate_auto_pad(const AttrValue& value, const std::string& what) {
  const auto& s = std::get<std::string>(value.variant());
  KILN_CHECK(s == "NOTSET" || s == "SAME_UPPER" || s == "SAME_LOWER" || s == "VALID",
             ErrorCode::kInvalidArgument, what,
             ": expected one of {NOTSET, SAME_UPPER, SAME_LOWER, VALID}, got '", s, "'");
}

namespace pool_detail {

inline int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
inline int64_t ceil_div(int64_t a, int64_t b) {
  return -floor_div(-a, b);
}

// A per-axis attribute list: `count` values, all >= `min_value`; `fallback` fills it when absent.
inline std::vector<int64_t> axis_list(const Attrs& attrs, const std::string& name, size_t count,
                                      int64_t fallback, int64_t min_value, const std::string& x_desc) {
  if (!attrs.has(name)) return std::vector<int64_t>(count, fallback);
  const auto& v = attrs.get_ints(name);
  KILN_CHECK(v.size() == count, ErrorCode::kInvalidArgument, "attribute '", name, "': expected ", count,
             " values (", name == "pads" ? "a begin and an end per spatial axis" : "one per spatial axis",
             " of ", x_desc, "), got ", v.size());
  for (size_t i = 0; i < v.size(); ++i)
    KILN_CHECK(v[i] >= min_value, ErrorCode::kInvalidArgument, "attribute '", name,
               "': expected values >= ", min_value, ", got ", v[i], " at position ", i);
  return v;
}

}  // namespace pool_detail

// Validates the window attributes against input shape `x` (errors name `x_label`) and computes
// the pads and output sizes. Input rank must already be known to be >= 3.
inline PoolWindow pool_window(const Attrs& attrs, const Shape& x, const std::string& x_label) {
  using pool_detail::axis_list;
  using pool_detail::ceil_div;
  using pool_detail::floor_div;
  const size_t rank = static_cast<size_t>(x.ndim() - 2);
  std::ostringstream desc;
  desc << x_label << " with shape " << x;
  const std::string x_desc = desc.str();

  PoolWindow w;
  w.input.assign(x.begin() + 2, x.end());
  w.kernel = axis_list(attrs, "kernel_shape", rank, 1, 1, x_desc);
  w.strides = axis_list(attrs, "strides", rank, 1, 1, x_desc);
  w.dilations = axis_list(attrs, "dilations", rank, 1, 1, x_desc);
  const std::vector<int64_t> pads = axis_list(attrs, "pads", 2 * rank, 0, 0, x_desc);
  const std::string& auto_pad = attrs.get_string("auto_pad");
  const bool ceil_mode = attrs.get_int("ceil_mode") == 1;
  w.pad_begin.assign(pads.begin(), pads.begin() + static_cast<std::ptrdiff_t>(rank));
  w.pad_end.assign(pads.begin() + static_cast<std::ptrdiff_t>(rank), pads.end());
  KILN_CHECK(auto_pad == "NOTSET" || std::all_of(pads.begin(), pads.end(), [](int64_t p) { return p == 0; }),
             ErrorCode::kInvalidArgument, "attribute 'pads' must be zero (or absent) when auto_pad is ",
             auto_pad);

  w.output.resize(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t in = w.input[i], s = w.strides[i], extent = w.extent(static_cast<int>(i));
    const int axis = static_cast<int>(i) + 2;
    // Pads at least as wide as the window would make windows of padding alone.
    KILN_CHECK(w.pad_begin[i] < extent && w.pad_end[i] < extent, ErrorCode::kInvalidArgument,
               "attribute 'pads': expected pads of axis ", axis, " smaller than its window extent ", extent,
               ", got ", w.pad_begin[i], " and ", w.pad_end[i]);
    if (in < 0) {  // unknown while a graph is being typed
      w.output[i] = Shape::kUnknown;
      continue;
    }
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
      // The output keeps ceil(in / stride) positions; the padding needed for that is split
      // evenly, the odd element going to the end (SAME_UPPER) or to the beginning (SAME_LOWER).
      w.output[i] = ceil_div(in, s);
      const int64_t total = std::max<int64_t>(0, (w.output[i] - 1) * s + extent - in);
      const int64_t small = total / 2, large = total - small;
      w.pad_begin[i] = auto_pad == "SAME_UPPER" ? small : large;
      w.pad_end[i] = auto_pad == "SAME_UPPER" ? large : small;
      continue;
    }
    const int64_t span = in + w.pad_begin[i] + w.pad_end[i] - extent;
    if (in == 0) {
      w.output[i] = 0;
      continue;
    }
    KILN_CHECK(span >= 0, ErrorCode::kShapeMismatch, x_label, ": axis ", axis, " has ", in, " elements",
               " (padded by ", w.pad_begin[i], " + ", w.pad_end[i], "), expected at least the window extent ",
               extent, ", got shape ", x);
    if (ceil_mode) {
      w.output[i] = ceil_div(span, s) + 1;
      // The last window must start inside the input or its leading padding, not in the trailing padding.
      if ((w.output[i] - 1) * s >= in + w.pad_begin[i]) --w.output[i];
    } else {
      w.output[i] = floor_div(span, s) + 1;
    }
  }
  return w;
}

}  // namespace kiln::ops
