// Moving blocks between the channel and spatial axes of NCHW tensors: DepthToSpace and
// SpaceToDepth (modes DCR and CRD). Each is a reshape to 6-D, a transposition and a reshape back,
// done as one strided copy.
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

void validate_blocksize(const AttrValue& v, const std::string& what) {
  const int64_t b = std::get<int64_t>(v.variant());
  // The upper bound keeps blocksize^2 and the scaled spatial sizes far from overflow.
  constexpr int64_t kMaxBlocksize = int64_t{1} << 20;
  KILN_CHECK(b >= 1 && b <= kMaxBlocksize, ErrorCode::kInvalidArgument, what,
             ": expected 1 <= blocksize <= ", kMaxBlocksize, ", got ", b);
}

void validate_mode(const AttrValue& v, const std::string& what) {
  const auto& s = std::get<std::string>(v.variant());
  KILN_CHECK(s == "DCR" || s == "CRD", ErrorCode::kInvalidArgument, what, ": expected DCR or CRD, got '", s,
             "'");
}

// Writes `in`, viewed with the row-major shape `view`, transposed by `perm`, into `out`.
void permuted_copy(const Tensor& in, Tensor& out, const std::vector<int64_t>& view,
                   const std::vector<int>& perm) {
  if (out.numel() == 0) return;
  const auto view_strides = contiguous_strides(Shape(view));
  std::vector<int64_t> dims, src_strides;
  for (int p : perm) {
    dims.push_back(view[static_cast<size_t>(p)]);
    src_strides.push_back(view_strides[static_cast<size_t>(p)]);
  }
  copy_strided(static_cast<char*>(out.raw_data()), contiguous_strides(Shape(dims)),
               static_cast<const char*>(in.raw_data()), src_strides, dims, in.itemsize());
}

std::vector<TensorInfo> infer_depth_to_space(InferContext& ctx) {
  require_rank(ctx, 0, 4, 4);
  const Shape& in = ctx.shape(0);
  const int64_t b = ctx.attrs().get_int("blocksize");
  KILN_CHECK(in[1] < 0 || in[1] % (b * b) == 0, ErrorCode::kShapeMismatch, ctx.input_label(0), ": channels (",
             in[1], " in shape ", in, ") must be a multiple of blocksize^2 = ", b * b);
  auto scaled = [](int64_t d, int64_t f) { return d < 0 ? Shape::kUnknown : d * f; };
  const int64_t channels = in[1] < 0 ? Shape::kUnknown : in[1] / (b * b);
  return {TensorInfo{ctx.dtype(0), Shape{in[0], channels, scaled(in[2], b), scaled(in[3], b)}}};
}

void depth_to_space_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Shape& s = in.shape();
  const int64_t b = ctx.attrs.get_int("blocksize"), c = s[1] / (b * b);
  if (ctx.attrs.get_string("mode") == "DCR") {
    permuted_copy(in, ctx.output(0), {s[0], b, b, c, s[2], s[3]}, {0, 3, 4, 1, 5, 2});
  } else {
    permuted_copy(in, ctx.output(0), {s[0], c, b, b, s[2], s[3]}, {0, 1, 4, 2, 5, 3});
  }
}

KILN_REGISTER_OP(DepthToSpace)
    .takes_storage_types()
    .doc(
        "Rearranges (N, C, H, W) into (N, C/b^2, H*b, W*b): depth-column-row (DCR) or "
        "column-row-depth (CRD) order of the blocks taken from the channels.")
    .input("input")
    .output("output")
    .required_attr("blocksize", AttrType::kInt, validate_blocksize)
    .attr("mode", AttrType::kString, "DCR", validate_mode)
    .infer(infer_depth_to_space)
    .kernel(depth_to_space_kernel);

std::vector<TensorInfo> infer_space_to_depth(InferContext& ctx) {
  require_rank(ctx, 0, 4, 4);
  const Shape& in = ctx.shape(0);
  const int64_t b = ctx.attrs().get_int("blocksize");
  for (int a = 2; a < 4; ++a)
    KILN_CHECK(in[a] < 0 || in[a] % b == 0, ErrorCode::kShapeMismatch, ctx.input_label(0), ": dimension ", a,
               " (", in[a], " in shape ", in, ") must be a multiple of blocksize ", b);
  auto divided = [](int64_t d, int64_t f) { return d < 0 ? Shape::kUnknown : d / f; };
  const int64_t channels = in[1] < 0 ? Shape::kUnknown : in[1] * b * b;
  return {TensorInfo{ctx.dtype(0), Shape{in[0], channels, divided(in[2], b), divided(in[3], b)}}};
}

void space_to_depth_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  const Shape& s = in.shape();
  const int64_t b = ctx.attrs.get_int("blocksize");
  const std::vector<int64_t> view{s[0], s[1], s[2] / b, b, s[3] / b, b};
  if (ctx.attrs.get_string("mode") == "DCR") {
    permuted_copy(in, ctx.output(0), view, {0, 3, 5, 1, 2, 4});
  } else {
    permuted_copy(in, ctx.output(0), view, {0, 1, 3, 5, 2, 4});
  }
}

KILN_REGISTER_OP(SpaceToDepth)
    .takes_storage_types()
    .doc(
        "Rearranges (N, C, H, W) into (N, C*b^2, H/b, W/b), the inverse of DepthToSpace in the "
        "same mode (DCR: block offsets outermost in the channels; CRD: channels outermost).")
    .input("input")
    .output("output")
    .required_attr("blocksize", AttrType::kInt, validate_blocksize)
    .attr("mode", AttrType::kString, "DCR", validate_mode)
    .infer(infer_space_to_depth)
    .kernel(space_to_depth_kernel);

}  // namespace
}  // namespace kiln::ops
