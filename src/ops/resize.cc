// Resampling: Resize (ONNX opset 19: nearest, N-linear and N-cubic interpolation, every coordinate
// transformation mode, antialiasing, axes, keep_aspect_ratio_policy) and the deprecated Upsample
// (opset 9), which is Resize with asymmetric coordinates and nearest rounding down.
//
// Interpolation is separable. For every resized axis the kernels first work out, per output
// coordinate, the source index (nearest) or the source taps and their weights (linear, cubic).
// Nearest then gathers each output element directly; linear and cubic resample one axis per pass
// through a buffer, so an output element costs the sum rather than the product of the per-axis taps
// (antialiased downscaling has wide filters).
//
// The arithmetic follows the ONNX reference implementation (onnx/reference/ops/op_resize.py), which
// computes the conformance tests' expected values: source coordinates in double, using the
// fractional output width scale * length; an integral source coordinate taken as the right end of
// the interval below it; taps past the edges clamped to the edge; integer results rounded half to
// even and saturated. Output lengths from scales are floor(float(length) * scale), computed in float
// like ONNX shape inference and ONNX Runtime (so a scale of 0.7f takes 10 to 7, not 6).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <type_traits>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// Elements of work per parallel task: large enough that scheduling is noise.
constexpr int64_t kResizeGrain = 1 << 15;

