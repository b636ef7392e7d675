// ONNX's optional values, where the value is a tensor or absent: OptionalHasElement (is the input
// there?) and OptionalGetElement (the tensor itself). Kiln's graphs have no optional-typed values;
// an optional input left empty is an absent input, and a present one is its tensor.
#include "infer_util.h"

namespace kiln::ops {
namespace {

KILN_REGISTER_OP(OptionalHasElement)
    .doc("A bool scalar: true when the optional input is given.")
    .input("input", Arity::kOptional)
    .output("output")
    .takes_storage_types()
    .infer([](InferContext&) {
      return std::vector<TensorInfo>{{DType::kBool, Shape{}}};
    })
    .kernel([](KernelContext& ctx) { ctx.output(0).data<bool>()[0] = ctx.has_input(0); });

KILN_REGISTER_OP(OptionalGetElement)
    .doc("The tensor an optional value holds (a tensor is its own element).")
    .input("input")
    .output("output")
    .takes_storage_types()
    .infer(infer_same_as_input)
    .kernel([](KernelContext& ctx) { ctx.output(0).copy_from(ctx.input(0)); });

}  // namespace
}  // namespace kiln::ops
