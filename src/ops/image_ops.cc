// Image region ops: Col2Im (opset 18: sums sliding blocks back into an N-D image, the inverse
// layout of im2col), CenterCropPad (opset 18: crops or zero-pads chosen axes around their centre)
// and RoiAlign (opset 22: average or max of bilinear samples over a grid of bins per region of
// interest, as in Mask R-CNN).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

// Elements of work per parallel task: large enough that scheduling is noise.
constexpr int64_t kImageGrain = 1 << 15;

inline constexpr DType kInt64Only[] = {DType::kInt64};

void validate_positive_ints(const AttrValue& value, const std::string& what) {
  for (int64_t v : std::get<std::vector<int64_t>>(value.variant()))
    KILN_CHECK(v >= 1, ErrorCode::kInvalidArgument, what, ": expected values >= 1, got ", v);
}

void validate_nonnegative_ints(const AttrValue& value, const std::string& what) {
  for (int64_t v : std::get<std::vector<int64_t>>(value.variant()))
    KILN_CHECK(v >= 0, ErrorCode::kInvalidArgument, what, ": expected values >= 0, got ", v);
}

// A 1-D int64 shape-like input of positive values.
std::vector<int64_t> read_positive(const InferContext& ctx, int i) {
  require_dtype(ctx, i, kInt64Only);
  require_rank(ctx, i, 1, 1);
  const auto values = read_int_values(ctx.value(i), ctx.input_label(i));
  for (int64_t v : values)
    KILN_CHECK(v >= 1, ErrorCode::kInvalidArgument, ctx.input_label(i), ": expected values >= 1, got ", v);
  return values;
}

// ---- Col2Im ----------------------------------------------------------------------------------

// The geometry of one Col2Im call, from its shape inputs and attributes.
struct Col2ImGeometry {
  std::vector<int64_t> image, block, strides, dilations, pads;  // pads: r begins, then r ends
  std::vector<int64_t> blocks;                                  // sliding positions per axis

  int rank() const { return static_cast<int>(image.size()); }
};

// The attribute `name` with `count` values (`per` says how they map to axes), or `fallback`
// repeated when it is absent.
std::vector<int64_t> per_axis_attr(const Attrs& attrs, const std::string& name, size_t count,
                                   int64_t fallback, const char* per) {
  if (!attrs.has(name)) return std::vector<int64_t>(count, fallback);
  const auto& values = attrs.get_ints(name);
  KILN_CHECK(values.size() == count, ErrorCode::kShapeMismatch, "attribute '", name, "': expected ", count,
             " values (", per, "), got ", values.size());
  return values;
}

Col2ImGeometry col2im_geometry(const Attrs& attrs, std::vector<int64_t> image, std::vector<int64_t> block) {
  Col2ImGeometry g;
  const size_t r = image.size();
  g.image = std::move(image);
  g.block = std::move(block);
  g.strides = per_axis_attr(attrs, "strides", r, 1, "one per spatial axis");
  g.dilations = per_axis_attr(attrs, "dilations", r, 1, "one per spatial axis");
  g.pads = per_axis_attr(attrs, "pads", 2 * r, 0, "the begins of the spatial axes, then their ends");
  for (size_t a = 0; a < r; ++a) {
    const int64_t span = g.dilations[a] * (g.block[a] - 1) + 1;
    const int64_t padded = g.image[a] + g.pads[a] + g.pads[a + r];
    KILN_CHECK(padded >= span, ErrorCode::kShapeMismatch, "the block of axis ", a, " spans ", span,
               " (block_shape ", g.block[a], ", dilation ", g.dilations[a], ") but the padded image is only ",
               padded, " long (image_shape ", g.image[a], " plus pads ", g.pads[a], " and ", g.pads[a + r],
               ")");
    g.blocks.push_back((padded - span) / g.strides[a] + 1);
  }
  return g;
}

