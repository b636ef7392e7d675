// Converters for the MXNet ops of detection and segmentation nets of the model-zoo era:
// UpSampling (nearest: Resize; bilinear: the grouped Deconvolution MXNet itself runs), Crop
// (FCN's crop to a size or to another blob's size, at an offset or centred) and ROIPooling (Fast
// R-CNN: MaxRoiPool).
#include <optional>

#include "frontends/mxnet/convert.h"
#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

using graph::Value;

// UpSampling with sample_type 'nearest' repeats each pixel `scale` times along H and W. Several
// inputs are each scaled to the first one's output size and then concatenated along the channels
// (or summed, multi_input_mode 'sum').
void upsampling_nearest(ConvertContext& ctx, int64_t scale) {
  const std::string mode = ctx.attrs().get_string("multi_input_mode", "concat");
  if (mode != "concat" && mode != "sum") ctx.unsupported("multi_input_mode " + mode);
  const int n = ctx.num_inputs();
  int64_t out_h = 0, out_w = 0;
  if (n > 1) {
    const Shape first = ctx.input_shape(0, "UpSampling of several inputs");
    out_h = first[2] * scale;
    out_w = first[3] * scale;
  }
  std::vector<Value*> scaled;
  for (int i = 0; i < n; ++i) {
    auto scale_h = static_cast<double>(scale), scale_w = static_cast<double>(scale);
    if (n > 1) {
      const Shape s = ctx.input_shape(i, "UpSampling of several inputs");
      if (s.ndim() != 4 || s[2] <= 0 || s[3] <= 0 || out_h % s[2] != 0 || out_w % s[3] != 0)
        ctx.unsupported("input " + std::to_string(i) + " of shape " + s.to_string() +
                        " does not divide the output size " + std::to_string(out_h) + "x" +
                        std::to_string(out_w));
      scale_h = static_cast<double>(out_h / s[2]);
      scale_w = static_cast<double>(out_w / s[3]);
    }
    const Tensor scales = Tensor::from_vector(
        std::vector<float>{1.0F, 1.0F, static_cast<float>(scale_h), static_cast<float>(scale_w)}, Shape{4});
    const std::string suffix = n > 1 ? "up" + std::to_string(i) : "";
    // asymmetric + floor reads source pixel floor(i / scale), exactly MXNet's nearest copy.
    scaled.push_back(ctx.add("Resize", {ctx.input(i), nullptr, ctx.constant(scales, suffix + "scales")},
                             {{"mode", std::string("nearest")},
                              {"coordinate_transformation_mode", std::string("asymmetric")},
                              {"nearest_mode", std::string("floor")}},
                             n > 1 ? suffix : ""));
  }
  if (n == 1) return ctx.set_output(scaled[0]);
  if (mode == "sum") return ctx.set_output(ctx.add("Sum", scaled));
  ctx.set_output(ctx.add("Concat", scaled, {{"axis", int64_t{1}}}));
}

// UpSampling with sample_type 'bilinear' is, in MXNet, a Deconvolution of each channel with the
// learned (usually bilinear-initialised) `weight` input: kernel 2s - s % 2, stride s, padding
// ceil((s - 1) / 2), one group per channel, no bias.
void upsampling_bilinear(ConvertContext& ctx, int64_t scale) {
  const int64_t channels = ctx.attrs().require_int("num_filter");
  if (ctx.num_inputs() != 2) ctx.unsupported("bilinear UpSampling expects inputs (data, weight)");
  const int64_t kernel = 2 * scale - scale % 2;
  const int64_t pad = scale / 2;  // ceil((scale - 1) / 2)
  ctx.set_output(ctx.add("ConvTranspose", {ctx.input(0), ctx.input(1)},
                         {{"kernel_shape", std::vector<int64_t>{kernel, kernel}},
                          {"strides", std::vector<int64_t>{scale, scale}},
                          {"pads", std::vector<int64_t>{pad, pad, pad, pad}},
                          {"group", channels}}));
}

void upsampling(ConvertContext& ctx) {
  const int64_t scale = ctx.attrs().require_int("scale");
  if (scale < 1) ctx.unsupported("scale " + std::to_string(scale) + " (expected >= 1)");
  const std::string type = ctx.attrs().get_string("sample_type", "nearest");
  if (type == "nearest") return upsampling_nearest(ctx, scale);
  if (type == "bilinear") return upsampling_bilinear(ctx, scale);
  ctx.unsupported("sample_type " + type);
}

