// Ops that change only the shape, never the element order: Reshape, Flatten, Squeeze, Unsqueeze.
// Their kernels are one contiguous byte copy; all the work is in shape inference.
#include <sstream>

#include "gradient.h"
#include "infer_util.h"
#include "shape_ops_util.h"

namespace kiln::ops {
namespace {

void copy_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  // The plan may give the output the input's storage (same_bytes): then there is nothing to do.
  if (out.numel() == 0 || out.raw_data() == in.raw_data()) return;
  copy_contiguous(static_cast<char*>(out.raw_data()), static_cast<const char*>(in.raw_data()), in.numel(),
                  in.itemsize());
}

std::string format_ints(const std::vector<int64_t>& values) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < values.size(); ++i) os << (i ? ", " : "") << values[i];
  os << "]";
  return os.str();
}

// Product of dims, or -1 when any of them is unknown; a product past int64 is a kiln::Error
// (Shape::numel checks it), not a wrap-around.
int64_t known_product(const std::vector<int64_t>& dims) {
  for (int64_t d : dims)
    if (d < 0) return Shape::kUnknown;
  return Shape(dims).numel();
}

std::vector<TensorInfo> infer_reshape(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank(ctx, 1, 1, 1);
  const Shape& in = ctx.shape(0);
  const auto requested = read_int_values(ctx.value(1), ctx.input_label(1));
  const bool allowzero = ctx.attrs().get_int("allowzero") != 0;
  std::vector<int64_t> dims;
  int inferred = -1;
  bool has_zero = false;
  for (size_t i = 0; i < requested.size(); ++i) {
    const int64_t r = requested[i];
    if (r == -1) {
      KILN_CHECK(inferred < 0, ErrorCode::kInvalidArgument, ctx.input_label(1),
                 ": expected at most one -1 (the inferred dimension), got ", format_ints(requested));
      inferred = static_cast<int>(i);
      dims.push_back(Shape::kUnknown);
    } else if (r == 0 && !allowzero) {
      // 0 copies the input's dimension at the same position.
      KILN_CHECK(static_cast<int>(i) < in.ndim(), ErrorCode::kShapeMismatch, ctx.input_label(1),
                 ": 0 at position ", i, " copies that dimension of ", ctx.input_label(0), ", which has rank ",
                 in.ndim(), " (shape ", in, ")");
      dims.push_back(in[static_cast<int>(i)]);
    } else {
      KILN_CHECK(r >= 0, ErrorCode::kInvalidArgument, ctx.input_label(1), ": expected dimensions >= -1, got ",
                 r, " in ", format_ints(requested));
      has_zero |= r == 0;
      dims.push_back(r);
    }
  }
  KILN_CHECK(!(allowzero && has_zero && inferred >= 0), ErrorCode::kInvalidArgument, ctx.input_label(1),
             ": with allowzero=1 the shape may not hold both 0 and -1, got ", format_ints(requested));
  const int64_t in_numel = in.numel();
  if (inferred >= 0) {
    std::vector<int64_t> others = dims;
    others[static_cast<size_t>(inferred)] = 1;
    const int64_t rest = known_product(others);
    if (rest >= 0 && in_numel >= 0) {
      KILN_CHECK(rest != 0, ErrorCode::kShapeMismatch, ctx.input_label(1), ": cannot infer the -1 in ",
                 format_ints(requested), " when the other dimensions hold 0 elements (", ctx.input_label(0),
                 " has shape ", in, ")");
      KILN_CHECK(in_numel % rest == 0, ErrorCode::kShapeMismatch, ctx.input_label(1), ": cannot reshape ",
                 ctx.input_label(0), " of shape ", in, " (", in_numel, " elements) into ",
                 format_ints(requested), ": ", in_numel, " is not a multiple of ", rest);
      dims[static_cast<size_t>(inferred)] = in_numel / rest;
    }
  } else {
    const int64_t out_numel = known_product(dims);
    KILN_CHECK(out_numel < 0 || in_numel < 0 || out_numel == in_numel, ErrorCode::kShapeMismatch,
               ctx.input_label(1), ": cannot reshape ", ctx.input_label(0), " of shape ", in, " (", in_numel,
               " elements) into ", Shape(dims), " (", out_numel, " elements)");
  }
  return {TensorInfo{ctx.dtype(0), Shape(dims)}};
}

// Reshape, Flatten, Squeeze and Unsqueeze only relabel the elements: the gradient is reshaped back.
void reshape_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("Reshape", {ctx.output_grad(0), ctx.shape_of_input(0)}));
}