std::vector<TensorInfo> infer_col2im(InferContext& ctx) {
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() == 3, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C * prod(block_shape), L) of rank 3, got shape ", x);
  const auto image = read_positive(ctx, 1);
  const auto block = read_positive(ctx, 2);
  KILN_CHECK(block.size() == image.size(), ErrorCode::kShapeMismatch, ctx.input_label(2), ": expected ",
             image.size(), " values (one per axis of ", ctx.input_label(1), "), got ", block.size());
  KILN_CHECK(!image.empty(), ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected at least one spatial axis, got none");
  const Col2ImGeometry g = col2im_geometry(ctx.attrs(), image, block);
  int64_t block_size = 1, positions = 1;
  for (int a = 0; a < g.rank(); ++a) {
    block_size *= g.block[static_cast<size_t>(a)];
    positions *= g.blocks[static_cast<size_t>(a)];
  }
  KILN_CHECK(x[1] < 0 || x[1] % block_size == 0, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected axis 1 to be a multiple of prod(block_shape) = ", block_size, ", got shape ", x);
  KILN_CHECK(x[2] < 0 || x[2] == positions, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected axis 2 to hold the ", positions, " sliding block positions ", Shape(g.blocks),
             ", got shape ", x);
  Shape out{x[0], x[1] < 0 ? Shape::kUnknown : x[1] / block_size};
  for (int64_t d : g.image) out.push_back(d);
  return {TensorInfo{ctx.dtype(0), out}};
}

// Where sums accumulate: double for floats, wrapping unsigned arithmetic for integers (so signed
// overflow wraps like numpy instead of being undefined), and for bool a count whose non-zero
// values are true.
template <class T>
using Col2ImAcc = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, uint64_t>;

template <class T>
Col2ImAcc<T> to_acc(T v) {
  if constexpr (std::is_floating_point_v<compute_t<T>>) {
    return static_cast<double>(static_cast<compute_t<T>>(v));
  } else {
    return static_cast<uint64_t>(v);
  }
}

template <class T>
T from_acc(Col2ImAcc<T> v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v != 0;
  } else if constexpr (std::is_floating_point_v<compute_t<T>>) {
    return convert_value<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

// Where each column element of a plane lands in the image.
class Col2ImPlan {
 public:
  explicit Col2ImPlan(Col2ImGeometry g)
      : g_(std::move(g)), image_strides_(contiguous_strides(Shape(g_.image))) {
    // coords_[a][k * blocks[a] + b]: the image coordinate along axis a that kernel offset k at
    // block position b lands on, or -1 in the padding.
    coords_.resize(static_cast<size_t>(g_.rank()));
    for (size_t a = 0; a < coords_.size(); ++a)
      for (int64_t k = 0; k < g_.block[a]; ++k)
        for (int64_t b = 0; b < g_.blocks[a]; ++b) {
          const int64_t i = b * g_.strides[a] - g_.pads[a] + k * g_.dilations[a];
          coords_[a].push_back(i >= 0 && i < g_.image[a] ? i : -1);
        }
  }

  // Adds the (block_size, positions) columns of one plane into `sums` (the plane's image). Block
  // positions are walked as rows along the last axis, each a run of columns.
  template <class T, class Acc>
  void add_plane(const T* columns, int64_t block_size, int64_t positions, std::vector<Acc>& sums) const {
    const size_t last = coords_.size() - 1;
    const int64_t run = g_.blocks[last];
    std::vector<int64_t> offset(last + 1), outer(last);
    for (int64_t k = 0; k < block_size; ++k) {
      int64_t rest = k;
      for (size_t a = last + 1; a-- > 0;) {
        offset[a] = rest % g_.block[a];
        rest /= g_.block[a];
      }
      const int64_t* inner = coords_[last].data() + offset[last] * run;
      std::fill(outer.begin(), outer.end(), 0);
      for (int64_t first = 0; first < positions; first += run) {
        int64_t base = 0;  // the image offset of the row, or -1 when it lies in the padding
        for (size_t a = 0; a < last && base >= 0; ++a) {
          const int64_t i = coords_[a][static_cast<size_t>(offset[a] * g_.blocks[a] + outer[a])];
          base = i < 0 ? -1 : base + i * image_strides_[a];
        }
        if (base >= 0) {
          const T* row = columns + k * positions + first;
          for (int64_t b = 0; b < run; ++b)
            if (inner[b] >= 0) sums[static_cast<size_t>(base + inner[b])] += to_acc(row[b]);
        }
        for (size_t a = last; a-- > 0;) {  // the next row: the outer axes count like digits
          if (++outer[a] < g_.blocks[a]) break;
          outer[a] = 0;
        }
      }
    }
  }

 private:
  Col2ImGeometry g_;
  std::vector<int64_t> image_strides_;
  std::vector<std::vector<int64_t>> coords_;
};

void col2im_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const Col2ImPlan plan(col2im_geometry(ctx.attrs, read_int_values(ctx.input(1), "image_shape"),
                                        read_int_values(ctx.input(2), "block_shape")));
  const int64_t planes = y.shape()[0] * y.shape()[1];
  const int64_t image_size = y.numel() / planes;
  const int64_t block_size = x.shape()[1] / y.shape()[1], positions = x.shape()[2];
  const int64_t grain = std::max<int64_t>(1, kImageGrain / std::max<int64_t>(1, block_size * positions));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    parallel_for(0, planes, grain, [&](int64_t begin, int64_t end) {
      std::vector<Col2ImAcc<T>> sums(static_cast<size_t>(image_size));
      for (int64_t p = begin; p < end; ++p) {
        std::fill(sums.begin(), sums.end(), Col2ImAcc<T>{});
        plan.add_plane(in + p * block_size * positions, block_size, positions, sums);
        T* o = out + p * image_size;
        for (int64_t i = 0; i < image_size; ++i) o[i] = from_acc<T>(sums[static_cast<size_t>(i)]);
      }
    });
  });
}

