// Repetition: Expand (bidirectional numpy broadcast to a shape) and Tile (whole-tensor repeats per
// axis). Both are one strided copy whose source strides are 0 along the repeated axes.
#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

// Reads a 1-D int shape-like input and rejects negative entries.
std::vector<int64_t> read_nonnegative(const InferContext& ctx, int i) {
  require_dtype(ctx, i, kIndexDTypes);
  require_rank(ctx, i, 1, 1);
  const auto values = read_int_values(ctx.value(i), ctx.input_label(i));
  for (int64_t v : values)
    KILN_CHECK(v >= 0, ErrorCode::kInvalidArgument, ctx.input_label(i), ": expected values >= 0, got ", v);
  return values;
}

std::vector<TensorInfo> infer_expand(InferContext& ctx) {
  const Shape target(read_nonnegative(ctx, 1));
  return {TensorInfo{ctx.dtype(0), broadcast_shapes(ctx.shape(0), target, ctx.input_label(1))}};
}

void expand_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  const auto in_strides = contiguous_strides(in.shape());
  const int lead = out.ndim() - in.ndim();
  std::vector<int64_t> src_strides(static_cast<size_t>(out.ndim()), 0);
  for (int a = lead; a < out.ndim(); ++a)
    if (in.shape()[a - lead] != 1)
      src_strides[static_cast<size_t>(a)] = in_strides[static_cast<size_t>(a - lead)];
  copy_view_to(out, in, src_strides);
}

// Expand's gradient sums over the broadcast axes.
void expand_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("ReduceSumLike", {ctx.output_grad(0), ctx.input(0)}));
}

// Tile's output, reshaped to (r0, d0, r1, d1, ...), holds r0 * r1 * ... copies of the input;
// the gradient sums them (the r axes).
void tile_gradient(GradientContext& ctx) {
  const int rank = ctx.input_info(0).shape.ndim();
  const GradValue repeats =
      ctx.op1("Cast", {ctx.input(1)}, {{"to", static_cast<int64_t>(dtype_to_onnx(DType::kInt64))}});
  std::vector<GradValue> dims;
  std::vector<int64_t> repeat_axes;
  for (int a = 0; a < rank; ++a) {
    dims.push_back(ctx.op1("Slice", {repeats, ctx.ints({a}), ctx.ints({a + 1})}));
    dims.push_back(ctx.op1("Shape", {ctx.input(0)}, {{"start", a}, {"end", a + 1}}));
    repeat_axes.push_back(2 * a);
  }
  if (rank == 0) {
    ctx.set_input_grad(0, ctx.output_grad(0));
    return;
  }
  const GradValue split = ctx.op1("Reshape", {ctx.output_grad(0), ctx.op1("Concat", dims, {{"axis", 0}})});
  ctx.set_input_grad(0, ctx.op1("ReduceSum", {split, ctx.ints(repeat_axes)}, {{"keepdims", 0}}));
}

KILN_REGISTER_OP(Expand)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "Broadcasts the input against `shape` (numpy rules in both directions: a 1 in `shape` keeps "
        "the input's dimension).")
    .input("input")
    .shape_input("shape")
    .output("output")
    .infer(infer_expand)
    .kernel(expand_kernel)
    .gradient(expand_gradient);

std::vector<TensorInfo> infer_tile(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const auto repeats = read_nonnegative(ctx, 1);
  KILN_CHECK(static_cast<int>(repeats.size()) == in.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(1),
             ": expected ", in.ndim(), " values (the rank of ", ctx.input_label(0), ", shape ", in, "), got ",
             repeats.size());
  Shape out;
  for (int a = 0; a < in.ndim(); ++a)
    out.push_back(in[a] < 0 ? Shape::kUnknown : in[a] * repeats[static_cast<size_t>(a)]);
  return {TensorInfo{ctx.dtype(0), out}};
}

void tile_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  // The output seen as (r0, d0, r1, d1, ...): contiguous, with the input repeated along each r.
  const auto in_strides = contiguous_strides(in.shape());
  std::vector<int64_t> dims, src_strides;
  for (int a = 0; a < in.ndim(); ++a) {
    dims.push_back(out.shape()[a] / in.shape()[a]);
    dims.push_back(in.shape()[a]);
    src_strides.push_back(0);
    src_strides.push_back(in_strides[static_cast<size_t>(a)]);
  }
  copy_strided(static_cast<char*>(out.raw_data()), contiguous_strides(Shape(dims)),
               static_cast<const char*>(in.raw_data()), src_strides, dims, in.itemsize());
}

KILN_REGISTER_OP(Tile)
    .moves_strings()
    .takes_storage_types()
    .doc("Repeats the whole input repeats[i] times along axis i.")
    .input("input")
    .shape_input("repeats")
    .output("output")
    .infer(infer_tile)
    .kernel(tile_kernel)
    .gradient(tile_gradient);

}  // namespace
}  // namespace kiln::ops
