// Dtype conversion and plain copies: Cast, CastLike, Identity, and BitCast (the same bits read
// as another type).
#include <cstring>

#include "attr_validators.h"
#include "core/storage_types.h"
#include "gradient.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

// saturate and round_mode decide conversions to the 8-bit floats (dtype.hpp's CastOptions).
void cast_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  CastOptions options;
  options.saturate = ctx.attrs.get_int("saturate") != 0;
  const std::string& mode = ctx.attrs.get_string("round_mode");
  options.e8m0_rounding = mode == "down"      ? RoundMode::kDown
                          : mode == "nearest" ? RoundMode::kNearest
                                              : RoundMode::kUp;
  out.copy_from(in.cast(out.dtype(), options));
}

// `to`, once input 0's dtype is known to convert to it (dtype.hpp's is_castable).
DType castable_to(const InferContext& ctx, DType to) {
  KILN_CHECK(is_castable(ctx.dtype(0), to), ErrorCode::kTypeMismatch, ctx.input_label(0), " is ",
             dtype_name(ctx.dtype(0)), ", which does not convert to ", dtype_name(to),
             is_complex(ctx.dtype(0)) ? " (it would drop the imaginary part)" : "");
  return to;
}

// A float-to-float conversion passes the gradient through, converted back to the input's dtype.
// (Gradients never flow out of integer or bool results: the tape does not record them.)
void cast_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.op1("CastLike", {ctx.output_grad(0), ctx.input(0)}));
}

// Bits per element as ONNX counts them (4 for int4, not the byte Kiln holds it in).
int bit_width(DType dtype) {
  return is_storage_type(dtype) ? packed_bits(dtype) : static_cast<int>(dtype_size(dtype)) * 8;
}

// The bytes move as they are, except where the in-memory byte is not the bit pattern: the 4- and
// 2-bit integers (sign-extended in their byte) keep their low bits, and a bool holds 0 or 1.
void bitcast_kernel(KernelContext& ctx) {
  const Tensor& in = ctx.input(0);
  Tensor& out = ctx.output(0);
  if (out.numel() == 0) return;
  const DType to = out.dtype();
  if (packed_bits(in.dtype()) < 8 || to == DType::kBool) {
    const auto* src = static_cast<const uint8_t*>(in.raw_data());
    auto* dst = static_cast<uint8_t*>(out.raw_data());
    const unsigned mask = (1u << bit_width(to)) - 1;
    for (int64_t i = 0; i < out.numel(); ++i) {
      const unsigned bits = src[i] & mask;
      dst[i] = to == DType::kBool                             ? static_cast<uint8_t>(bits != 0)
               : is_storage_type(to) && !is_storage_float(to) ? storage_int_from_integer(to, bits)
                                                              : static_cast<uint8_t>(bits);
    }
    return;
  }
  std::memcpy(out.raw_data(), in.raw_data(), in.nbytes());
}

void identity_gradient(GradientContext& ctx) {
  ctx.set_input_grad(0, ctx.output_grad(0));
}

KILN_REGISTER_OP(Cast)
    .takes_storage_types()
    .takes_strings()
    .doc(
        "Converts to the dtype `to` (an ONNX TensorProto.DataType code). Floats to 16- and 8-bit floats "
        "round to nearest even; to the 8-bit floats, saturate = 1 turns values past the type's range into "
        "its largest value; to float8_e8m0fnu, round_mode (up, down, nearest) rounds to a power of two; "
        "floats to integers truncate; nonzero to bool is true.")
    .input("input")
    .output("output")
    .required_attr("to", AttrType::kInt, validate_onnx_dtype)
    .attr("saturate", AttrType::kInt, 1, require_flag)
    .attr("round_mode", AttrType::kString, std::string("up"), one_of({"up", "down", "nearest"}))
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{
          {castable_to(ctx, dtype_from_onnx(ctx.attrs().get_int("to"))), ctx.shape(0)}};
    })
    .kernel(cast_kernel)
    .gradient(cast_gradient);

KILN_REGISTER_OP(CastLike)
    .takes_storage_types()
    .takes_strings()
    .doc("Converts `input` to the dtype of `target_type`.")
    .input("input")
    .input("target_type")
    .output("output")
    .attr("saturate", AttrType::kInt, 1, require_flag)
    .attr("round_mode", AttrType::kString, std::string("up"), one_of({"up", "down", "nearest"}))
    .infer([](InferContext& ctx) {
      return std::vector<TensorInfo>{{castable_to(ctx, ctx.dtype(1)), ctx.shape(0)}};
    })
    .kernel(cast_kernel)
    .gradient(cast_gradient);

KILN_REGISTER_OP(BitCast)
    .doc(
        "The input's bits read as the dtype `to` (an ONNX TensorProto.DataType code) of the same bit width, "
        "little endian; no value is converted.")
    .input("input")
    .output("output")
    .takes_storage_types()
    .required_attr("to", AttrType::kInt, validate_onnx_dtype)
    .infer([](InferContext& ctx) {
      const DType to = dtype_from_onnx(ctx.attrs().get_int("to"));
      KILN_CHECK(bit_width(to) == bit_width(ctx.dtype(0)), ErrorCode::kTypeMismatch, ctx.input_label(0),
                 " is ", dtype_name(ctx.dtype(0)), " (", bit_width(ctx.dtype(0)),
                 " bits), which cannot be read as ", dtype_name(to), " (", bit_width(to), " bits)");
      return std::vector<TensorInfo>{{to, ctx.shape(0)}};
    })
    .kernel(bitcast_kernel);

KILN_REGISTER_OP(Identity)
    .takes_storage_types()
    .takes_strings()
    .takes_sequences()
    .doc("A copy of the input (a tensor, a sequence or an optional value).")
    .input("input")
    .output("output")
    .elementwise()
    .infer(infer_same_as_input)
    .kernel([](KernelContext& ctx) {
      // A sequence or an optional value has no output allocated for it: it is passed on (a
      // sequence is immutable) or copied.
      if (!ctx.output(0).defined()) {
        ctx.output(0) = ctx.input(0).is_sequence() ? ctx.input(0) : ctx.input(0).clone();
        return;
      }
      ctx.output(0).copy_from(ctx.input(0));
    })
    .gradient(identity_gradient);

}  // namespace
}  // namespace kiln::ops