// ---- CenterCropPad ---------------------------------------------------------------------------

std::vector<int> crop_axes(const Attrs& attrs, int rank) {
  if (!attrs.has("axes")) {
    std::vector<int> all(static_cast<size_t>(rank));
    for (int a = 0; a < rank; ++a) all[static_cast<size_t>(a)] = a;
    return all;
  }
  return normalize_axes(attrs.get_ints("axes"), rank, "attribute 'axes'");
}

std::vector<TensorInfo> infer_center_crop_pad(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank(ctx, 1, 1, 1);
  const Shape& x = ctx.shape(0);
  const std::vector<int> axes = crop_axes(ctx.attrs(), x.ndim());
  const auto target = read_int_values(ctx.value(1), ctx.input_label(1));
  KILN_CHECK(target.size() == axes.size(), ErrorCode::kShapeMismatch, ctx.input_label(1), ": expected ",
             axes.size(), " values (one per axis in ",
             ctx.attrs().has("axes") ? "attribute 'axes'" : "the rank of " + ctx.input_label(0), "), got ",
             target.size());
  Shape out = x;
  for (size_t k = 0; k < axes.size(); ++k) {
    KILN_CHECK(target[k] >= 0, ErrorCode::kInvalidArgument, ctx.input_label(1),
               ": expected values >= 0, got ", target[k]);
    out[axes[k]] = target[k];
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

void center_crop_pad_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const int rank = x.ndim();
  // Per axis: the copied length and where it starts in the input (cropped) and the output
  // (padded). An odd difference puts the extra element after the centre: floor(diff / 2) before.
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  int64_t src_offset = 0, dst_offset = 0;
  bool padded = false;
  const auto src_strides = contiguous_strides(x.shape()), dst_strides = contiguous_strides(y.shape());
  for (int a = 0; a < rank; ++a) {
    const auto ua = static_cast<size_t>(a);
    const int64_t in = x.shape()[a], out = y.shape()[a];
    dims[ua] = std::min(in, out);
    if (in > out) src_offset += (in - out) / 2 * src_strides[ua];
    if (out > in) dst_offset += (out - in) / 2 * dst_strides[ua];
    padded |= out > in;
  }
  char* dst = static_cast<char*>(y.raw_data());
  const auto item = static_cast<int64_t>(x.itemsize());
  if (padded) std::memset(dst, 0, y.nbytes());  // all-zero bytes are 0 in every dtype
  if (x.numel() == 0) return;
  copy_strided(dst + dst_offset * item, dst_strides,
               static_cast<const char*>(x.raw_data()) + src_offset * item, src_strides, dims, x.itemsize());
}

// ---- RoiAlign --------------------------------------------------------------------------------

void validate_at_least_one(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v >= 1, ErrorCode::kInvalidArgument, what, ": expected a value >= 1, got ", v);
}

