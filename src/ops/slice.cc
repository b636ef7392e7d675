// Strided sub-tensors: Slice (starts, ends, axes and steps as inputs; negative steps walk
// backward). Starts and ends are clamped exactly as the ONNX spec describes, so out-of-range
// values select up to the edge rather than failing.
#include <algorithm>

#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

struct SliceAxis {
  int64_t start = 0;
  int64_t step = 1;
  int64_t size = 0;  // -1 when the input dimension is unknown
};

// Effective start and output size of one axis of length `dim` (known).
SliceAxis clamp_axis(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim == 0) return {0, step, 0};
  // A step longer than the axis takes at most one element; capping it keeps the arithmetic
  // below (and the strides the kernel derives) far from overflow.
  step = std::clamp(step, -dim, dim);
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, step, end > start ? (end - start - 1) / step + 1 : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return {start, step, start > end ? (start - end - 1) / -step + 1 : 0};
}

// The per-axis plan for every axis of `in`, from the (int32 or int64) inputs 1..4.
std::vector<SliceAxis> slice_plan(const Shape& in, const std::vector<const Tensor*>& args,
                                  const std::vector<std::string>& labels) {
  const int rank = in.ndim();
  const auto starts = read_int_values(*args[0], labels[0]);
  const auto ends = read_int_values(*args[1], labels[1]);
  const size_t n = starts.size();
  KILN_CHECK(ends.size() == n, ErrorCode::kShapeMismatch, labels[1], ": expected ", n, " values (as many as ",
             labels[0], "), got ", ends.size());
  std::vector<int64_t> raw_axes(n);
  for (size_t i = 0; i < n; ++i) raw_axes[i] = static_cast<int64_t>(i);
  if (args[2]) {
    raw_axes = read_int_values(*args[2], labels[2]);
    KILN_CHECK(raw_axes.size() == n, ErrorCode::kShapeMismatch, labels[2], ": expected ", n,
               " values (as many as ", labels[0], "), got ", raw_axes.size());
  } else {
    KILN_CHECK(static_cast<int>(n) <= rank, ErrorCode::kShapeMismatch, labels[0], ": ", n,
               " values for a tensor of rank ", rank, " (shape ", in, ")");
  }
  std::vector<int64_t> steps(n, 1);
  if (args[3]) {
    steps = read_int_values(*args[3], labels[3]);
    KILN_CHECK(steps.size() == n, ErrorCode::kShapeMismatch, labels[3], ": expected ", n,
               " values (as many as ", labels[0], "), got ", steps.size());
  }
  const auto axes = normalize_axes(raw_axes, rank, labels[2]);
  std::vector<SliceAxis> plan(static_cast<size_t>(rank));
  for (int a = 0; a < rank; ++a) plan[static_cast<size_t>(a)] = {0, 1, in[a]};
  for (size_t i = 0; i < n; ++i) {
    KILN_CHECK(steps[i] != 0, ErrorCode::kInvalidArgument, labels[3], ": steps must not be 0 (axis ", axes[i],
               ")");
    const int64_t dim = in[axes[i]];
    plan[static_cast<size_t>(axes[i])] =
        dim < 0 ? SliceAxis{0, steps[i], Shape::kUnknown} : clamp_axis(starts[i], ends[i], steps[i], dim);
  }
  return plan;
}

std::vector<std::string> slice_labels(const InferContext& ctx) {
  return {ctx.input_label(1), ctx.input_label(2), ctx.input_label(3), ctx.input_label(4)};
}

std::vector<TensorInfo> infer_slice(InferContext& ctx) {
  for (int i = 1; i < 5; ++i) {
    if (!ctx.has_input(i)) continue;
    require_dtype(ctx, i, kIndexDTypes);
    require_rank(ctx, i, 1, 1);
  }
  std::vector<const Tensor*> args;
  for (int i = 1; i < 5; ++i) args.push_back(ctx.has_input(i) ? &ctx.value(i) : nullptr);
  Shape out;
  for (const SliceAxis& a : slice_plan(ctx.shape(0), args, slice_labels(ctx))) out.push_back(a.size);
  return {TensorInfo{ctx.dtype(0), out}};
}

void slice_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  std::vector<const Tensor*> args;
  for (int i = 1; i < 5; ++i) args.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  const auto plan = slice_plan(in.shape(), args, {"starts", "ends", "axes", "steps"});
  const auto in_strides = contiguous_strides(in.shape());
  std::vector<int64_t> src_strides;
  int64_t offset = 0;
  for (size_t a = 0; a < plan.size(); ++a) {
    src_strides.push_back(in_strides[a] * plan[a].step);
    offset += plan[a].start * in_strides[a];
  }
  copy_view_to(out, in, src_strides, offset);
}

// SliceGrad: zeros of `like`'s shape with dY written where Slice read its output from.
void slice_grad_kernel(KernelContext& ctx) {
  const Tensor& dy = ctx.input(0);
  Tensor& dx = ctx.output(0);
  dx.copy_from(Tensor::zeros(dx.shape(), dx.dtype()));
  if (dy.numel() == 0) return;
  std::vector<const Tensor*> args;
  for (int i = 2; i < 6; ++i) args.push_back(ctx.has_input(i) ? &ctx.input(i) : nullptr);
  const auto plan = slice_plan(dx.shape(), args, {"starts", "ends", "axes", "steps"});
  const auto strides = contiguous_strides(dx.shape());
  std::vector<int64_t> view_strides;
  int64_t offset = 0;
  for (size_t a = 0; a < plan.size(); ++a) {
    view_strides.push_back(strides[a] * plan[a].step);
    offset += plan[a].start * strides[a];
  }
  dx.as_strided(dy.shape(), view_strides, offset).copy_from(dy);
}

void slice_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("SliceGrad", {ctx.output_grad(0), ctx.input(0), ctx.input(1), ctx.input(2),
                                              ctx.input(3), ctx.input(4)}));
}

KILN_REGISTER_OP(Slice)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "data[starts:ends:steps] along `axes` (all leading axes when absent). Negative starts and "
        "ends count from the back; both are clamped to the axis, so out-of-range values are allowed.")
    .input("data")
    .shape_input("starts")
    .shape_input("ends")
    .shape_input("axes", Arity::kOptional)
    .shape_input("steps", Arity::kOptional)
    .output("output")
    .infer(infer_slice)
    .kernel(slice_kernel)
    .gradient(slice_gradient);

KILN_REGISTER_OP(SliceGrad)
    .doc(
        "Kiln: the gradient of Slice. Zeros of the shape of `like` (Slice's data) with dY written into "
        "the elements Slice(like, starts, ends, axes, steps) reads.")
    .input("dY")
    .input("like")
    .input("starts")
    .input("ends")
    .input("axes", Arity::kOptional)
    .input("steps", Arity::kOptional)
    .output("dX")
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{{ctx.dtype(0), ctx.shape(1)}};
    })
    .kernel(slice_grad_kernel);

}  // namespace
}  // namespace kiln::ops
