// Ops that pick parts of a tensor by its values (ONNX opset 28, NonMaxSuppression opset 11):
// NonZero (the indices of the nonzero elements, as numpy.nonzero), Compress (slices where a bool
// condition holds), ReverseSequence (reverses the first sequence_lens[b] steps of each batch
// entry), Unique (distinct elements or slices, as
// numpy.unique) and NonMaxSuppression (greedy box selection by score and overlap).
//
// NonZero, Compress, Unique and NonMaxSuppression have output shapes that depend on input values,
// so those inputs are shape inputs: inference computes the exact shape when their values are known
// and reports kUnsupported (values known only at run time) when they are not. They are marked
// data_dependent_shape: the runtime runs such a node, learns its sizes and plans the rest for them.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <optional>
#include <type_traits>
#include <vector>

#include "elementwise.h"
#include "infer_util.h"
#include "reduce_util.h"

namespace kiln::ops {
namespace {

inline constexpr DType kBoolDType[] = {DType::kBool};
inline constexpr DType kInt64DType[] = {DType::kInt64};
inline constexpr DType kFloat32DType[] = {DType::kFloat32};

// out[o, j, :] = in[o, picked[j], :], both viewed as (outer, axis, inner) around the same axis.
// Whole rows of bytes are copied, so every dtype Kiln holds goes through.
void gather_slices(const Tensor& in, Tensor& out, const AxisSplit& s, const std::vector<int64_t>& picked) {
  const auto count = static_cast<int64_t>(picked.size());
  if (out.numel() == 0) return;
  const auto row_bytes = s.inner * static_cast<int64_t>(in.itemsize());
  const auto* src = static_cast<const char*>(in.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  parallel_for(0, s.outer * count, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(s.inner, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t row = b; row < e; ++row) {
                   const int64_t o = row / count, j = row % count;
                   std::memcpy(dst + row * row_bytes,
                               src + (o * s.axis + picked[static_cast<size_t>(j)]) * row_bytes,
                               static_cast<size_t>(row_bytes));
                 }
               });
}

// ---- Compress ----

// The indices where the condition is true. numpy.compress allows a condition shorter than the
// axis (the rest is dropped) or longer with only false entries past the end.
std::vector<int64_t> true_indices(const Tensor& condition, int64_t limit, const std::string& label) {
  std::vector<int64_t> picked;
  const Tensor c = condition.contiguous();
  const bool* values = c.data<bool>();
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (!values[i]) continue;
    KILN_CHECK(limit < 0 || i < limit, ErrorCode::kOutOfRange, label, ": true at index ", i,
               ", past the end of the ", limit, " entries selected from");
    picked.push_back(i);
  }
  return picked;
}

std::optional<int> compress_axis(const Attrs& attrs, int rank) {
  if (!attrs.has("axis")) return std::nullopt;
  return normalize_axis(attrs.get_int("axis"), rank, "attribute 'axis'");
}

std::vector<TensorInfo> infer_compress(InferContext& ctx) {
  require_dtype(ctx, 1, kBoolDType);
  require_rank(ctx, 1, 1, 1);
  const Shape& in = ctx.shape(0);
  const std::optional<int> axis = compress_axis(ctx.attrs(), in.ndim());
  const int64_t limit = axis ? in[*axis] : in.numel();
  const auto count = static_cast<int64_t>(true_indices(ctx.value(1), limit, ctx.input_label(1)).size());
  Shape out = axis ? in : Shape{count};
  if (axis) out[*axis] = count;
  return {TensorInfo{ctx.dtype(0), out}};
}

void compress_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const std::optional<int> axis = compress_axis(ctx.attrs, in.ndim());
  const AxisSplit s = axis ? split_at_axis(in.shape(), *axis) : AxisSplit{1, in.numel(), 1};
  gather_slices(in, ctx.output(0), s, true_indices(ctx.input(1), s.axis, "input 1 (condition)"));
}

// ---- ReverseSequence ----

