// Spatial transformer sampling: AffineGrid (opset 20: the normalized sampling grid an affine map
// sends a 2-D or 3-D output lattice to) and GridSample (opset 22: X sampled at those normalized
// positions, over any number of spatial axes, with nearest, N-linear or N-cubic interpolation and
// zeros, border or reflection padding).
//
// GridSample follows the ONNX reference implementation (onnx/reference/ops/op_grid_sample.py),
// which computes the conformance tests' expected values and mirrors PyTorch's grid_sample: the
// source coordinate is computed in the grid's precision (float for the 16-bit floats); nearest
// rounds half to even; a coordinate outside the padding borders is clamped (border) or reflected
// (reflection) first, and then every interpolation tap outside the input is zero, clamped or
// reflected again. The interpolation taps of each output position are shared by all channels, so
// they are worked out once per block of positions and then applied channel by channel.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// Elements of work per parallel task: large enough that scheduling is noise.
constexpr int64_t kGridGrain = 1 << 15;

// ---- AffineGrid ------------------------------------------------------------------------------

inline constexpr DType kInt64Only[] = {DType::kInt64};

std::vector<TensorInfo> infer_affine_grid(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_dtype(ctx, 1, kInt64Only);
  require_rank(ctx, 0, 3, 3);
  require_rank(ctx, 1, 1, 1);
  const Shape& theta = ctx.shape(0);
  const auto size = read_int_values(ctx.value(1), ctx.input_label(1));
  KILN_CHECK(size.size() == 4 || size.size() == 5, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected 4 values (N, C, H, W) or 5 (N, C, D, H, W), got ", size.size());
  for (int64_t v : size)
    KILN_CHECK(v >= 0, ErrorCode::kInvalidArgument, ctx.input_label(1), ": expected values >= 0, got ", v);
  const int64_t spatial = static_cast<int64_t>(size.size()) - 2;
  const Shape expected{size[0], spatial, spatial + 1};
  bool fits = true;
  for (int a = 0; a < 3; ++a) fits &= theta[a] < 0 || theta[a] == expected[a];
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected shape ", expected, " (a ",
             spatial, "-D affine map per image of ", ctx.input_label(1), " = ", Shape(size), "), got shape ",
             theta);
  Shape out{size[0]};
  for (int64_t a = 2; a < static_cast<int64_t>(size.size()); ++a) out.push_back(size[static_cast<size_t>(a)]);
  out.push_back(spatial);
  return {TensorInfo{ctx.dtype(0), out}};
}

// The normalized position of lattice point i of `length`: the pixel centre's position in [-1, 1]
// when the extrema are the outer edges, or the centre itself when they are the corner centres. A
// single point sits at 0 either way (as in PyTorch's affine_grid).
double lattice_position(int64_t i, int64_t length, bool align_corners) {
  if (align_corners)
    return length == 1 ? 0.0 : -1.0 + static_cast<double>(i) * 2.0 / static_cast<double>(length - 1);
  const double step = 2.0 / static_cast<double>(length);
  return -1.0 + step / 2 + static_cast<double>(i) * step;
}

// The lattice's normalized positions along each axis: (z, y, x), z = {1} for 2-D.
struct Lattice {
  std::vector<double> z, y, x;
};

// grid[n, (d,) h, w, k] = sum_j theta[n, k, j] * (x_w, y_h, (z_d,) 1)[j].
template <class T>
void affine_grid(const Tensor& theta, Tensor& grid, const Lattice& lattice) {
  using C = compute_t<T>;
  const int spatial = grid.ndim() - 2, cols = spatial + 1;
  const auto depth = static_cast<int64_t>(lattice.z.size()), height = static_cast<int64_t>(lattice.y.size()),
             width = static_cast<int64_t>(lattice.x.size());
  const T* matrices = theta.data<T>();
  T* out = grid.data<T>();
  const int64_t rows = grid.shape()[0] * depth * height;
  parallel_for(
      0, rows, std::max<int64_t>(1, kGridGrain / (width * spatial)), [&](int64_t begin, int64_t end) {
        for (int64_t row = begin; row < end; ++row) {
          const int64_t h = row % height, d = (row / height) % depth, n = row / (height * depth);
          const T* m = matrices + n * spatial * cols;
          double point[4] = {0, lattice.y[static_cast<size_t>(h)], lattice.z[static_cast<size_t>(d)], 1.0};
          if (spatial == 2) point[2] = 1.0;
          T* o = out + row * width * spatial;
          for (int64_t w = 0; w < width; ++w) {
            point[0] = lattice.x[static_cast<size_t>(w)];
            for (int k = 0; k < spatial; ++k) {
              double v = 0;
              for (int j = 0; j < cols; ++j)
                v += static_cast<double>(static_cast<C>(m[k * cols + j])) * point[j];
              o[w * spatial + k] = convert_value<T>(v);
            }
          }
        }
      });
}

void affine_grid_kernel(KernelContext& ctx) {
  Tensor& grid = ctx.output(0);
  if (grid.numel() == 0) return;
  const bool align_corners = ctx.attrs.get_int("align_corners") == 1;
  const int spatial = grid.ndim() - 2;
  auto positions = [&](int64_t length) {
    std::vector<double> p(static_cast<size_t>(length));
    for (int64_t i = 0; i < length; ++i)
      p[static_cast<size_t>(i)] = lattice_position(i, length, align_corners);
    return p;
  };
  const Lattice lattice{spatial == 3 ? positions(grid.shape()[1]) : std::vector<double>{1.0},
                        positions(grid.shape()[spatial - 1]), positions(grid.shape()[spatial])};
  dispatch_dtype(grid.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) affine_grid<T>(ctx.input(0), grid, lattice);
  });
}

