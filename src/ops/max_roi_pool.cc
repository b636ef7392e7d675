// MaxRoiPool (ONNX opset 1): the region-of-interest max pooling of Fast R-CNN, as Caffe, MXNet's
// ROIPooling and ONNX Runtime compute it. Each box (batch_index, x1, y1, x2, y2) is scaled by
// spatial_scale and rounded to whole pixels, split into pooled_shape bins whose edges are
// floor/ceil of the fractional bin size, and each bin takes the largest value under it (0 for a bin
// that falls outside the image).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "attr_validators.h"
#include "conv_util.h"
#include "core/thread_pool.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// Elements of work per parallel task: large enough that scheduling is noise.
constexpr int64_t kRoiPoolGrain = 1 << 15;

void validate_pooled_shape(const AttrValue& value, const std::string& what) {
  const auto& shape = std::get<std::vector<int64_t>>(value.variant());
  KILN_CHECK(shape.size() == 2 && shape[0] >= 1 && shape[1] >= 1, ErrorCode::kInvalidArgument, what,
             ": expected two values >= 1 (pooled height, pooled width), got ", ints_text(shape));
}

std::vector<TensorInfo> infer_max_roi_pool(InferContext& ctx) {
  require_dtype(ctx, 0, kFloatDTypes);
  require_same_dtype(ctx, 0, 1);
  const Shape& x = ctx.shape(0);
  KILN_CHECK(x.ndim() == 4, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected (N, C, H, W) of rank 4, got shape ", x);
  const Shape& rois = ctx.shape(1);
  KILN_CHECK(rois.ndim() == 2 && (rois[1] < 0 || rois[1] == 5), ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected (num_rois, 5) rows (batch_index, x1, y1, x2, y2), got shape ", rois);
  const std::vector<int64_t> pooled = ctx.attrs().get_ints("pooled_shape");
  return {TensorInfo{ctx.dtype(0), Shape{rois[0], x[1], pooled[0], pooled[1]}}};
}

// One box in feature-map pixels, rounded as the reference rounds it.
struct PixelBox {
  int64_t image, start_w, start_h, width, height;
};

PixelBox pixel_box(const double row[5], int64_t index, int64_t batch, double scale) {
  for (int k = 0; k < 5; ++k)
    KILN_CHECK(std::isfinite(row[k]), ErrorCode::kInvalidArgument, "input 1 (rois): box ", index,
               " has a non-finite value ", row[k]);
  const auto image = static_cast<int64_t>(row[0]);
  KILN_CHECK(image >= 0 && image < batch, ErrorCode::kOutOfRange, "input 1 (rois): batch index ", row[0],
             " of box ", index, " is out of range for ", batch, " images (axis 0 of input 0 (X))");
  auto pixel = [scale](double v) { return static_cast<int64_t>(std::round(v * scale)); };
  PixelBox box{image, pixel(row[1]), pixel(row[2]), 0, 0};
  // A malformed box (end before start) is forced to one pixel.
  box.width = std::max<int64_t>(pixel(row[3]) - box.start_w + 1, 1);
  box.height = std::max<int64_t>(pixel(row[4]) - box.start_h + 1, 1);
  return box;
}

// The pixel range [begin, end) of bin `i` of `bins` over a box side of `size` pixels from `start`,
// clipped to the image's `limit`. The bin size is fractional, in the input's precision as the
// reference computes it, and the edges are its floor and ceil.
template <class B>
std::pair<int64_t, int64_t> bin_range(int64_t i, int64_t bins, int64_t start, int64_t size, int64_t limit) {
  const B bin = static_cast<B>(size) / static_cast<B>(bins);
  const auto begin = static_cast<int64_t>(std::floor(static_cast<B>(i) * bin));
  const auto end = static_cast<int64_t>(std::ceil(static_cast<B>(i + 1) * bin));
  return {std::clamp<int64_t>(begin + start, 0, limit), std::clamp<int64_t>(end + start, 0, limit)};
}

void max_roi_pool_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  Tensor& y = ctx.output(0);
  if (y.numel() == 0) return;
  const std::vector<int64_t> pooled = ctx.attrs.get_ints("pooled_shape");
  const int64_t out_h = pooled[0], out_w = pooled[1];
  const double scale = ctx.attrs.get_float("spatial_scale");
  const int64_t batch = x.shape()[0], channels = x.shape()[1], height = x.shape()[2], width = x.shape()[3];
  const int64_t boxes = y.shape()[0];
  std::vector<double> rows(static_cast<size_t>(boxes * 5));
  dispatch_dtype(ctx.input(1).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* rois = ctx.input(1).data<T>();
    for (size_t i = 0; i < rows.size(); ++i)
      rows[i] = static_cast<double>(static_cast<compute_t<T>>(rois[i]));
  });
  std::vector<PixelBox> pixel_boxes;
  pixel_boxes.reserve(static_cast<size_t>(boxes));
  for (int64_t b = 0; b < boxes; ++b)
    pixel_boxes.push_back(pixel_box(&rows[static_cast<size_t>(b * 5)], b, batch, scale));
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using B = std::conditional_t<std::is_same_v<T, double>, double, float>;
    const T* in = x.data<T>();
    T* out = y.data<T>();
    const int64_t grain = std::max<int64_t>(1, kRoiPoolGrain / std::max<int64_t>(1, height * width));
    parallel_for(0, boxes * channels, grain, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const PixelBox& box = pixel_boxes[static_cast<size_t>(item / channels)];
        const T* plane = in + (box.image * channels + item % channels) * height * width;
        T* o = out + item * out_h * out_w;
        for (int64_t ph = 0; ph < out_h; ++ph) {
          const auto [h0, h1] = bin_range<B>(ph, out_h, box.start_h, box.height, height);
          for (int64_t pw = 0; pw < out_w; ++pw) {
            const auto [w0, w1] = bin_range<B>(pw, out_w, box.start_w, box.width, width);
            compute_t<T> best = h1 > h0 && w1 > w0 ? std::numeric_limits<compute_t<T>>::lowest() : 0;
            for (int64_t h = h0; h < h1; ++h)
              for (int64_t w = w0; w < w1; ++w) best = std::max<compute_t<T>>(best, plane[h * width + w]);
            o[ph * out_w + pw] = convert_value<T>(best);
          }
        }
      }
    });
  });
}

KILN_REGISTER_OP(MaxRoiPool)
    .doc(
        "Max-pools each box of rois (batch_index, x1, y1, x2, y2; scaled by spatial_scale and rounded to "
        "pixels) of X into pooled_shape bins, as Fast R-CNN (Caffe, MXNet's ROIPooling) does; a bin "
        "outside the image is 0.")
    .input("X")
    .input("rois")
    .output("Y")
    .required_attr("pooled_shape", AttrType::kInts, validate_pooled_shape)
    .attr("spatial_scale", AttrType::kFloat, 1.0, validate_finite)
    .infer(infer_max_roi_pool)
    .kernel(max_roi_pool_kernel);

}  // namespace
}  // namespace kiln::ops