enum class Interpolation { kNearest, kLinear, kCubic };
enum class CoordinateMode {
  kHalfPixel,
  kHalfPixelSymmetric,
  kPytorchHalfPixel,
  kAlignCorners,
  kAsymmetric,
  kTfCropAndResize,
  kTfHalfPixelForNn,  // Resize 11 only: half-pixel centres without the -0.5 (TensorFlow's nearest)
};
enum class NearestMode { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
enum class AspectPolicy { kStretch, kNotLarger, kNotSmaller };

// How a string attribute spells one enum value.
template <class E>
struct Spelling {
  const char* name;
  E value;
};

constexpr Spelling<Interpolation> kResizeModes[] = {{"nearest", Interpolation::kNearest},
                                                    {"linear", Interpolation::kLinear},
                                                    {"cubic", Interpolation::kCubic}};
constexpr Spelling<Interpolation> kUpsampleModes[] = {{"nearest", Interpolation::kNearest},
                                                      {"linear", Interpolation::kLinear}};
constexpr Spelling<CoordinateMode> kCoordinateModes[] = {
    {"half_pixel", CoordinateMode::kHalfPixel},
    {"half_pixel_symmetric", CoordinateMode::kHalfPixelSymmetric},
    {"pytorch_half_pixel", CoordinateMode::kPytorchHalfPixel},
    {"align_corners", CoordinateMode::kAlignCorners},
    {"asymmetric", CoordinateMode::kAsymmetric},
    {"tf_crop_and_resize", CoordinateMode::kTfCropAndResize},
    {"tf_half_pixel_for_nn", CoordinateMode::kTfHalfPixelForNn}};
constexpr Spelling<NearestMode> kNearestModes[] = {{"round_prefer_floor", NearestMode::kRoundPreferFloor},
                                                   {"round_prefer_ceil", NearestMode::kRoundPreferCeil},
                                                   {"floor", NearestMode::kFloor},
                                                   {"ceil", NearestMode::kCeil}};
constexpr Spelling<AspectPolicy> kAspectPolicies[] = {{"stretch", AspectPolicy::kStretch},
                                                      {"not_larger", AspectPolicy::kNotLarger},
                                                      {"not_smaller", AspectPolicy::kNotSmaller}};

template <class E, size_t N>
std::string spellings(const Spelling<E> (&choices)[N]) {
  std::string names;
  for (const auto& c : choices) names += (names.empty() ? "" : ", ") + std::string(c.name);
  return names;
}

// Rejects, at bind time, a string attribute that spells none of `choices`.
template <class E, size_t N>
AttrValidator one_of(const Spelling<E> (&choices)[N]) {
  return [&choices](const AttrValue& v, const std::string& what) {
    const auto& s = std::get<std::string>(v.variant());
    for (const auto& c : choices)
      if (s == c.name) return;
    raise(ErrorCode::kInvalidArgument, what, ": expected one of {", spellings(choices), "}, got '", s, "'");
  };
}

template <class E, size_t N>
E parse(const Spelling<E> (&choices)[N], const Attrs& attrs, const std::string& name) {
  const std::string& s = attrs.get_string(name);
  for (const auto& c : choices)
    if (s == c.name) return c.value;
  raise(ErrorCode::kInvalidArgument, "attribute '", name, "': expected one of {", spellings(choices),
        "}, got '", s, "'");
}

struct ResizeOptions {
  Interpolation interpolation = Interpolation::kNearest;
  CoordinateMode coordinates = CoordinateMode::kHalfPixel;
  NearestMode nearest = NearestMode::kRoundPreferFloor;
  AspectPolicy aspect = AspectPolicy::kStretch;
  bool antialias = false;
  bool exclude_outside = false;
  double cubic_a = -0.75;
  double extrapolation_value = 0;
  std::optional<std::vector<int64_t>> axes;  // the axes roi, scales and sizes refer to; none: all
};

ResizeOptions resize_options(const Attrs& attrs) {
  ResizeOptions opt;
  opt.interpolation = parse(kResizeModes, attrs, "mode");
  opt.coordinates = parse(kCoordinateModes, attrs, "coordinate_transformation_mode");
  opt.nearest = parse(kNearestModes, attrs, "nearest_mode");
  opt.aspect = parse(kAspectPolicies, attrs, "keep_aspect_ratio_policy");
  opt.antialias = attrs.get_int("antialias") != 0;
  opt.exclude_outside = attrs.get_int("exclude_outside") != 0;
  opt.cubic_a = attrs.get_float("cubic_coeff_a");
  opt.extrapolation_value = attrs.get_float("extrapolation_value");
  if (attrs.has("axes")) opt.axes = attrs.get_ints("axes");
  return opt;
}

// Upsample's output coordinate y reads input coordinate floor(y / scale): for whole scales, each
// element repeated `scale` times.
ResizeOptions upsample_options(const Attrs& attrs) {
  ResizeOptions opt;
  opt.interpolation = parse(kUpsampleModes, attrs, "mode");
  opt.coordinates = CoordinateMode::kAsymmetric;
  opt.nearest = NearestMode::kFloor;
  return opt;
}

// Where an op keeps the inputs that Resize reads besides X (-1: the op has no such input).
struct InputSlots {
  int roi, scales, sizes;
};
constexpr InputSlots kResizeSlots{1, 2, 3};
constexpr InputSlots kUpsampleSlots{-1, 1, -1};

std::vector<int> resized_axes(const ResizeOptions& opt, int rank) {
  if (opt.axes) return normalize_axes(*opt.axes, rank, "attribute 'axes'");
  std::vector<int> all(static_cast<size_t>(rank));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

// How one axis of X maps onto the output.
struct AxisPlan {
  int64_t in = 0, out = 0;
  double scale = 1;                   // the given scale, or out / in from sizes
  double roi_start = 0, roi_end = 1;  // tf_crop_and_resize's window, as fractions of the axis

  // Like the reference, the kernels leave an axis that maps onto itself alone.
  bool identity() const { return out == in && scale == 1 && roi_start == 0 && roi_end == 1; }
};

// A scales or sizes input: its values (null when not given) and the label errors name.
struct ShapeSource {
  const Tensor* values = nullptr;
  std::string label;
};

int64_t checked_length(double length, const std::string& label) {
  KILN_CHECK(length < 0x1p53, ErrorCode::kOutOfRange, label, ": output length ", length, " is too large");
  return static_cast<int64_t>(length);
}

// The output length and scale of every axis of X (length -1 where X's is unknown). An empty scales
// or sizes tensor counts as not given when the other one has values (opsets 11-12 required such
// placeholders).
std::vector<AxisPlan> plan_axes(const ResizeOptions& opt, const Shape& x, const std::vector<int>& axes,
                                const ShapeSource& scales, const ShapeSource& sizes) {
  std::vector<AxisPlan> plan(static_cast<size_t>(x.ndim()));
  for (int d = 0; d < x.ndim(); ++d)
    plan[static_cast<size_t>(d)].in = plan[static_cast<size_t>(d)].out = x[d];
  const bool scales_filled = scales.values && scales.values->numel() > 0;
  const bool sizes_filled = sizes.values && sizes.values->numel() > 0;
  KILN_CHECK(!(scales_filled && sizes_filled), ErrorCode::kInvalidArgument, "only one of ", scales.label,
             " and ", sizes.label, " may be given, got both");
  const bool use_sizes = sizes_filled || (!scales.values && sizes.values);
  KILN_CHECK(use_sizes || scales.values, ErrorCode::kInvalidArgument, "one of ", scales.label, " and ",
             sizes.label, " must be given");
  const ShapeSource& given = use_sizes ? sizes : scales;
  const Tensor& values = *given.values;
  const size_t k = axes.size();
  KILN_CHECK(values.ndim() == 1 && values.numel() == static_cast<int64_t>(k), ErrorCode::kShapeMismatch,
             given.label, ": expected 1-D with ", k, " values (one per resized axis), got shape ",
             values.shape());

  if (!use_sizes) {
    const std::vector<float> s = values.to_vector<float>();
    for (size_t i = 0; i < k; ++i) {
      KILN_CHECK(std::isfinite(s[i]) && s[i] > 0, ErrorCode::kInvalidArgument, scales.label,
                 ": expected positive finite scales, got ", s[i], " for axis ", axes[i]);
      AxisPlan& a = plan[static_cast<size_t>(axes[i])];
      a.scale = s[i];
      if (a.in >= 0) a.out = checked_length(std::floor(static_cast<float>(a.in) * s[i]), scales.label);
    }
    return plan;
  }

  const std::vector<int64_t> n = read_int_values(values, sizes.label);
  for (size_t i = 0; i < k; ++i)
    KILN_CHECK(n[i] >= 0, ErrorCode::kInvalidArgument, sizes.label, ": expected non-negative sizes, got ",
               n[i], " for axis ", axes[i]);
  if (opt.aspect == AspectPolicy::kStretch) {
    for (size_t i = 0; i < k; ++i) {
      AxisPlan& a = plan[static_cast<size_t>(axes[i])];
      a.out = n[i];
      if (a.in > 0) a.scale = static_cast<double>(n[i]) / static_cast<double>(a.in);
    }
    return plan;
  }
  // One scale for every resized axis: the smallest (not_larger) or largest (not_smaller) of
  // size / length, over the axes that have a length to keep in proportion.
  bool all_known = true;
  std::optional<double> scale;
  for (size_t i = 0; i < k; ++i) {
    const AxisPlan& a = plan[static_cast<size_t>(axes[i])];
    all_known = all_known && a.in >= 0;
    if (a.in <= 0) continue;
    const double r = static_cast<double>(n[i]) / static_cast<double>(a.in);
    scale = !scale ? r : opt.aspect == AspectPolicy::kNotLarger ? std::min(*scale, r) : std::max(*scale, r);
  }
  for (int d : axes) {
    AxisPlan& a = plan[static_cast<size_t>(d)];
    a.scale = scale.value_or(1.0);
    if (!all_known) {
      a.out = Shape::kUnknown;
    } else if (a.in > 0) {
      a.out = checked_length(std::floor(a.scale * static_cast<double>(a.in) + 0.5), sizes.label);  // half up
    }
  }
  return plan;
}

// Where output coordinate y falls along an axis of X (the reference's formulas).
double source_coordinate(CoordinateMode mode, const AxisPlan& a, int64_t y_index) {
  const double y = static_cast<double>(y_index);
  const double in = static_cast<double>(a.in);
  const double width = a.scale * in;  // fractional when the output length was rounded down
  switch (mode) {
    case CoordinateMode::kHalfPixel:
      return (y + 0.5) / a.scale - 0.5;
    case CoordinateMode::kHalfPixelSymmetric: {
      // Keeps the output centred on the input when its length was rounded down from `width`.
      const double adjustment = static_cast<double>(a.out) / width;
      const double offset = in / 2 * (1 - adjustment);
      return offset + (y + 0.5) / a.scale - 0.5;
    }
    case CoordinateMode::kPytorchHalfPixel:
      // A single output reads -0.5 as in the reference (the spec's text says 0; nearest and linear
      // read the same sample either way).
      return width == 1 ? -0.5 : (y + 0.5) / a.scale - 0.5;
    case CoordinateMode::kAlignCorners:
      return width == 1 ? 0.0 : y * (in - 1) / (width - 1);
    case CoordinateMode::kAsymmetric:
      return y / a.scale;
    case CoordinateMode::kTfHalfPixelForNn:
      return (y + 0.5) / a.scale;
    case CoordinateMode::kTfCropAndResize: {
      const double span = a.roi_end - a.roi_start;
      const double x = width == 1 ? span * (in - 1) / 2 : y * span * (in - 1) / (width - 1);
      return x + a.roi_start * (in - 1);
    }
  }
  raise(ErrorCode::kInternal, "unknown coordinate transformation mode ", static_cast<int>(mode));
}

// tf_crop_and_resize writes extrapolation_value where the source falls outside the input (or is
// NaN, which a window of extreme roi values can make).
bool extrapolates(const ResizeOptions& opt, const AxisPlan& a, double x) {
  return opt.coordinates == CoordinateMode::kTfCropAndResize &&
         !(x >= 0 && x <= static_cast<double>(a.in - 1));
}

// The input index nearest to source coordinate x under `mode`, clamped into the axis.
int64_t nearest_source(NearestMode mode, double x, int64_t in) {
  const double lower = std::floor(x);
  const double fraction = x - lower;
  double pick = lower;
  if (fraction != 0) {
    switch (mode) {
      case NearestMode::kRoundPreferFloor:
        pick = fraction <= 0.5 ? lower : lower + 1;
        break;
      case NearestMode::kRoundPreferCeil:
        pick = fraction < 0.5 ? lower : lower + 1;
        break;
      case NearestMode::kFloor:
        break;
      case NearestMode::kCeil:
        pick = lower + 1;
        break;
    }
  }
  return static_cast<int64_t>(std::clamp(pick, 0.0, static_cast<double>(in - 1)));
}

// A double result stored as T: integers round half to even and saturate (the reference's
// saturate_cast); NaN, which an integer cannot hold, becomes 0.
template <class T, class Acc>
T store_value(Acc v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return 0;
    const double r = std::nearbyint(static_cast<double>(v));
    constexpr double lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr double hi = static_cast<double>(std::numeric_limits<T>::max());
    if (r <= lo) return std::numeric_limits<T>::lowest();
    if (r >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return convert_value<T>(v);
  }
}

template <class T>
void resize_nearest(const Tensor& x, Tensor& y, const ResizeOptions& opt, const std::vector<AxisPlan>& plan) {
  const std::vector<int64_t> in_strides = contiguous_strides(x.shape());
  const std::vector<int64_t>& dims = y.shape().dims();
  // offsets[d][o]: the element offset into X that output coordinate o along axis d reads; -1 where
  // tf_crop_and_resize extrapolates.
  std::vector<std::vector<int64_t>> offsets(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    const AxisPlan& a = plan[d];
    for (int64_t o = 0; o < a.out; ++o) {
      if (a.identity()) {
        offsets[d].push_back(o * in_strides[d]);
        continue;
      }
      const double src = source_coordinate(opt.coordinates, a, o);
      offsets[d].push_back(
          extrapolates(opt, a, src) ? -1 : nearest_source(opt.nearest, src, a.in) * in_strides[d]);
    }
  }
  const T fill = store_value<T>(opt.extrapolation_value);
  const size_t outer_axes = dims.size() - 1;
  const int64_t inner = dims.back();
  const int64_t* last = offsets.back().data();
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  parallel_for(0, y.numel() / inner, std::max<int64_t>(1, kResizeGrain / inner),
               [&](int64_t begin, int64_t end) {
                 // The output coordinate of row `begin` along the outer axes, then counted up row by row.
                 std::vector<int64_t> coord(outer_axes);
                 for (size_t d = outer_axes, rest = static_cast<size_t>(begin); d-- > 0;) {
                   coord[d] = static_cast<int64_t>(rest % static_cast<size_t>(dims[d]));
                   rest /= static_cast<size_t>(dims[d]);
                 }
                 for (int64_t row = begin; row < end; ++row) {
                   int64_t base = 0;
                   bool outside = false;
                   for (size_t d = 0; d < outer_axes; ++d) {
                     const int64_t o = offsets[d][static_cast<size_t>(coord[d])];
                     outside = outside || o < 0;
                     base += o;
                   }
                   T* out = dst + row * inner;
                   if (outside) {
                     std::fill(out, out + inner, fill);
                   } else {
                     for (int64_t j = 0; j < inner; ++j) out[j] = last[j] < 0 ? fill : src[base + last[j]];
                   }
                   for (size_t d = outer_axes; d-- > 0;) {
                     if (++coord[d] < dims[d]) break;
                     coord[d] = 0;
                   }
                 }
               });
}

// The weight of a tap `distance` input samples from the source coordinate.
double filter_weight(Interpolation mode, double cubic_a, double distance) {
  const double d = std::abs(distance);
  if (mode == Interpolation::kLinear) return std::max(0.0, 1 - d);
  // Keys' cubic convolution kernel with parameter a.
  if (d <= 1) return ((cubic_a + 2) * d - (cubic_a + 3)) * d * d + 1;
  if (d < 2) return ((cubic_a * d - 5 * cubic_a) * d + 8 * cubic_a) * d - 4 * cubic_a;
  return 0;
}

// The taps of one resized axis for linear or cubic interpolation: output coordinate o reads the
// input indices index[o * taps + k] (clamped into the axis) with weights weight[o * taps + k].
struct AxisFilter {
  int axis = 0;
  int64_t in = 0, out = 0, taps = 0;
  std::vector<int64_t> index;
  std::vector<double> weight;
  std::vector<char> extrapolated;  // per output coordinate: write extrapolation_value instead
};

AxisFilter make_filter(const ResizeOptions& opt, int axis, const AxisPlan& a) {
  const double radius = opt.interpolation == Interpolation::kCubic ? 2 : 1;
  // Antialiasing stretches the filter by 1 / scale when downscaling, so that every input sample
  // contributes. An output length of at least 1 bounds 1 / scale by about twice the input length.
  const double stretch = opt.antialias ? std::min(a.scale, 1.0) : 1.0;
  const int64_t first = static_cast<int64_t>(std::floor(-radius / stretch)) + 1;  // tap offset from floor(x)
  const int64_t taps = 2 - 2 * first;
  AxisFilter f{axis, a.in, a.out, taps, {}, {}, {}};
  f.index.resize(static_cast<size_t>(a.out * taps));
  f.weight.resize(static_cast<size_t>(a.out * taps));
  f.extrapolated.resize(static_cast<size_t>(a.out));
  for (int64_t o = 0; o < a.out; ++o) {
    const double x = source_coordinate(opt.coordinates, a, o);
    if (extrapolates(opt, a, x)) {
      f.extrapolated[static_cast<size_t>(o)] = 1;
      continue;
    }
    // Like the reference, an integral x is the right end of the interval below it: its taps sit one
    // further left, and the leftmost weighs nothing.
    double lower = std::floor(x);
    double ratio = x - lower;
    if (ratio == 0) {
      ratio = 1;
      lower -= 1;
    }
    // Taps past the axis clamp to its edges (or weigh nothing with exclude_outside) however far out
    // they are; bounding `lower` keeps the integer conversion defined.
    const double bounded =
        std::clamp(lower, -static_cast<double>(taps) - 1, static_cast<double>(a.in + taps));
    const int64_t base = static_cast<int64_t>(bounded) + first;
    double* w = f.weight.data() + o * taps;
    int64_t* index = f.index.data() + o * taps;
    double sum = 0;
    for (int64_t k = 0; k < taps; ++k) {
      w[k] =
          filter_weight(opt.interpolation, opt.cubic_a, (static_cast<double>(first + k) - ratio) * stretch);
      sum += w[k];
    }
    if (opt.antialias && sum != 0)
      for (int64_t k = 0; k < taps; ++k) w[k] /= sum;
    if (opt.exclude_outside) {
      double kept = 0;
      for (int64_t k = 0; k < taps; ++k) {
        if (base + k < 0 || base + k >= a.in) w[k] = 0;
        kept += w[k];
      }
      if (kept != 0)
        for (int64_t k = 0; k < taps; ++k) w[k] /= kept;
    }
    for (int64_t k = 0; k < taps; ++k) index[k] = std::clamp<int64_t>(base + k, 0, a.in - 1);
  }
  return f;
}

// One resampling pass along f.axis: `src` has extents `dims`, `dst` the same but f.out along the axis.
template <class Src, class Dst, class Acc>
void filter_pass(const Src* src, Dst* dst, const std::vector<int64_t>& dims, const AxisFilter& f, Acc fill) {
  const int64_t outer = std::accumulate(dims.begin(), dims.begin() + f.axis, int64_t{1}, std::multiplies<>());
  const int64_t inner =
      std::accumulate(dims.begin() + f.axis + 1, dims.end(), int64_t{1}, std::multiplies<>());
  const int64_t in = dims[static_cast<size_t>(f.axis)];
  const int64_t grain = std::max<int64_t>(1, kResizeGrain / std::max<int64_t>(1, inner * f.taps));
  parallel_for(0, outer * f.out, grain, [&](int64_t begin, int64_t end) {
    std::vector<Acc> sums(static_cast<size_t>(inner));
    Acc* acc = sums.data();
    // Output row `row` is coordinate o along the axis within outer slice `slice`.
    int64_t slice = begin / f.out, o = begin % f.out;
    for (int64_t row = begin; row < end; ++row, ++o) {
      if (o == f.out) {
        o = 0;
        ++slice;
      }
      Dst* out = dst + row * inner;
      if (f.extrapolated[static_cast<size_t>(o)]) {
        std::fill(out, out + inner, store_value<Dst>(fill));
        continue;
      }
      const Src* plane = src + slice * in * inner;
      const double* w = f.weight.data() + o * f.taps;
      const int64_t* index = f.index.data() + o * f.taps;
      if (inner == 1) {  // the last axis: one dot product per output element
        Acc sum = 0;
        for (int64_t k = 0; k < f.taps; ++k)
          if (w[k] != 0)
            sum += static_cast<Acc>(w[k]) * static_cast<Acc>(static_cast<compute_t<Src>>(plane[index[k]]));
        *out = store_value<Dst>(sum);
        continue;
      }
      std::fill(acc, acc + inner, Acc(0));
      for (int64_t k = 0; k < f.taps; ++k) {
        // Integral source coordinates give zero-weight taps; skipping them also keeps an inf or NaN
        // neighbour out of an exact sample.
        if (w[k] == 0) continue;
        const auto weight = static_cast<Acc>(w[k]);
        const Src* s = plane + index[k] * inner;
        for (int64_t i = 0; i < inner; ++i)
          acc[i] += weight * static_cast<Acc>(static_cast<compute_t<Src>>(s[i]));
      }
      for (int64_t i = 0; i < inner; ++i) out[i] = store_value<Dst>(acc[i]);
    }
  });
}

template <class T>
void resize_filtered(const Tensor& x, Tensor& y, const ResizeOptions& opt,
                     const std::vector<AxisPlan>& plan) {
  // float for float32 and the 16-bit floats; double for float64 and the integers, whose results the
  // reference rounds from double.
  using Acc = std::conditional_t<std::is_same_v<compute_t<T>, float>, float, double>;
  std::vector<AxisFilter> filters;
  for (size_t d = 0; d < plan.size(); ++d)
    if (!plan[d].identity()) filters.push_back(make_filter(opt, static_cast<int>(d), plan[d]));
  if (filters.empty()) {
    y.copy_from(x);
    return;
  }
  // Shrinking axes first keeps the intermediate buffers, and so the later passes, small.
  std::stable_sort(filters.begin(), filters.end(), [](const AxisFilter& a, const AxisFilter& b) {
    return static_cast<double>(a.out) / static_cast<double>(a.in) <
           static_cast<double>(b.out) / static_cast<double>(b.in);
  });
  const auto fill = static_cast<Acc>(opt.extrapolation_value);
  std::vector<int64_t> dims = x.shape().dims();
  std::vector<Acc> current, next;
  for (size_t p = 0; p < filters.size(); ++p) {
    const AxisFilter& f = filters[p];
    const bool first = p == 0;
    if (p + 1 == filters.size()) {
      if (first) {
        filter_pass<T, T, Acc>(x.data<T>(), y.data<T>(), dims, f, fill);
      } else {
        filter_pass<Acc, T, Acc>(current.data(), y.data<T>(), dims, f, fill);
      }
      break;
    }
    std::vector<int64_t> out_dims = dims;
    out_dims[static_cast<size_t>(f.axis)] = f.out;
    next.resize(static_cast<size_t>(Shape(out_dims).numel()));
    if (first) {
      filter_pass<T, Acc, Acc>(x.data<T>(), next.data(), dims, f, fill);
    } else {
      filter_pass<Acc, Acc, Acc>(current.data(), next.data(), dims, f, fill);
    }
    std::swap(current, next);
    dims = std::move(out_dims);
  }
}

// A scales or sizes input as the kernel sees it, labelled as inference labels it.
ShapeSource kernel_source(const KernelContext& ctx, int slot, const char* name) {
  if (slot < 0) return {};
  return {ctx.has_input(slot) ? &ctx.input(slot) : nullptr,
          "input " + std::to_string(slot) + " (" + name + ")"};
}

// The shared kernel of Resize and Upsample.
void resample(KernelContext& ctx, const ResizeOptions& opt, const InputSlots& slots) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  const std::vector<int> axes = resized_axes(opt, x.ndim());
  std::vector<AxisPlan> plan = plan_axes(opt, x.shape(), axes, kernel_source(ctx, slots.scales, "scales"),
                                         kernel_source(ctx, slots.sizes, "sizes"));
  if (opt.coordinates == CoordinateMode::kTfCropAndResize) {
    // roi lists the starts of the resized axes, then their ends.
    const std::vector<double> roi = ctx.input(slots.roi).cast(DType::kFloat64).to_vector<double>();
    for (size_t i = 0; i < axes.size(); ++i) {
      const double start = roi[i], end = roi[axes.size() + i];
      KILN_CHECK(std::isfinite(start) && std::isfinite(end), ErrorCode::kInvalidArgument, "input ", slots.roi,
                 " (roi): expected finite values, got [", start, ", ", end, "] for axis ", axes[i]);
      plan[static_cast<size_t>(axes[i])].roi_start = start;
      plan[static_cast<size_t>(axes[i])].roi_end = end;
    }
  }
  if (y.numel() == 0) return;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (opt.interpolation == Interpolation::kNearest) {
      resize_nearest<T>(x, y, opt, plan);
    } else if constexpr (!std::is_same_v<T, bool>) {
      resize_filtered<T>(x, y, opt, plan);
    }
  });
}