void require_batch_or_time_axis(const AttrValue& value, const std::string& what) {
  const int64_t v = std::get<int64_t>(value.variant());
  KILN_CHECK(v == 0 || v == 1, ErrorCode::kInvalidArgument, what, ": expected 0 or 1, got ", v);
}

void check_sequence_lens(const std::vector<int64_t>& lens, int64_t steps, const std::string& label) {
  for (size_t b = 0; b < lens.size(); ++b)
    KILN_CHECK(lens[b] >= 0 && (steps < 0 || lens[b] <= steps), ErrorCode::kOutOfRange, label,
               ": expected lengths in [0, ", steps, "] (the size of the time axis), got ", lens[b],
               " at index ", b);
}

std::vector<TensorInfo> infer_reverse_sequence(InferContext& ctx) {
  KILN_CHECK(ctx.shape(0).ndim() >= 2, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected rank >= 2 (batch and time axes), got shape ", ctx.shape(0));
  require_dtype(ctx, 1, kInt64DType);
  require_rank(ctx, 1, 1, 1);
  const int64_t batch_axis = ctx.attrs().get_int("batch_axis");
  const int64_t time_axis = ctx.attrs().get_int("time_axis");
  KILN_CHECK(batch_axis != time_axis, ErrorCode::kInvalidArgument,
             "attributes 'batch_axis' and 'time_axis' must differ, both are ", batch_axis);
  const Shape& in = ctx.shape(0);
  const int64_t batch = in[static_cast<int>(batch_axis)];
  const int64_t lens = ctx.shape(1)[0];
  KILN_CHECK(batch < 0 || lens < 0 || lens == batch, ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected one length per batch entry (", batch, ", axis ", batch_axis, " of ",
             ctx.input_label(0), " ", in, "), got shape ", ctx.shape(1));
  if (ctx.has_value(1))
    check_sequence_lens(ctx.value(1).to_vector<int64_t>(), in[static_cast<int>(time_axis)],
                        ctx.input_label(1));
  return {ctx.input(0)};
}

void reverse_sequence_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool batch_first = ctx.attrs.get_int("batch_axis") == 0;
  const int64_t d0 = x.shape()[0], d1 = x.shape()[1];
  const int64_t batch = batch_first ? d0 : d1, steps = batch_first ? d1 : d0;
  const int64_t inner = d0 * d1 == 0 ? 0 : x.numel() / (d0 * d1);
  const std::vector<int64_t> lens = ctx.input(1).to_vector<int64_t>();
  check_sequence_lens(lens, steps, "input 1 (sequence_lens)");
  if (x.numel() == 0) return;
  const auto row_bytes = inner * static_cast<int64_t>(x.itemsize());
  const auto* src = static_cast<const char*>(x.raw_data());
  auto* dst = static_cast<char*>(ctx.output(0).raw_data());
  // Row r is (i0, i1) over the first two axes; it reads the time step mirrored within the batch
  // entry's length, or its own step past that length. Whole rows of bytes are copied, so every
  // dtype Kiln holds goes through.
  parallel_for(0, d0 * d1, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(inner, 1)),
               [&](int64_t first, int64_t last) {
                 for (int64_t r = first; r < last; ++r) {
                   const int64_t b = batch_first ? r / d1 : r % d1;
                   const int64_t t = batch_first ? r % d1 : r / d1;
                   const int64_t len = lens[static_cast<size_t>(b)];
                   const int64_t from = t < len ? len - 1 - t : t;
                   const int64_t source_row = batch_first ? b * steps + from : from * batch + b;
                   std::memcpy(dst + r * row_bytes, src + source_row * row_bytes,
                               static_cast<size_t>(row_bytes));
                 }
               });
}

// ---- Unique ----

// Order for sorting: NaN after every number and equal to NaN, as numpy.unique sorts and groups.
template <class C>
int compare_values(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    const bool nan_a = std::isnan(a), nan_b = std::isnan(b);
    if (nan_a || nan_b) return nan_a == nan_b ? 0 : (nan_a ? 1 : -1);
  }
  return a < b ? -1 : (b < a ? 1 : 0);
}

