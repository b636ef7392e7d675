// Joining and cutting along one axis: Concat and Split. Both move contiguous runs: for every
// index of the axes before `axis`, each input (or output) owns one dense block of the row.
#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

// Elements in the dims [from, ndim) of `shape`.
int64_t trailing_numel(const Shape& shape, int from) {
  int64_t n = 1;
  for (int a = from; a < shape.ndim(); ++a) n *= shape[a];
  return n;
}

std::vector<TensorInfo> infer_concat(InferContext& ctx) {
  const Shape& first = ctx.shape(0);
  const int rank = first.ndim();
  KILN_CHECK(rank >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0), ": expected rank >= 1, got a scalar");
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), rank, "attribute 'axis'");
  Shape out = first;
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.shape(i);
    KILN_CHECK(s.ndim() == rank, ErrorCode::kShapeMismatch, ctx.input_label(i), ": expected rank ", rank,
               " (the rank of ", ctx.input_label(0), ", shape ", first, "), got shape ", s);
    for (int a = 0; a < rank; ++a) {
      if (a == axis) {
        out[a] = (out[a] < 0 || s[a] < 0) ? Shape::kUnknown : out[a] + s[a];
        continue;
      }
      KILN_CHECK(s[a] == first[a] || s[a] < 0 || first[a] < 0, ErrorCode::kShapeMismatch, ctx.input_label(i),
                 ": shape ", s, " differs from ", ctx.input_label(0), " shape ", first, " in dimension ", a,
                 " (", s[a], " vs ", first[a], "); only the concatenation axis ", axis, " may differ");
      if (out[a] < 0) out[a] = s[a];
    }
  }
  return {TensorInfo{ctx.dtype(0), out}};
}

void concat_kernel(KernelContext& ctx) {
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), out.ndim(), "axis");
  const int64_t outer = out.numel() / trailing_numel(out.shape(), axis);
  const int64_t out_row = trailing_numel(out.shape(), axis);
  const size_t item = out.itemsize();
  auto* dst = static_cast<char*>(out.raw_data());
  int64_t offset = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    const Tensor& in = ctx.input(i);
    const int64_t block = trailing_numel(in.shape(), axis);
    if (block == 0) continue;
    copy_strided(dst + offset * static_cast<int64_t>(item), {out_row, 1},
                 static_cast<const char*>(in.raw_data()), {block, 1}, {outer, block}, item);
    offset += block;
  }
}

// Concat's gradient is Split of the output gradient into the inputs' extents along the axis.
void concat_gradient(GradientContext& ctx) {
  const int rank = ctx.input_info(0).shape.ndim();
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), rank, "attribute 'axis'");
  std::vector<int64_t> sizes;
  bool known = true;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    sizes.push_back(ctx.input_info(i).shape[axis]);
    known &= sizes.back() >= 0;
  }
  GradValue split;
  if (known) {
    split = ctx.ints(sizes);
  } else {
    std::vector<GradValue> extents;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      extents.push_back(ctx.op1("Shape", {ctx.input(i)}, {{"start", axis}, {"end", axis + 1}}));
    split = ctx.op1("Concat", extents, {{"axis", 0}});
  }
  const auto parts = ctx.op("Split", {ctx.output_grad(0), split}, {{"axis", axis}}, ctx.num_inputs());
  for (int i = 0; i < ctx.num_inputs(); ++i) ctx.set_input_grad(i, parts[static_cast<size_t>(i)]);
}

// Split's gradient joins the outputs' gradients (zeros where none flows) back along the axis.
void split_gradient(GradientContext& ctx) {
  std::vector<GradValue> parts;
  for (int k = 0; k < ctx.num_outputs(); ++k) parts.push_back(ctx.output_grad_or_zeros(k));
  ctx.set_input_grad(0, ctx.op1("Concat", parts, {{"axis", ctx.attrs().get_int("axis")}}));
}

KILN_REGISTER_OP(Concat)
    .moves_strings()
    .takes_storage_types()
    .doc("Joins the inputs along `axis`; all other dimensions must agree. Inputs may be empty.")
    .input("inputs", Arity::kVariadic)
    .output("concat_result")
    .required_attr("axis", AttrType::kInt)
    .infer(infer_concat)
    .kernel(concat_kernel)
    .gradient(concat_gradient);