KILN_REGISTER_OP(Reshape)
    .moves_strings()
    .takes_storage_types()
    .doc(
        "The data with a new shape of the same element count. In `shape`, -1 (at most one) is "
        "inferred and 0 copies the input's dimension at that position (a literal 0 when allowzero=1).")
    .input("data")
    .shape_input("shape")
    .output("reshaped")
    .attr("allowzero", AttrType::kInt, 0)
    .infer(infer_reshape)
    .kernel(copy_kernel)
    .same_bytes()
    .gradient(reshape_gradient);

std::vector<TensorInfo> infer_flatten(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  const int64_t axis = ctx.attrs().get_int("axis");
  const int r = in.ndim();
  KILN_CHECK(axis >= -r && axis <= r, ErrorCode::kOutOfRange, "attribute 'axis': expected ", -r,
             " <= axis <= ", r, " for ", ctx.input_label(0), " of shape ", in, ", got ", axis);
  const auto split = static_cast<size_t>(axis < 0 ? axis + r : axis);
  const std::vector<int64_t> outer(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(split));
  const std::vector<int64_t> inner(in.begin() + static_cast<std::ptrdiff_t>(split), in.end());
  return {TensorInfo{ctx.dtype(0), Shape{known_product(outer), known_product(inner)}}};
}

KILN_REGISTER_OP(Flatten)
    .moves_strings()
    .takes_storage_types()
    .doc("A 2-D view: the dimensions before `axis` multiplied into rows, the rest into columns.")
    .input("input")
    .output("output")
    .attr("axis", AttrType::kInt, 1)
    .infer(infer_flatten)
    .kernel(copy_kernel)
    .same_bytes()
    .gradient(reshape_gradient);

std::vector<TensorInfo> infer_squeeze(InferContext& ctx) {
  const Shape& in = ctx.shape(0);
  std::vector<bool> drop(static_cast<size_t>(in.ndim()), false);
  if (ctx.has_input(1)) {
    require_dtype(ctx, 1, kIndexDTypes);
    require_rank(ctx, 1, 1, 1);
    for (int a :
         normalize_axes(read_int_values(ctx.value(1), ctx.input_label(1)), in.ndim(), ctx.input_label(1))) {
      KILN_CHECK(in[a] == 1 || in[a] == Shape::kUnknown, ErrorCode::kShapeMismatch, ctx.input_label(1),
                 ": cannot squeeze axis ", a, " of ", ctx.input_label(0), " (shape ", in,
                 "): expected size 1, got ", in[a]);
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (int a = 0; a < in.ndim(); ++a) {
      KILN_CHECK(in[a] != Shape::kUnknown, ErrorCode::kUnsupported, ctx.input_label(0), ": shape ", in,
                 " has unknown dimensions, so the axes to squeeze are not known without input 1 (axes)");
      drop[static_cast<size_t>(a)] = in[a] == 1;
    }
  }
  Shape out;
  for (int a = 0; a < in.ndim(); ++a)
    if (!drop[static_cast<size_t>(a)]) out.push_back(in[a]);
  return {TensorInfo{ctx.dtype(0), out}};
}

KILN_REGISTER_OP(Squeeze)
    .moves_strings()
    .takes_storage_types()
    .doc("Removes the size-1 axes listed in `axes` (every size-1 axis when absent).")
    .input("data")
    .shape_input("axes", Arity::kOptional)
    .output("squeezed")
    .infer(infer_squeeze)
    .kernel(copy_kernel)
    .same_bytes()
    .gradient(reshape_gradient);

std::vector<TensorInfo> infer_unsqueeze(InferContext& ctx) {
  require_dtype(ctx, 1, kIndexDTypes);
  require_rank(ctx, 1, 0, 1);
  const Shape& in = ctx.shape(0);
  const auto axes = read_int_values(ctx.value(1), ctx.input_label(1));
  const int rank = in.ndim() + static_cast<int>(axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int a : normalize_axes(axes, rank, ctx.input_label(1))) inserted[static_cast<size_t>(a)] = true;
  Shape out;
  for (int a = 0, next = 0; a < rank; ++a) out.push_back(inserted[static_cast<size_t>(a)] ? 1 : in[next++]);
  return {TensorInfo{ctx.dtype(0), out}};
}

KILN_REGISTER_OP(Unsqueeze)
    .moves_strings()
    .takes_storage_types()
    .doc("Inserts size-1 axes at the positions `axes` of the output.")
    .input("data")
    .shape_input("axes")
    .output("expanded")
    .infer(infer_unsqueeze)
    .kernel(copy_kernel)
    .same_bytes()
    .gradient(reshape_gradient);

}  // namespace
}  // namespace kiln::ops