// ---- GridSample ------------------------------------------------------------------------------

enum class Interpolation { kNearest, kLinear, kCubic };
enum class Padding { kZeros, kBorder, kReflection };

struct SampleOptions {
  Interpolation mode = Interpolation::kLinear;
  Padding padding = Padding::kZeros;
  bool align_corners = false;
};

SampleOptions sample_options(const Attrs& attrs) {
  SampleOptions opt;
  const std::string& mode = attrs.get_string("mode");
  opt.mode = mode == "nearest" ? Interpolation::kNearest
             : mode == "cubic" ? Interpolation::kCubic
                               : Interpolation::kLinear;
  const std::string& padding = attrs.get_string("padding_mode");
  opt.padding = padding == "border"       ? Padding::kBorder
                : padding == "reflection" ? Padding::kReflection
                                          : Padding::kZeros;
  opt.align_corners = attrs.get_int("align_corners") == 1;
  return opt;
}

std::vector<TensorInfo> infer_grid_sample(InferContext& ctx) {
  require_dtype(ctx, 1, kFloatDTypes);
  const Shape& x = ctx.shape(0);
  const Shape& grid = ctx.shape(1);
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, D1, ...) with at least one spatial axis (rank >= 3), got shape ", x);
  const int spatial = x.ndim() - 2;
  bool fits = grid.ndim() == x.ndim();
  fits = fits && (grid[0] < 0 || x[0] < 0 || grid[0] == x[0]) &&
         (grid[spatial + 1] < 0 || grid[spatial + 1] == spatial);
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected shape (", x[0],
             ", D1_out, ..., ", spatial, ") of rank ", x.ndim(), " (N and the ", spatial, " spatial axes of ",
             ctx.input_label(0), ", shape ", x, "), got shape ", grid);
  Shape out{x[0], x[1]};
  for (int a = 1; a <= spatial; ++a) out.push_back(grid[a]);
  return {TensorInfo{ctx.dtype(0), out}};
}

// Reflects x into [lo, hi] by the near border, again and again until it lands inside.
double reflect(double x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return lo;
  if (x >= lo && x <= hi) return x;
  const double dx = x < lo ? lo - x : x - hi;
  const double bounces = std::floor(dx / range);
  const double r = dx - bounces * range;
  const bool even = std::fmod(bounces, 2.0) == 0;
  return (x < lo) == even ? lo + r : hi - r;
}

// Keys' cubic convolution weights (a = -0.75, as PyTorch) for the taps at -1, 0, 1, 2 from a
// point t in [0, 1) past tap 0.
void cubic_weights(double t, double w[4]) {
  constexpr double a = -0.75;
  auto near = [](double d) { return ((a + 2) * d - (a + 3)) * d * d + 1; };       // |d| <= 1
  auto far = [](double d) { return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a; };  // 1 < |d| < 2
  w[0] = far(t + 1);
  w[1] = near(t);
  w[2] = near(1 - t);
  w[3] = far(2 - t);
}

// One spatial axis of X as the sampler sees it.
struct SampleAxis {
  int64_t length;
  double lo, hi;  // the padding borders: the corner pixels' centres or their outer edges
};

// Where one interpolation tap reads along an axis: the index, or -1 for a zero (outside, zeros
// padding, or no valid coordinate).
int64_t tap_index(int64_t i, const SampleAxis& axis, Padding padding) {
  switch (padding) {
    case Padding::kZeros:
      return i >= 0 && i < axis.length ? i : -1;
    case Padding::kBorder:
      return std::clamp<int64_t>(i, 0, axis.length - 1);
    case Padding::kReflection:
      break;
  }
  const double r = std::nearbyint(reflect(static_cast<double>(i), axis.lo, axis.hi));
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, axis.length - 1);
}

