// Bitwise ops on integer tensors (ONNX opset 18, BitShift opset 28): BitwiseAnd/Or/Xor with numpy
// broadcasting, BitwiseNot, and BitShift. Signed right shifts are arithmetic; a shift by a negative
// amount or by the bit width or more gives what the sign fill alone gives (-1 for a right shift of
// a negative value, 0 otherwise); left shifts drop the bits moved past the top.
#include <climits>
#include <string>
#include <type_traits>

#include "elementwise.h"
#include "infer_util.h"

namespace kiln::ops {
namespace {

std::vector<TensorInfo> infer_bitwise_binary(InferContext& ctx) {
  require_dtype(ctx, 0, kIntegerDTypes);
  require_same_dtype(ctx, 0, 1);
  const Shape& a = ctx.shape(0);
  const Shape& b = ctx.shape(1);
  return {TensorInfo{ctx.dtype(0), a == b ? a : broadcast_shapes(a, b, ctx.input_label(1))}};
}

// A kernel computing out = f(a, b) on the inputs' integer type.
template <class F>
KernelFn bitwise_binary_kernel(F f) {
  return [f](KernelContext& ctx) {
    dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
        map_binary<T, T, T>(ctx.input(0), ctx.input(1), ctx.output(0), f);
    });
  };
}

void validate_direction(const AttrValue& v, const std::string& what) {
  const auto& s = std::get<std::string>(v.variant());
  KILN_CHECK(s == "LEFT" || s == "RIGHT", ErrorCode::kInvalidArgument, what,
             ": expected LEFT or RIGHT, got '", s, "'");
}

// x shifted by y bits. The shift goes through the unsigned type so that moving bits into or past
// the sign bit is defined (and wraps), and out-of-range amounts are settled before shifting
// because C++ leaves them undefined.
template <class T>
T shift_bits(T x, T y, bool left) {
  using U = std::make_unsigned_t<T>;
  constexpr int kBits = static_cast<int>(sizeof(T) * CHAR_BIT);
  bool negative_x = false, in_range = static_cast<U>(y) < static_cast<U>(kBits);
  if constexpr (std::is_signed_v<T>) {
    negative_x = x < 0;
    in_range = in_range && y >= 0;
  }
  if (left) return in_range ? static_cast<T>(static_cast<U>(static_cast<U>(x) << y)) : T(0);
  if (in_range) return static_cast<T>(x >> y);
  return negative_x ? T(-1) : T(0);
}

void bitshift_kernel(KernelContext& ctx) {
  const bool left = ctx.attrs.get_string("direction") == "LEFT";
  dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
      map_binary<T, T, T>(ctx.input(0), ctx.input(1), ctx.output(0),
                          [left](T x, T y) { return shift_bits<T>(x, y, left); });
  });
}

KILN_REGISTER_OP(BitwiseAnd)
    .doc("C = A & B for integer tensors, with numpy broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_bitwise_binary)
    .kernel(bitwise_binary_kernel([](auto a, auto b) { return a & b; }));

KILN_REGISTER_OP(BitwiseOr)
    .doc("C = A | B for integer tensors, with numpy broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_bitwise_binary)
    .kernel(bitwise_binary_kernel([](auto a, auto b) { return a | b; }));

KILN_REGISTER_OP(BitwiseXor)
    .doc("C = A ^ B for integer tensors, with numpy broadcasting.")
    .input("A")
    .input("B")
    .output("C")
    .elementwise()
    .infer(infer_bitwise_binary)
    .kernel(bitwise_binary_kernel([](auto a, auto b) { return a ^ b; }));

KILN_REGISTER_OP(BitwiseNot)
    .doc("Y = ~X for integer tensors.")
    .input("X")
    .output("Y")
    .elementwise()
    .infer([](InferContext& ctx) {
      require_dtype(ctx, 0, kIntegerDTypes);
      return infer_same_as_input(ctx);
    })
    .kernel([](KernelContext& ctx) {
      dispatch_dtype(ctx.input(0).dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>)
          map_unary<T, T>(ctx.input(0), ctx.output(0), [](T v) { return static_cast<T>(~v); });
      });
    });

KILN_REGISTER_OP(BitShift)
    .doc(
        "Z = X << Y (direction LEFT) or X >> Y (RIGHT, arithmetic for signed types), with numpy "
        "broadcasting; shifting by a negative amount or by the bit width or more gives 0, or -1 "
        "for a right shift of a negative value.")
    .input("X")
    .input("Y")
    .output("Z")
    .required_attr("direction", AttrType::kString, validate_direction)
    .elementwise()
    .infer(infer_bitwise_binary)
    .kernel(bitshift_kernel);

}  // namespace
}  // namespace kiln::ops