constexpr DType kScaleDTypes[] = {DType::kFloat32};

// A scales or sizes input as inference sees it: its values when given.
template <size_t N>
ShapeSource infer_source(const InferContext& ctx, int slot, const DType (&allowed)[N]) {
  if (slot < 0) return {};
  if (!ctx.has_input(slot)) return {nullptr, ctx.input_label(slot)};
  require_dtype(ctx, slot, allowed);
  return {&ctx.value(slot), ctx.input_label(slot)};
}

std::vector<TensorInfo> infer_resample(InferContext& ctx, const ResizeOptions& opt, const InputSlots& slots) {
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected rank >= 1, got shape ",
             x);
  KILN_CHECK(opt.interpolation == Interpolation::kNearest || ctx.dtype(0) != DType::kBool,
             ErrorCode::kUnsupported, ctx.input_label(0), ": only mode 'nearest' resizes bool tensors");
  const std::vector<int> axes = resized_axes(opt, x.ndim());
  if (opt.coordinates == CoordinateMode::kTfCropAndResize) {
    KILN_CHECK(slots.roi >= 0 && ctx.has_input(slots.roi), ErrorCode::kInvalidArgument, "input ", slots.roi,
               " (roi) is required when coordinate_transformation_mode is tf_crop_and_resize");
    require_dtype(ctx, slots.roi, kFloatDTypes);
    const Shape& roi = ctx.shape(slots.roi);
    const int64_t expected = 2 * static_cast<int64_t>(axes.size());
    KILN_CHECK(roi.ndim() == 1 && (roi[0] == expected || roi[0] == Shape::kUnknown),
               ErrorCode::kShapeMismatch, ctx.input_label(slots.roi), ": expected 1-D with ", expected,
               " values (the starts, then the ends, of the resized axes), got shape ", roi);
  }
  const auto plan = plan_axes(opt, x, axes, infer_source(ctx, slots.scales, kScaleDTypes),
                              infer_source(ctx, slots.sizes, kIndexDTypes));
  Shape out;
  for (const AxisPlan& a : plan) out.push_back(a.out);
  if (out.numel() != 0) {
    for (int d : axes) {
      const AxisPlan& a = plan[static_cast<size_t>(d)];
      KILN_CHECK(a.in != 0, ErrorCode::kShapeMismatch, ctx.input_label(0), ": axis ", d,
                 " has length 0 and cannot be resized to length ", a.out, " (shape ", x, ")");
    }
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

KILN_REGISTER_OP(Resize)
    .doc(
        "Resizes X by `scales` or to `sizes` along `axes` (default all) with nearest, N-linear or N-cubic "
        "interpolation; coordinate_transformation_mode maps output to input coordinates, antialias widens "
        "the linear and cubic filters when downscaling.")
    .input("X")
    .input("roi", Arity::kOptional)
    .shape_input("scales", Arity::kOptional)
    .shape_input("sizes", Arity::kOptional)
    .output("Y")
    .attr("antialias", AttrType::kInt, 0, require_flag)
    .optional_attr("axes", AttrType::kInts)
    .attr("coordinate_transformation_mode", AttrType::kString, "half_pixel", one_of(kCoordinateModes))
    .attr("cubic_coeff_a", AttrType::kFloat, -0.75)
    .attr("exclude_outside", AttrType::kInt, 0, require_flag)
    .attr("extrapolation_value", AttrType::kFloat, 0.0)
    .attr("keep_aspect_ratio_policy", AttrType::kString, "stretch", one_of(kAspectPolicies))
    .attr("mode", AttrType::kString, "nearest", one_of(kResizeModes))
    .attr("nearest_mode", AttrType::kString, "round_prefer_floor", one_of(kNearestModes))
    .infer([](InferContext& ctx) { return infer_resample(ctx, resize_options(ctx.attrs()), kResizeSlots); })
    .kernel([](KernelContext& ctx) { resample(ctx, resize_options(ctx.attrs), kResizeSlots); });

KILN_REGISTER_OP(Upsample)
    .doc(
        "Deprecated (ONNX opset 9): Resize by `scales` (each >= 1) with asymmetric coordinates; output "
        "coordinate y of mode nearest reads input coordinate floor(y / scale).")
    .input("X")
    .shape_input("scales")
    .output("Y")
    .attr("mode", AttrType::kString, "nearest", one_of(kUpsampleModes))
    .infer([](InferContext& ctx) {
      auto out = infer_resample(ctx, upsample_options(ctx.attrs()), kUpsampleSlots);
      for (float s : ctx.value(1).to_vector<float>())
        KILN_CHECK(s >= 1, ErrorCode::kInvalidArgument, ctx.input_label(1), ": expected scales >= 1, got ",
                   s);
      return out;
    })
    .kernel([](KernelContext& ctx) { resample(ctx, upsample_options(ctx.attrs), kUpsampleSlots); });

}  // namespace
}  // namespace kiln::ops