// The taps of one position along one axis: index -1 reads a zero.
struct AxisTaps {
  int64_t index[4] = {-1, -1, -1, -1};
  double weight[4] = {1, 0, 0, 0};
};

// The taps along one spatial axis that sample normalized coordinate n. G is the grid's compute
// type, in which the source coordinate is computed (as the reference does).
template <class G>
AxisTaps axis_taps(G n, const SampleAxis& axis, const SampleOptions& opt, int per_axis) {
  const auto length = static_cast<G>(axis.length);
  G x = opt.align_corners ? (n + G(1)) / G(2) * (length - G(1)) : ((n + G(1)) * length - G(1)) / G(2);
  if (opt.mode == Interpolation::kNearest) x = std::nearbyint(x);
  double c = static_cast<double>(x);
  if (c < axis.lo || c > axis.hi) {
    if (opt.padding == Padding::kBorder) c = std::clamp(c, 0.0, static_cast<double>(axis.length - 1));
    if (opt.padding == Padding::kReflection) c = reflect(c, axis.lo, axis.hi);
  }
  AxisTaps taps;
  // NaN, infinite or far-out coordinates have no taps: they sample zeros.
  if (!(std::abs(c) <= static_cast<double>(axis.length) + 4.0)) return taps;
  if (opt.mode == Interpolation::kNearest) {
    taps.index[0] = tap_index(static_cast<int64_t>(std::nearbyint(c)), axis, opt.padding);
    return taps;
  }
  const double first = std::floor(c), t = c - first;
  const auto base = static_cast<int64_t>(first) - (per_axis == 4 ? 1 : 0);
  for (int k = 0; k < per_axis; ++k) taps.index[k] = tap_index(base + k, axis, opt.padding);
  if (per_axis == 2) {
    taps.weight[0] = 1 - t;
    taps.weight[1] = t;
  } else {
    cubic_weights(t, taps.weight);
  }
  return taps;
}

// The combined taps of a block of output positions: position p has counts[p] (flat offset into
// an input plane, weight) pairs, stored from p * per_position on.
struct BlockTaps {
  int64_t per_position;
  std::vector<int64_t> offsets;
  std::vector<double> weights;
  std::vector<int64_t> counts;

  BlockTaps(int64_t positions, int64_t taps)
      : per_position(taps),
        offsets(static_cast<size_t>(positions * taps)),
        weights(static_cast<size_t>(positions * taps)),
        counts(static_cast<size_t>(positions)) {}

  // Every combination of one tap per axis whose taps all read the input.
  void set(int64_t p, const std::vector<AxisTaps>& axes, const std::vector<int64_t>& strides, int per_axis) {
    int64_t n = 0;
    const auto base = static_cast<size_t>(p * per_position);
    for (int64_t combo = 0; combo < per_position; ++combo) {
      int64_t offset = 0, rest = combo;
      double weight = 1;
      bool inside = true;
      for (size_t a = 0; a < axes.size() && inside; ++a) {
        const auto k = static_cast<size_t>(rest % per_axis);
        rest /= per_axis;
        inside = axes[a].index[k] >= 0;
        offset += axes[a].index[k] * strides[a];
        weight *= axes[a].weight[k];
      }
      if (!inside) continue;
      offsets[base + static_cast<size_t>(n)] = offset;
      weights[base + static_cast<size_t>(n)] = weight;
      ++n;
    }
    counts[static_cast<size_t>(p)] = n;
  }
};

// A double result stored as T: integers round half to even and saturate; NaN becomes 0.
template <class T>
T store_value(double v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_integral_v<T>) {
    if (std::isnan(v)) return 0;
    const double r = std::nearbyint(v);
    constexpr auto lo = static_cast<double>(std::numeric_limits<T>::lowest());
    constexpr auto hi = static_cast<double>(std::numeric_limits<T>::max());
    if (r <= lo) return std::numeric_limits<T>::lowest();
    if (r >= hi) return std::numeric_limits<T>::max();
    return static_cast<T>(r);
  } else {
    return convert_value<T>(v);
  }
}

// Output positions whose taps are worked out together and then applied to every channel.
constexpr int64_t kPositionBlock = 64;

