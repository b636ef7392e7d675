// Dtype conversion and plain copies: Cast, CastLike, Identity.
#include "gradient.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

void cast_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  out.copy_from(in.cast(out.dtype()));
}

// A float-to-float conversion passes the gradient through, converted back to the input's dtype.
// (Gradients never flow out of integer or bool results: the tape does not record them.)
void cast_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("CastLike", {ctx.output_grad(0), ctx.input(0)}));
}

void identity_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.output_grad(0));
}

KILN_REGISTER_OP(Cast)
    .doc(
        "Converts to the dtype `to` (an ONNX TensorProto.DataType code). Floats to 16-bit floats "
        "round to nearest even; floats to integers truncate; nonzero to bool is true.")
    .input("input")
    .output("output")
    .required_attr("to", AttrType::kInt, validate_onnx_dtype)
    .attr("saturate", AttrType::kInt, 1)
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{{dtype_from_onnx(ctx.attrs().get_int("to")), ctx.shape(0)}};
    })
    .kernel(cast_kernel)
    .gradient(cast_gradient);

KILN_REGISTER_OP(CastLike)
    .doc("Converts `input` to the dtype of `target_type`.")
    .input("input")
    .input("target_type")
    .output("output")
    .attr("saturate", AttrType::kInt, 1)
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{{ctx.dtype(1), ctx.shape(0)}};
    })
    .kernel(cast_kernel)
    .gradient(cast_gradient);

KILN_REGISTER_OP(Identity)
    .doc("A copy of the input.")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_same_as_input)
    .kernel([](KernelContext& ctx) { ctx.output(0).copy_from(ctx.input(0)); })
    .gradient(identity_gradient);

}  // namespace
}  // namespace kiln::ops
