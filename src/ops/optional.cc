// ONNX's optional values: a tensor or a sequence that may be absent (an absent one is an
// undefined Tensor, as a missing optional input is). Optional makes one, OptionalHasElement asks
// whether it holds a value, OptionalGetElement takes the value out. A tensor or a sequence given
// where an optional is read counts as an optional holding it.
#include "infer_util.h"

namespace kiln::ops {
namespace {

KILN_REGISTER_OP(Optional)
    .doc(
        "An optional value holding the input, or, without one, an empty optional of the type the "
        "attributes give (ONNX's `type`: element_dtype, an ONNX type code, and element_is_sequence).")
    .input("input", Arity::kOptional)
    .output("output")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .optional_attr("element_dtype", AttrType::kInt, validate_onnx_dtype)
    .attr("element_is_sequence", AttrType::kInt, AttrValue(int64_t{0}))
    .infer([](InferContext& ctx) {
      TensorInfo info;
      if (ctx.has_input(0)) {
        info = ctx.input(0);
      } else {
        KILN_CHECK(ctx.attrs().has("element_dtype"), ErrorCode::kInvalidArgument,
                   "an Optional without an input needs its type (attribute 'type' in ONNX)");
        info.dtype = dtype_from_onnx(ctx.attrs().get_int("element_dtype"));
        info.kind =
            ctx.attrs().get_int("element_is_sequence") != 0 ? ValueKind::kSequence : ValueKind::kTensor;
      }
      info.optional = true;
      return std::vector<TensorInfo>{info};
    })
    .kernel([](KernelContext& ctx) {
      if (!ctx.has_input(0)) return;  // the output stays undefined: an empty optional
      ctx.output(0) = ctx.input(0).is_sequence() ? ctx.input(0) : ctx.input(0).clone();
    });

KILN_REGISTER_OP(OptionalHasElement)
    .doc("A bool scalar: true when the optional input holds a value (a tensor or a sequence).")
    .input("input", Arity::kOptional)
    .output("output")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext&) {
      return std::vector<TensorInfo>{{DType::kBool, Shape{}}};
    })
    .kernel([](KernelContext& ctx) { ctx.output(0).data<bool>()[0] = ctx.has_input(0); });

KILN_REGISTER_OP(OptionalGetElement)
    .doc("The value an optional holds (a tensor or a sequence is its own value); an empty one is an error.")
    .input("input", Arity::kOptional)
    .output("output")
    .takes_sequences()
    .takes_strings()
    .takes_storage_types()
    .infer([](InferContext& ctx) {
      KILN_CHECK(ctx.has_input(0), ErrorCode::kInvalidArgument, ctx.input_label(0),
                 " is an empty optional: it holds no value to get");
      TensorInfo info = ctx.input(0);
      info.optional = false;
      return std::vector<TensorInfo>{info};
    })
    .kernel([](KernelContext& ctx) {
      if (ctx.input(0).is_sequence()) {
        ctx.output(0) = ctx.input(0);
      } else {
        ctx.output(0).copy_from(ctx.input(0));
      }
    });

}  // namespace
}  // namespace kiln::ops