// The lengths of the outputs along the split axis (-1 where unknown).
std::vector<int64_t> split_sizes(const InferContext& ctx, int64_t dim) {
  const int requested = ctx.num_outputs_requested();
  const bool has_num_outputs = ctx.attrs().has("num_outputs");
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, kIndexDTypes);
    require_rank(ctx, 1, 1, 1);
    KILN_CHECK(!has_num_outputs, ErrorCode::kInvalidArgument,
               "give either input 1 (split) or attribute 'num_outputs', not both");
    const auto sizes = read_int_values(ctx.value(1), ctx.input_label(1));
    KILN_CHECK(!sizes.empty(), ErrorCode::kInvalidArgument, ctx.input_label(1),
               ": expected at least one length");
    int64_t total = 0;
    for (int64_t s : sizes) {
      KILN_CHECK(s >= 0, ErrorCode::kInvalidArgument, ctx.input_label(1), ": expected lengths >= 0, got ", s);
      total += s;
    }
    KILN_CHECK(dim < 0 || total == dim, ErrorCode::kShapeMismatch, ctx.input_label(1), ": lengths sum to ",
               total, ", expected ", dim, " (the size of the split axis of ", ctx.input_label(0), ", shape ",
               ctx.shape(0), ")");
    KILN_CHECK(requested < 0 || requested == static_cast<int>(sizes.size()), ErrorCode::kInvalidArgument,
               ctx.input_label(1), ": ", sizes.size(), " lengths, but ", requested,
               " outputs were requested");
    return sizes;
  }
  int n = requested;
  if (has_num_outputs) {
    const int64_t attr = ctx.attrs().get_int("num_outputs");
    KILN_CHECK(requested < 0 || requested == attr, ErrorCode::kInvalidArgument, "attribute 'num_outputs' is ",
               attr, ", but ", requested, " outputs were requested");
    n = static_cast<int>(attr);
  }
  KILN_CHECK(
      n >= 1, ErrorCode::kInvalidArgument,
      "the number of outputs is unknown: give input 1 (split), attribute 'num_outputs', or request outputs");
  if (dim < 0) return std::vector<int64_t>(static_cast<size_t>(n), Shape::kUnknown);
  // ONNX 18: equal chunks of ceil(dim / n), the last one smaller when dim does not divide.
  const int64_t chunk = (dim + n - 1) / n;
  const int64_t last = dim - chunk * (n - 1);
  KILN_CHECK(last >= 0, ErrorCode::kShapeMismatch, "cannot split ", ctx.input_label(0), " (shape ",
             ctx.shape(0), ") into ", n, " chunks of ", chunk, ": axis size ", dim, " is too small");
  std::vector<int64_t> sizes(static_cast<size_t>(n), chunk);
  sizes.back() = last;
  return sizes;
}

std::vector<TensorInfo> infer_split(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  KILN_CHECK(in.ndim() >= 1, ErrorCode::kShapeMismatch, ctx.input_label(0),
             ": expected rank >= 1, got a scalar");
  const int axis = normalize_axis(ctx.attrs().get_int("axis"), in.ndim(), "attribute 'axis'");
  std::vector<TensorInfo> outs;
  for (int64_t size : split_sizes(ctx, in[axis])) {
    Shape s = in;
    s[axis] = size;
    outs.push_back(TensorInfo{ctx.dtype(0), s});
  }
  return outs;
}

void split_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  if (in.numel() == 0) return;
  const int axis = normalize_axis(ctx.attrs.get_int("axis"), in.ndim(), "axis");
  const int64_t in_row = trailing_numel(in.shape(), axis);
  const int64_t outer = in.numel() / in_row;
  const size_t item = in.itemsize();
  const auto* src = static_cast<const char*>(in.raw_data());
  int64_t offset = 0;
  for (int k = 0; k < ctx.num_outputs(); ++k) {
    Tensor& out = ctx.output(k);
    const int64_t block = trailing_numel(out.shape(), axis);
    if (block == 0) continue;
    copy_strided(static_cast<char*>(out.raw_data()), {block, 1}, src + offset * static_cast<int64_t>(item),
                 {in_row, 1}, {outer, block}, item);
    offset += block;
  }
}

KILN_REGISTER_OP(Split)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "Cuts the input along `axis` into parts of the lengths in `split`, or into `num_outputs` "
        "(or as many as requested) equal parts, the last one smaller when the size does not divide.")
    .input("input")
    .shape_input("split", Arity::kOptional)
    .output("outputs", Arity::kVariadic)
    .attr("axis", AttrType::kInt, 0)
    .optional_attr("num_outputs", AttrType::kInt,
                   [](const AttrValue& v, const std::string& what) {
                     const int64_t n = std::get<int64_t>(v.variant());
                     KILN_CHECK(n >= 1, ErrorCode::kInvalidArgument, what, ": expected >= 1, got ", n);
                   })
    .infer(infer_split)
    .kernel(split_kernel)
    .gradient(split_gradient);

}  // namespace
}  // namespace kiln::ops