void validate_sampling_ratio(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v >= 0, ErrorCode::kInvalidArgument, what, ": expected a value >= 0 (0: adaptive), got ", v);
}

std::vector<TensorInfo> infer_roi_align(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_same_dtype(ctx, 0, 1);
  require_dtype(ctx, 2, kInt64Only);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() == 4, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, H, W) of rank 4, got shape ", x);
  const Shape& rois = ctx.shape(1);
  KILN_CHECK(rois.ndim() == 2 && (rois[1] < 0 || rois[1] == 4), ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected (num_rois, 4) boxes (x1, y1, x2, y2), got shape ", rois);
  const Shape& indices = ctx.shape(2);
  KILN_CHECK(indices.ndim() == 1 && (indices[0] < 0 || rois[0] < 0 || indices[0] == rois[0]),
             ErrorCode::kShapeMismatch, ctx.input_label(2), ": expected shape (", rois[0],
             ",) (one image index per box of ", ctx.input_label(1), "), got shape ", indices);
  const int64_t rows = rois[0] >= 0 ? rois[0] : indices[0];
  return {TensorInfo{ctx.dtype(0), Shape{rows, x[1], ctx.attrs().get_int("output_height"),
                                         ctx.attrs().get_int("output_width")}}};
}

// One bilinear sample: four plane offsets and their weights (all zero outside the image).
struct BilinearSample {
  int64_t offset[4] = {0, 0, 0, 0};
  double weight[4] = {0, 0, 0, 0};
};

// The bilinear sample at (y, x) of an H x W plane, as the reference computes it: points more than
// one pixel outside contribute nothing; the others are clamped into the image.
BilinearSample bilinear_sample(double y, double x, int64_t height, int64_t width) {
  BilinearSample s;
  if (y < -1.0 || y > static_cast<double>(height) || x < -1.0 || x > static_cast<double>(width)) return s;
  y = std::max(y, 0.0);
  x = std::max(x, 0.0);
  auto y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x);
  int64_t y_high = y_low + 1, x_high = x_low + 1;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<double>(y_low);
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<double>(x_low);
  }
  const double ly = y - static_cast<double>(y_low), lx = x - static_cast<double>(x_low);
  const double hy = 1 - ly, hx = 1 - lx;
  s.offset[0] = y_low * width + x_low;
  s.offset[1] = y_low * width + x_high;
  s.offset[2] = y_high * width + x_low;
  s.offset[3] = y_high * width + x_high;
  s.weight[0] = hy * hx;
  s.weight[1] = hy * lx;
  s.weight[2] = ly * hx;
  s.weight[3] = ly * lx;
  return s;
}

struct RoiAlignOptions {
  bool max_mode, half_pixel;
  int64_t out_h, out_w, sampling_ratio;
  double spatial_scale;
};

// A bound on the bilinear samples of one box, far above any real use, that keeps a huge box from
// exhausting memory.
constexpr double kMaxSamplesPerBox = 1 << 26;

// The samples of every bin of one box, bin by bin (row-major), `grid_h * grid_w` per bin.
struct BoxSamples {
  std::vector<BilinearSample> samples;
  int64_t grid_h = 0, grid_w = 0;
};