struct UniqueSlices {
  std::vector<int64_t> first;    // per output slice: the index of its first occurrence
  std::vector<int64_t> inverse;  // per input slice: the output slice equal to it
  std::vector<int64_t> counts;   // per output slice: how many input slices equal it
};

// The distinct slices of x along `axis` (elements of the flattened x without one), in ascending
// lexicographic order or, unless `sorted`, in order of first occurrence.
UniqueSlices find_unique(const Tensor& x, std::optional<int> axis, bool sorted) {
  const AxisSplit s = axis ? split_at_axis(x.shape(), *axis) : AxisSplit{1, x.numel(), 1};
  const int64_t n = s.axis, len = s.outer * s.inner;
  // Each slice made contiguous (row j of `rows` is slice j), so comparisons read memory in order.
  Tensor rows = x.contiguous();
  if (s.outer > 1) rows = rows.reshape({s.outer, s.axis, s.inner}).transpose({1, 0, 2}).contiguous();
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::vector<int64_t> group_start;  // positions in `order` where a run of equal slices starts
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = rows.data<T>();
    auto compare = [&](int64_t a, int64_t b) {
      for (int64_t i = 0; i < len; ++i) {
        const int c = compare_values(static_cast<compute_t<T>>(data[a * len + i]),
                                     static_cast<compute_t<T>>(data[b * len + i]));
        if (c) return c;
      }
      return 0;
    };
    // Stable, so each run of equal slices starts with its first occurrence.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return compare(a, b) < 0; });
    for (int64_t i = 0; i < n; ++i)
      if (i == 0 || compare(order[static_cast<size_t>(i - 1)], order[static_cast<size_t>(i)]) != 0)
        group_start.push_back(i);
  });
  const size_t groups = group_start.size();
  group_start.push_back(n);
  std::vector<size_t> output_order(groups);
  std::iota(output_order.begin(), output_order.end(), size_t{0});
  if (!sorted) {
    std::sort(output_order.begin(), output_order.end(), [&](size_t a, size_t b) {
      return order[static_cast<size_t>(group_start[a])] < order[static_cast<size_t>(group_start[b])];
    });
  }
  UniqueSlices u;
  u.inverse.resize(static_cast<size_t>(n));
  for (size_t out = 0; out < groups; ++out) {
    const size_t g = output_order[out];
    u.first.push_back(order[static_cast<size_t>(group_start[g])]);
    u.counts.push_back(group_start[g + 1] - group_start[g]);
    for (int64_t i = group_start[g]; i < group_start[g + 1]; ++i)
      u.inverse[static_cast<size_t>(order[static_cast<size_t>(i)])] = static_cast<int64_t>(out);
  }
  return u;
}

std::optional<int> unique_axis(const Attrs& attrs, int rank) {
  if (!attrs.has("axis")) return std::nullopt;
  return normalize_axis(attrs.get_int("axis"), rank, "attribute 'axis'");
}

std::vector<TensorInfo> infer_unique(InferContext& ctx) {
  const int outputs = ctx.num_outputs_requested() < 0 ? 4 : ctx.num_outputs_requested();
  KILN_CHECK(outputs >= 1 && outputs <= 4, ErrorCode::kInvalidArgument, "expected 1 to 4 outputs, got ",
             outputs);
  require_dtype(ctx, 0, kComputeDTypes);
  const Shape& in = ctx.shape(0);
  const std::optional<int> axis = unique_axis(ctx.attrs(), in.ndim());
  const UniqueSlices u = find_unique(ctx.value(0), axis, ctx.attrs().get_int("sorted") == 1);
  const auto count = static_cast<int64_t>(u.first.size());
  Shape y = axis ? in : Shape{count};
  if (axis) y[*axis] = count;
  std::vector<TensorInfo> out = {TensorInfo{ctx.dtype(0), y}, TensorInfo{DType::kInt64, Shape{count}},
                                 TensorInfo{DType::kInt64, Shape{static_cast<int64_t>(u.inverse.size())}},
                                 TensorInfo{DType::kInt64, Shape{count}}};
  out.resize(static_cast<size_t>(outputs));
  return out;
}