template <class T, class G>
void grid_sample(const Tensor& x, const Tensor& grid, Tensor& y, const SampleOptions& opt) {
  using GC = compute_t<G>;
  T* out = y.data<T>();
  if (x.numel() == 0) {  // an empty image has nothing to sample but padding zeros
    std::fill(out, out + y.numel(), T{});
    return;
  }
  const int spatial = x.ndim() - 2;
  const int64_t batch = x.shape()[0], channels = x.shape()[1];
  std::vector<SampleAxis> axes;
  for (int a = 0; a < spatial; ++a) {
    const int64_t length = x.shape()[a + 2];
    axes.push_back(opt.align_corners ? SampleAxis{length, 0.0, static_cast<double>(length - 1)}
                                     : SampleAxis{length, -0.5, static_cast<double>(length) - 0.5});
  }
  const std::vector<int64_t> full_strides = contiguous_strides(x.shape());
  const std::vector<int64_t> strides(full_strides.begin() + 2, full_strides.end());
  const int64_t in_plane = x.numel() / (batch * channels);
  const int64_t positions = y.numel() / (batch * channels);
  const int64_t blocks = (positions + kPositionBlock - 1) / kPositionBlock;
  const int per_axis = opt.mode == Interpolation::kNearest ? 1 : opt.mode == Interpolation::kLinear ? 2 : 4;
  int64_t taps_per_position = 1;
  for (int a = 0; a < spatial; ++a) taps_per_position *= per_axis;
  const T* in = x.data<T>();
  const G* coords = grid.data<G>();
  const int64_t work = kPositionBlock * channels * taps_per_position;
  parallel_for(0, batch * blocks, std::max<int64_t>(1, kGridGrain / work), [&](int64_t begin, int64_t end) {
    BlockTaps block(kPositionBlock, taps_per_position);
    std::vector<AxisTaps> point(static_cast<size_t>(spatial));
    for (int64_t item = begin; item < end; ++item) {
      const int64_t n = item / blocks, p0 = (item % blocks) * kPositionBlock;
      const int64_t count = std::min(kPositionBlock, positions - p0);
      for (int64_t p = 0; p < count; ++p) {
        // The grid lists a position's coordinates innermost axis first.
        const G* g = coords + (n * positions + p0 + p) * spatial;
        for (int a = 0; a < spatial; ++a)
          point[static_cast<size_t>(a)] =
              axis_taps(static_cast<GC>(g[spatial - 1 - a]), axes[static_cast<size_t>(a)], opt, per_axis);
        block.set(p, point, strides, per_axis);
      }
      for (int64_t c = 0; c < channels; ++c) {
        const T* plane = in + (n * channels + c) * in_plane;
        T* o = out + (n * channels + c) * positions + p0;
        for (int64_t p = 0; p < count; ++p) {
          const auto first = static_cast<size_t>(p * taps_per_position);
          const int64_t taps = block.counts[static_cast<size_t>(p)];
          if (opt.mode == Interpolation::kNearest) {
            o[p] = taps == 0 ? T{} : plane[block.offsets[first]];
            continue;
          }
          double sum = 0;
          for (size_t k = first; k < first + static_cast<size_t>(taps); ++k)
            sum += block.weights[k] * static_cast<double>(static_cast<compute_t<T>>(plane[block.offsets[k]]));
          o[p] = store_value<T>(sum);
        }
      }
    }
  });
}

void grid_sample_kernel(KernelContext& ctx) {
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const SampleOptions opt = sample_options(ctx.attrs);
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    dispatch_dtype(ctx.input(1).dtype(), [&](auto grid_tag) {
      using G = typename decltype(grid_tag)::type;
      if constexpr (std::is_floating_point_v<compute_t<G>>)
        grid_sample<T, G>(ctx.input(0), ctx.input(1), y, opt);
    });
  });
}

KILN_REGISTER_OP(AffineGrid)
    .doc(
        "The sampling grid (N, H, W, 2) or (N, D, H, W, 3) that the affine maps theta (N, 2, 3) or "
        "(N, 3, 4) send a lattice of `size` = (N, C, [D,] H, W) normalized positions to.")
    .input("theta")
    .shape_input("size")
    .output("grid")
    .attr("align_corners", AttrType::kInt, 0, require_flag)
    .infer(infer_affine_grid)
    .kernel(affine_grid_kernel);

KILN_REGISTER_OP(GridSample)
    .doc(
        "Samples X (N, C, D1, ..., Dr) at the normalized positions of grid (N, D1_out, ..., Dr_out, r), "
        "innermost axis first, by nearest, N-linear or N-cubic interpolation; positions outside use "
        "padding_mode zeros, border or reflection.")
    .input("X")
    .input("grid")
    .output("Y")
    .attr("align_corners", AttrType::kInt, 0, require_flag)
    .attr("mode", AttrType::kString, "linear", one_of({"linear", "nearest", "cubic"}))
    .attr("padding_mode", AttrType::kString, "zeros", one_of({"zeros", "border", "reflection"}))
    .infer(infer_grid_sample)
    .kernel(grid_sample_kernel);

}  // namespace
}  // namespace kiln::ops