BoxSamples box_samples(const double box[4], int64_t box_index, int64_t height, int64_t width,
                       const RoiAlignOptions& opt) {
  // Box corners in feature-map pixels; half_pixel shifts them onto pixel centres.
  const double shift = opt.half_pixel ? 0.5 : 0.0;
  const double start_w = box[0] * opt.spatial_scale - shift, start_h = box[1] * opt.spatial_scale - shift;
  double roi_w = box[2] * opt.spatial_scale - shift - start_w,
         roi_h = box[3] * opt.spatial_scale - shift - start_h;
  if (!opt.half_pixel) {  // the legacy mode forces malformed boxes to 1 x 1
    roi_w = std::max(roi_w, 1.0);
    roi_h = std::max(roi_h, 1.0);
  }
  const double bin_h = roi_h / static_cast<double>(opt.out_h), bin_w = roi_w / static_cast<double>(opt.out_w);
  // Adaptive sampling takes about one sample per pixel of a bin; an inverted box has none.
  auto grid = [&](double bin) -> int64_t {
    if (opt.sampling_ratio > 0) return opt.sampling_ratio;
    if (!(bin > 0)) return 0;
    return static_cast<int64_t>(std::ceil(std::min(bin, kMaxSamplesPerBox)));
  };
  BoxSamples b;
  b.grid_h = grid(bin_h);
  b.grid_w = grid(bin_w);
  const double total = static_cast<double>(opt.out_h * opt.out_w) * static_cast<double>(b.grid_h) *
                       static_cast<double>(b.grid_w);
  KILN_CHECK(total <= kMaxSamplesPerBox, ErrorCode::kUnsupported, "input 1 (rois): box ", box_index,
             " would take ", total, " bilinear samples (", b.grid_h, " x ", b.grid_w, " per bin); at most ",
             kMaxSamplesPerBox, " are supported");
  b.samples.reserve(static_cast<size_t>(opt.out_h * opt.out_w * b.grid_h * b.grid_w));
  for (int64_t ph = 0; ph < opt.out_h; ++ph)
    for (int64_t pw = 0; pw < opt.out_w; ++pw)
      for (int64_t iy = 0; iy < b.grid_h; ++iy) {
        const double y = start_h + static_cast<double>(ph) * bin_h +
                         (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(b.grid_h);
        for (int64_t ix = 0; ix < b.grid_w; ++ix) {
          const double x = start_w + static_cast<double>(pw) * bin_w +
                           (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(b.grid_w);
          b.samples.push_back(bilinear_sample(y, x, height, width));
        }
      }
  return b;
}

// Pools `channels` consecutive planes of one image (`plane` elements apart) into `bins` outputs
// each, from the box's samples.
template <class T>
void pool_box(const T* image, T* out, int64_t channels, int64_t plane, int64_t bins, const BoxSamples& box,
              bool max_mode) {
  const int64_t per_bin = box.grid_h * box.grid_w;
  const auto count = static_cast<double>(std::max<int64_t>(per_bin, 1));
  for (int64_t c = 0; c < channels; ++c) {
    const T* p = image + c * plane;
    auto at = [p](int64_t i) { return static_cast<double>(static_cast<compute_t<T>>(p[i])); };
    T* o = out + c * bins;
    for (int64_t bin = 0; bin < bins; ++bin) {
      const BilinearSample* samples = box.samples.data() + bin * per_bin;
      double value = 0;
      for (int64_t k = 0; k < per_bin; ++k) {
        const BilinearSample& s = samples[k];
        if (max_mode) {
          // ONNX's max mode takes the largest weighted corner, not the interpolated value.
          double m = s.weight[0] * at(s.offset[0]);
          for (int i = 1; i < 4; ++i) m = std::max(m, s.weight[i] * at(s.offset[i]));
          value = k == 0 ? m : std::max(value, m);
        } else {
          for (int i = 0; i < 4; ++i) value += s.weight[i] * at(s.offset[i]);
        }
      }
      o[bin] = convert_value<T>(max_mode ? value : value / count);
    }
  }
}

// Channels per task: each task works out its box's samples once and applies them to these.
constexpr int64_t kRoiChannelBlock = 16;

void roi_align_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const RoiAlignOptions opt{ctx.attrs.get_string("mode") == "max",
                            ctx.attrs.get_string("coordinate_transformation_mode") == "half_pixel",
                            ctx.attrs.get_int("output_height"),
                            ctx.attrs.get_int("output_width"),
                            ctx.attrs.get_int("sampling_ratio"),
                            ctx.attrs.get_float("spatial_scale")};
  const int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const int64_t boxes = y.shape()[0];
  const int64_t* image_of = ctx.input(2).data<int64_t>();
  std::vector<double> corners(static_cast<size_t>(boxes * 4));
  dispatch_dtype(ctx.input(1).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* rois = ctx.input(1).data<T>();
    for (size_t i = 0; i < corners.size(); ++i)
      corners[i] = static_cast<double>(static_cast<compute_t<T>>(rois[i]));
  });
  for (int64_t b = 0; b < boxes; ++b) {
    KILN_CHECK(image_of[b] >= 0 && image_of[b] < batch, ErrorCode::kOutOfRange,
               "input 2 (batch_indices): value ", image_of[b], " of box ", b, " is out of range for ", batch,
               " images (axis 0 of input 0 (X))");
    for (int k = 0; k < 4; ++k)
      KILN_CHECK(std::isfinite(corners[static_cast<size_t>(b * 4 + k)]), ErrorCode::kInvalidArgument,
                 "input 1 (rois): box ", b, " has a non-finite coordinate ",
                 corners[static_cast<size_t>(b * 4 + k)]);
  }
  const int64_t plane = height * width, bins = opt.out_h * opt.out_w;
  const int64_t channel_blocks = (channels + kRoiChannelBlock - 1) / kRoiChannelBlock;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    if (plane == 0) {  // an empty feature map: every sample falls outside it
      std::fill(out, out + y.numel(), T{});
      return;
    }
    const int64_t grain = std::max<int64_t>(1, kImageGrain / (kRoiChannelBlock * bins * 4));
    parallel_for(0, boxes * channel_blocks, grain, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t b = item / channel_blocks, c0 = (item % channel_blocks) * kRoiChannelBlock;
        const BoxSamples box = box_samples(&corners[static_cast<size_t>(b * 4)], b, height, width, opt);
        pool_box(in + (image_of[b] * channels + c0) * plane, out + (b * channels + c0) * bins,
                 std::min(kRoiChannelBlock, channels - c0), plane, bins, box, opt.max_mode);
      }
    });
  });
}