void write_int64s(Tensor& out, const std::vector<int64_t>& values) {
  std::copy(values.begin(), values.end(), out.data<int64_t>());
}

void unique_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::optional<int> axis = unique_axis(ctx.attrs, x.ndim());
  const UniqueSlices u = find_unique(x, axis, ctx.attrs.get_int("sorted") == 1);
  const AxisSplit s = axis ? split_at_axis(x.shape(), *axis) : AxisSplit{1, x.numel(), 1};
  gather_slices(x, ctx.output(0), s, u.first);
  if (ctx.num_outputs() > 1) write_int64s(ctx.output(1), u.first);
  if (ctx.num_outputs() > 2) write_int64s(ctx.output(2), u.inverse);
  if (ctx.num_outputs() > 3) write_int64s(ctx.output(3), u.counts);
}

// ---- NonZero ----

// The flat indices of X's nonzero elements, in row-major order.
std::vector<int64_t> nonzero_positions(const Tensor& x) {
  std::vector<int64_t> positions;
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* data = x.data<T>();
    for (int64_t i = 0; i < x.numel(); ++i)
      if (static_cast<double>(data[i]) != 0.0) positions.push_back(i);
  });
  return positions;
}

std::vector<TensorInfo> infer_nonzero(InferContext& ctx) {
  const int64_t rank = ctx.shape(0).ndim();
  if (!ctx.has_value(0) && ctx.shape(0).is_known() && ctx.shape(0).numel() == 0)
    return {{DType::kInt64, Shape{rank, 0}}};
  const auto count = static_cast<int64_t>(nonzero_positions(ctx.value(0).contiguous()).size());
  return {{DType::kInt64, Shape{rank, count}}};
}

// out[d, j]: coordinate d of the j-th nonzero element (a scalar counts as a 1-element 1-D tensor
// for finding it, and has no coordinates).
void nonzero_kernel(KernelContext& ctx) {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> positions = nonzero_positions(x);
  const int rank = x.shape().ndim();
  const auto count = static_cast<int64_t>(positions.size());
  int64_t* out = ctx.output(0).data<int64_t>();
  for (int64_t j = 0; j < count; ++j) {
    int64_t rest = positions[static_cast<size_t>(j)];
    for (int d = rank - 1; d >= 0; --d) {
      out[d * count + j] = rest % x.shape()[d];
      rest /= x.shape()[d];
    }
  }
}

// ---- NonMaxSuppression ----

struct NmsSettings {
  int64_t max_per_class = 0;  // no boxes unless the input says otherwise
  float iou_threshold = 0;
  std::optional<float> score_threshold;  // without it every box is a candidate
  bool center_point_box = false;
};

// An optional scalar input; a missing or empty tensor means the default.
std::optional<double> optional_scalar(const Tensor* t) {
  if (t == nullptr || !t->defined() || t->numel() == 0) return std::nullopt;
  return t->item();
}

// `input(i)` is optional input i (2: max_output_boxes_per_class, 3: iou_threshold,
// 4: score_threshold), or null when it is missing; they are read in that order.
template <class Input>
NmsSettings nms_settings(const Attrs& attrs, Input&& input, const std::string& iou_label) {
  NmsSettings s;
  s.center_point_box = attrs.get_int("center_point_box") == 1;
  const Tensor* max_boxes = input(2);
  if (max_boxes && max_boxes->defined() && max_boxes->numel() > 0)
    s.max_per_class = std::max<int64_t>(0, max_boxes->contiguous().data<int64_t>()[0]);
  if (auto v = optional_scalar(input(3))) s.iou_threshold = static_cast<float>(*v);
  KILN_CHECK(s.iou_threshold >= 0 && s.iou_threshold <= 1, ErrorCode::kInvalidArgument, iou_label,
             ": expected a threshold in [0, 1], got ", s.iou_threshold);
  if (auto v = optional_scalar(input(4))) s.score_threshold = static_cast<float>(*v);
  return s;
}