// The height and width (axes 2 and 3) of `v`: known numbers when its shape is known at import,
// else computed in the graph from its shape.
std::optional<std::vector<int64_t>> known_size(const Value* v) {
  if (!v->info || v->info->shape.ndim() != 4 || v->info->shape[2] < 0 || v->info->shape[3] < 0)
    return std::nullopt;
  return std::vector<int64_t>{v->info->shape[2], v->info->shape[3]};
}

// Crop cuts an (h, w) window out of axes 2 and 3: the size is h_w, or the second input's H and W
// (crop_like); the window starts at `offset`, or is centred (floor of half the difference). With
// shapes known at import the window is checked and sliced with constants; a symbol loaded without
// shapes computes it in the graph.
void crop(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  Value* x = ctx.input(0);
  if (x->info && x->info->shape.ndim() != 4)
    ctx.unsupported("input of shape " + x->info->shape.to_string() + " (Crop expects (N, C, H, W))");
  std::optional<std::vector<int64_t>> size;
  if (ctx.num_inputs() == 2) {
    size = known_size(ctx.input(1));
  } else if (ctx.num_inputs() == 1) {
    size = a.get_ints("h_w");
    if (size->size() != 2 || (*size)[0] <= 0 || (*size)[1] <= 0)
      ctx.unsupported("Crop of one input needs h_w = (height, width) > 0");
  } else {
    ctx.unsupported("Crop with " + std::to_string(ctx.num_inputs()) + " inputs (expected 1 or 2)");
  }
  const bool centred = a.get_bool("center_crop", false);
  std::vector<int64_t> offset = a.get_ints("offset");
  if (offset.empty()) offset = {0, 0};
  if (offset.size() != 2 || offset[0] < 0 || offset[1] < 0) ctx.unsupported("offset must be two values >= 0");
  const std::optional<std::vector<int64_t>> full = known_size(x);
  if (size && full) {
    for (size_t d = 0; d < 2; ++d) {
      if (centred) offset[d] = ((*full)[d] - (*size)[d]) / 2;
      if (offset[d] < 0 || offset[d] + (*size)[d] > (*full)[d])
        ctx.unsupported("a " + std::to_string((*size)[0]) + "x" + std::to_string((*size)[1]) +
                        " window at (" + std::to_string(offset[0]) + ", " + std::to_string(offset[1]) +
                        ") runs past the " + std::to_string((*full)[0]) + "x" + std::to_string((*full)[1]) +
                        " input");
    }
    const std::vector<int64_t> end{offset[0] + (*size)[0], offset[1] + (*size)[1]};
    return ctx.set_output(
        ctx.add("Slice", {x, ctx.ints(offset, "starts"), ctx.ints(end, "ends"), ctx.ints({2, 3}, "axes")}));
  }
  auto spatial = [&](Value* v, const std::string& suffix) {
    return ctx.add("Shape", {v}, {{"start", int64_t{2}}, {"end", int64_t{4}}}, suffix);
  };
  Value* window = size ? ctx.ints(*size, "size") : spatial(ctx.input(1), "like_size");
  Value* start = ctx.ints(offset, "offset");
  if (centred) {
    Value* spare = ctx.add("Sub", {spatial(x, "input_size"), window}, {}, "spare");
    start = ctx.add("Div", {spare, ctx.ints({2}, "two")}, {}, "centred_offset");
  }
  Value* end = ctx.add("Add", {start, window}, {}, "end");
  Value* cut = ctx.add("Slice", {x, start, end, ctx.ints({2, 3}, "axes")}, {}, "window");
  // Slice clips a window that runs past the image, where MXNet refuses it: reshaping to the window's
  // full size fails then (a kiln::Error naming this node) and is a no-op otherwise.
  Value* batch_channels = ctx.add("Shape", {x}, {{"end", int64_t{2}}}, "batch_channels");
  Value* shape = ctx.add("Concat", {batch_channels, window}, {{"axis", int64_t{0}}}, "window_shape");
  ctx.set_output(ctx.add("Reshape", {cut, shape}));
}

// ROIPooling(data, rois) with rois rows (batch_index, x1, y1, x2, y2) is ONNX's MaxRoiPool.
void roi_pooling(ConvertContext& ctx) {
  const MxnetAttrs& a = ctx.attrs();
  ctx.set_output(ctx.add("MaxRoiPool", {ctx.input(0), ctx.input(1)},
                         {{"pooled_shape", a.require_ints("pooled_size")},
                          {"spatial_scale", a.get_float("spatial_scale", 1.0)}}));
}

}  // namespace

void add_vision_converters(ConverterTable& t) {
  t["UpSampling"] = upsampling;
  t["Crop"] = crop;
  t["ROIPooling"] = roi_pooling;
}

}  // namespace kiln::mxnet