KILN_REGISTER_OP(Col2Im)
    .doc(
        "Sums the sliding blocks (N, C * prod(block_shape), L) into an image (N, C, *image_shape), "
        "the inverse layout of im2col: each block position adds its values where Conv would read them.")
    .input("input")
    .shape_input("image_shape")
    .shape_input("block_shape")
    .output("output")
    .optional_attr("dilations", AttrType::kInts, validate_positive_ints)
    .optional_attr("pads", AttrType::kInts, validate_nonnegative_ints)
    .optional_attr("strides", AttrType::kInts, validate_positive_ints)
    .infer(infer_col2im)
    .kernel(col2im_kernel);

KILN_REGISTER_OP(CenterCropPad)
    .doc(
        "Crops or zero-pads the chosen axes (all by default) to `shape` around their centre; an odd "
        "difference puts the extra element at the end.")
    .input("input_data")
    .shape_input("shape")
    .output("output_data")
    .optional_attr("axes", AttrType::kInts)
    .infer(infer_center_crop_pad)
    .kernel(center_crop_pad_kernel);

KILN_REGISTER_OP(RoiAlign)
    .doc(
        "Pools each box of rois (x1, y1, x2, y2, scaled by spatial_scale) on image batch_indices[i] of X "
        "into output_height x output_width bins, averaging (or taking the max of) bilinear samples on a "
        "sampling_ratio grid per bin (adaptive when 0).")
    .input("X")
    .input("rois")
    .input("batch_indices")
    .output("Y")
    .attr("coordinate_transformation_mode", AttrType::kString, "half_pixel",
          one_of({"half_pixel", "output_half_pixel"}))
    .attr("mode", AttrType::kString, "avg", one_of({"avg", "max"}))
    .attr("output_height", AttrType::kInt, 1, validate_at_least_one)
    .attr("output_width", AttrType::kInt, 1, validate_at_least_one)
    .attr("sampling_ratio", AttrType::kInt, 0, validate_sampling_ratio)
    .attr("spatial_scale", AttrType::kFloat, 1.0, validate_finite)
    .infer(infer_roi_align)
    .kernel(roi_align_kernel);

}  // namespace
}  // namespace kiln::ops