// Whether two boxes overlap by more than the threshold, computed in float exactly as the ONNX
// reference does (boxes as two corners in any order, or as center and size).
bool suppresses(const float* a, const float* b, bool center_point_box, float iou_threshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (center_point_box) {
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  } else {
    ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]), ax0 = std::min(a[1], a[3]),
    ax1 = std::max(a[1], a[3]);
    by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]), bx0 = std::min(b[1], b[3]),
    bx1 = std::max(b[1], b[3]);
  }
  const float ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  if (ix1 <= ix0) return false;
  const float iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (iy1 <= iy0) return false;
  const float intersection = (ix1 - ix0) * (iy1 - iy0);
  const float area_a = (ax1 - ax0) * (ay1 - ay0), area_b = (bx1 - bx0) * (by1 - by0);
  const float union_area = area_a + area_b - intersection;
  if (intersection <= 0 || area_a <= 0 || area_b <= 0 || union_area <= 0) return false;
  return intersection / union_area > iou_threshold;
}

// Selected (batch, class, box) triples, batch-major, then class, then in selection order.
std::vector<std::array<int64_t, 3>> select_boxes(const Tensor& boxes_t, const Tensor& scores_t,
                                                 const NmsSettings& s) {
  const Tensor boxes_c = boxes_t.contiguous(), scores_c = scores_t.contiguous();
  const float* boxes = boxes_c.data<float>();
  const float* scores = scores_c.data<float>();
  const int64_t batches = scores_c.shape()[0], classes = scores_c.shape()[1], n = scores_c.shape()[2];
  std::vector<std::vector<int64_t>> kept(static_cast<size_t>(batches * classes));
  const int64_t grain = std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(n * 8, 1));
  parallel_for(0, batches * classes, grain, [&](int64_t first, int64_t last) {
    std::vector<int64_t> candidates;
    for (int64_t bc = first; bc < last; ++bc) {
      const float* score = scores + bc * n;
      const float* batch_boxes = boxes + (bc / classes) * n * 4;
      candidates.clear();
      for (int64_t i = 0; i < n; ++i)
        if (!s.score_threshold || score[i] > *s.score_threshold) candidates.push_back(i);
      // Highest score first; equal scores keep the lower box index first.
      std::stable_sort(candidates.begin(), candidates.end(),
                       [&](int64_t a, int64_t b) { return score[a] > score[b]; });
      auto& chosen = kept[static_cast<size_t>(bc)];
      for (int64_t c : candidates) {
        if (static_cast<int64_t>(chosen.size()) >= s.max_per_class) break;
        const bool overlaps = std::any_of(chosen.begin(), chosen.end(), [&](int64_t k) {
          return suppresses(batch_boxes + c * 4, batch_boxes + k * 4, s.center_point_box, s.iou_threshold);
        });
        if (!overlaps) chosen.push_back(c);
      }
    }
  });
  std::vector<std::array<int64_t, 3>> selected;
  for (int64_t bc = 0; bc < batches * classes; ++bc)
    for (int64_t box : kept[static_cast<size_t>(bc)]) selected.push_back({bc / classes, bc % classes, box});
  return selected;
}

std::vector<TensorInfo> infer_nms(InferContext& ctx) {
  require_dtype(ctx, 0, kFloat32DType);
  require_dtype(ctx, 1, kFloat32DType);
  require_rank(ctx, 0, 3, 3);
  require_rank(ctx, 1, 3, 3);
  const Shape& boxes = ctx.shape(0);
  const Shape& scores = ctx.shape(1);
  KILN_CHECK(boxes[2] < 0 || boxes[2] == 4, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected shape (batches, boxes, 4), got ", boxes);
  auto agree = [](int64_t a, int64_t b) { return a < 0 || b < 0 || a == b; };
  KILN_CHECK(agree(boxes[0], scores[0]) && agree(boxes[1], scores[2]), ErrorCode::kShapeMismatch,
             ctx.input_label(1), ": expected shape (", boxes[0], ", classes, ", boxes[1], ") to match ",
             ctx.input_label(0), " ", boxes, ", got ", scores);
  for (int i = 2; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    if (i == 2) {
      require_dtype(ctx, i, kInt64DType);
    } else {
      require_dtype(ctx, i, kFloat32DType);
    }
    const Shape& s = ctx.shape(i);
    KILN_CHECK(s.ndim() <= 1 && (s.numel() <= 1), ErrorCode::kShapeMismatch, ctx.input_label(i),
               ": expected a scalar (0-D, or 1-D with at most one element), got shape ", s);
  }
  const Tensor& boxes_value = ctx.value(0);
  const Tensor& scores_value = ctx.value(1);
  const NmsSettings settings = nms_settings(
      ctx.attrs(), [&ctx](int i) { return ctx.has_input(i) ? &ctx.value(i) : nullptr; }, ctx.input_label(3));
  const auto count = static_cast<int64_t>(select_boxes(boxes_value, scores_value, settings).size());
  return {TensorInfo{DType::kInt64, Shape{count, 3}}};
}

void nms_kernel(KernelContext& ctx) {
  const NmsSettings settings = nms_settings(
      ctx.attrs, [&ctx](int i) { return ctx.has_input(i) ? &ctx.input(i) : nullptr; },
      "input 3 (iou_threshold)");
  const auto selected = select_boxes(ctx.input(0), ctx.input(1), settings);
  int64_t* out = ctx.output(0).data<int64_t>();
  for (size_t i = 0; i < selected.size(); ++i) std::copy_n(selected[i].data(), 3, out + 3 * i);
}

KILN_REGISTER_OP(NonZero)
    .doc("The indices of X's nonzero elements as an int64 (rank, count) tensor, as numpy.nonzero.")
    .shape_input("X")
    .output("Y")
    .data_dependent_shape()
    .infer(infer_nonzero)
    .kernel(nonzero_kernel);

KILN_REGISTER_OP(Compress)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "The slices along `axis` (elements of the flattened input without it) where the 1-D bool "
        "condition is true, as numpy.compress.")
    .input("input")
    .shape_input("condition")
    .output("output")
    .optional_attr("axis", AttrType::kInt)
    .data_dependent_shape()
    .infer(infer_compress)
    .kernel(compress_kernel);

KILN_REGISTER_OP(ReverseSequence)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "Reverses the first sequence_lens[b] steps along time_axis of each entry b along batch_axis "
        "(axes 0 and 1, either way round); later steps are copied.")
    .input("input")
    .input("sequence_lens")
    .output("Y")
    .attr("batch_axis", AttrType::kInt, 1, require_batch_or_time_axis)
    .attr("time_axis", AttrType::kInt, 0, require_batch_or_time_axis)
    .infer(infer_reverse_sequence)
    .kernel(reverse_sequence_kernel);

KILN_REGISTER_OP(Unique)
    .doc(
        "The distinct elements (or slices along `axis`) of X, sorted or in order of first "
        "occurrence, with the int64 indices of first occurrences, the inverse mapping and the "
        "counts, as numpy.unique.")
    .shape_input("X")
    .output("Y")
    .output("indices", Arity::kOptional)
    .output("inverse_indices", Arity::kOptional)
    .output("counts", Arity::kOptional)
    .optional_attr("axis", AttrType::kInt)
    .attr("sorted", AttrType::kInt, 1, require_flag)
    .data_dependent_shape()
    .infer(infer_unique)
    .kernel(unique_kernel);

KILN_REGISTER_OP(NonMaxSuppression)
    .doc(
        "Greedy per-class selection of boxes by descending score, dropping boxes whose IoU with a "
        "selected one exceeds iou_threshold; returns int64 (batch, class, box) rows.")
    .shape_input("boxes")
    .shape_input("scores")
    .shape_input("max_output_boxes_per_class", Arity::kOptional)
    .shape_input("iou_threshold", Arity::kOptional)
    .shape_input("score_threshold", Arity::kOptional)
    .output("selected_indices")
    .attr("center_point_box", AttrType::kInt, 0, require_flag)
    .data_dependent_shape()
    .infer(infer_nms)
    .kernel(nms_kernel);

}  // namespace
}  // namespace kiln::ops
