// Element types of tensors, and compile-time maps between them and C++ types.
#pragma once

#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>

#include "kiln/error.hpp"
#include "kiln/half.hpp"

namespace kiln {

enum class DType : uint8_t {
  kFloat32,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
  // The integer types that move through a model (graph inputs and outputs, Cast, the data
  // movement and comparison ops, integer arithmetic); appended so that the codes above stay.
  kInt16,
  kUInt16,
  kUInt32,
  kUInt64,
  // Storage types: the 8- and 4-bit floats and the 4- and 2-bit integers of low-precision
  // models. Kiln holds, moves and converts them (Cast, QuantizeLinear, DequantizeLinear, the
  // data movement ops) but computes in a wider type. Each element takes one byte in memory (the
  // 4- and 2-bit ones unpacked, as ml_dtypes holds them; ONNX files pack them, and the ONNX
  // reader and writer pack and unpack): int4 and int2 hold their value sign-extended, uint4 and
  // uint2 theirs, and the floats their bit pattern in the low bits.
  kFloat8E4M3FN,    // 1 sign, 4 exponent (bias 7), 3 mantissa bits; no infinity; max 448
  kFloat8E4M3FNUZ,  // bias 8, no infinity, no negative zero (0x80 is NaN); max 240
  kFloat8E5M2,      // 1 sign, 5 exponent (bias 15), 2 mantissa bits, IEEE-like; max 57344
  kFloat8E5M2FNUZ,  // bias 16, no infinity, no negative zero (0x80 is NaN); max 57344
  kFloat8E8M0,      // an unsigned power of two, 2^(bits - 127); 0xFF is NaN (MX scales)
  kFloat4E2M1,      // 1 sign, 2 exponent (bias 1), 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6
  kInt4,
  kUInt4,
  kInt2,
  kUInt2,
  // Text: each element a std::string (UTF-8), constructed and destroyed with its storage. Kiln
  // moves, compares and converts strings (Cast, Equal, the string ops, LabelEncoder) and never
  // holds them in a plan's arena.
  kString,
  // Complex numbers: a real and an imaginary part, float32 or float64, as std::complex and numpy
  // lay them out. Kiln holds and moves them (the data movement ops, Where, Cast between the two
  // and from real types) but computes in neither.
  kComplex64,
  kComplex128,
};

// The types Kiln computes in.
inline constexpr DType kComputeDTypes[] = {
    DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16, DType::kInt8,
    DType::kUInt8,   DType::kInt32,   DType::kInt64,   DType::kBool,     DType::kInt16,
    DType::kUInt16,  DType::kUInt32,  DType::kUInt64};
// The types Kiln stores, moves and converts only (see DType).
inline constexpr DType kStorageDTypes[] = {DType::kFloat8E4M3FN,   DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                                           DType::kFloat8E5M2FNUZ, DType::kFloat8E8M0,     DType::kFloat4E2M1,
                                           DType::kInt4,           DType::kUInt4,          DType::kInt2,
                                           DType::kUInt2};

constexpr bool is_storage_type(DType d) {
  return d >= DType::kFloat8E4M3FN && d <= DType::kUInt2;
}
constexpr bool is_string(DType d) {
  return d == DType::kString;
}
constexpr bool is_storage_float(DType d) {
  return is_storage_type(d) && d <= DType::kFloat4E2M1;
}
constexpr bool is_complex(DType d) {
  return d == DType::kComplex64 || d == DType::kComplex128;
}
// The types ops marked takes_storage_types() accept and no other op does: they are held and moved
// (and converted by Cast) but not computed in.
constexpr bool is_moved_only(DType d) {
  return is_storage_type(d) || is_complex(d);
}

// Bytes per element in memory (1 for storage types, a std::string's for text, both parts of a
// complex number).
size_t dtype_size(DType dtype);
const char* dtype_name(DType dtype);             // "float32", "bfloat16", "float8_e4m3fn", ...
DType dtype_from_name(const std::string& name);  // throws kiln::Error for unknown names
inline std::ostream& operator<<(std::ostream& os, DType d) {
  return os << dtype_name(d);
}

// ONNX TensorProto.DataType codes (FLOAT = 1, ..., COMPLEX64 = 14, COMPLEX128 = 15, BFLOAT16 =
// 16, FLOAT8E4M3FN = 17, ..., INT2 = 26), used by attributes such as Cast's `to`. dtype_from_onnx throws
// kiln::Error(kUnsupported) for types Kiln does not have.
int dtype_to_onnx(DType dtype);
DType dtype_from_onnx(int64_t code);

constexpr bool is_floating(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kFloat16 || d == DType::kBFloat16;
}
// Whether Tensor::cast (and so ONNX's Cast) converts `from` to `to`: every pair except a complex
// number to a real type or text (which would drop its imaginary part or need a text form) and text
// to a complex number.
constexpr bool is_castable(DType from, DType to) {
  if (is_complex(from)) return is_complex(to);
  return !(is_complex(to) && from == DType::kString);
}

constexpr bool is_integral(DType d) {
  return d == DType::kInt8 || d == DType::kUInt8 || d == DType::kInt32 || d == DType::kInt64 ||
         d == DType::kInt16 || d == DType::kUInt16 || d == DType::kUInt32 || d == DType::kUInt64;
}

// How a conversion to a storage float rounds and what it does past the type's range: the
// attributes saturate and round_mode of ONNX's Cast.
enum class RoundMode { kUp, kDown, kNearest };
struct CastOptions {
  // To the 8-bit floats: a value past the largest finite one (infinities included) becomes that
  // largest value, signed, instead of infinity (float8_e5m2) or NaN (the others).
  bool saturate = true;
  // To float8_e8m0fnu, a power of two: how a value between two powers rounds.
  RoundMode e8m0_rounding = RoundMode::kUp;
};

// C++ type <-> DType.
template <class T>
struct DTypeOf;
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::kFloat32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::kFloat64;
};
template <>
struct DTypeOf<float16> {
  static constexpr DType value = DType::kFloat16;
};
template <>
struct DTypeOf<bfloat16> {
  static constexpr DType value = DType::kBFloat16;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::kInt8;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::kUInt8;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::kInt32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::kInt64;
};
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::kBool;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::kInt16;
};
template <>
struct DTypeOf<uint16_t> {
  static constexpr DType value = DType::kUInt16;
};
template <>
struct DTypeOf<uint32_t> {
  static constexpr DType value = DType::kUInt32;
};
template <>
struct DTypeOf<uint64_t> {
  static constexpr DType value = DType::kUInt64;
};
template <>
struct DTypeOf<std::string> {
  static constexpr DType value = DType::kString;
};
template <>
struct DTypeOf<std::complex<float>> {
  static constexpr DType value = DType::kComplex64;
};
template <>
struct DTypeOf<std::complex<double>> {
  static constexpr DType value = DType::kComplex128;
};
template <class T>
inline constexpr DType dtype_of = DTypeOf<std::remove_cv_t<T>>::value;

// The type reference kernels compute in: float for the 16-bit floats, the type itself otherwise.
template <class T>
using compute_t = std::conditional_t<std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>, float, T>;

template <class T>
struct TypeTag {
  using type = T;
};

[[noreturn]] void raise_no_arithmetic(DType dtype);

// Calls f(TypeTag<T>{}) with the C++ type of `dtype`; a storage type, which has no C++ type to
// compute in, a string and a complex number throw kiln::Error (kUnsupported) naming it.
template <class F>
decltype(auto) dispatch_dtype(DType dtype, F&& f) {
  switch (dtype) {
    case DType::kFloat32:
      return f(TypeTag<float>{});
    case DType::kFloat64:
      return f(TypeTag<double>{});
    case DType::kFloat16:
      return f(TypeTag<float16>{});
    case DType::kBFloat16:
      return f(TypeTag<bfloat16>{});
    case DType::kInt8:
      return f(TypeTag<int8_t>{});
    case DType::kUInt8:
      return f(TypeTag<uint8_t>{});
    case DType::kInt32:
      return f(TypeTag<int32_t>{});
    case DType::kInt64:
      return f(TypeTag<int64_t>{});
    case DType::kBool:
      return f(TypeTag<bool>{});
    case DType::kInt16:
      return f(TypeTag<int16_t>{});
    case DType::kUInt16:
      return f(TypeTag<uint16_t>{});
    case DType::kUInt32:
      return f(TypeTag<uint32_t>{});
    case DType::kUInt64:
      return f(TypeTag<uint64_t>{});
    default:
      break;
  }
  if (is_moved_only(dtype) || is_string(dtype)) raise_no_arithmetic(dtype);
  raise(ErrorCode::kInternal, "dispatch_dtype: invalid dtype ", static_cast<int>(dtype));
}

// A floating value as the integer type I: truncated towards zero, saturated at I's limits, NaN as 0
// (a plain C++ conversion of an out-of-range value is undefined behaviour).
template <class I, class F>
I saturating_integer(F x) {
  if (x != x) return I(0);
  const F t = std::trunc(x);
  // 2^digits is exact in every floating type and is the first value above I's maximum.
  const F above_max = std::ldexp(F(1), std::numeric_limits<I>::digits);
  if (t >= above_max) return std::numeric_limits<I>::max();
  if (t < static_cast<F>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  return static_cast<I>(t);
}

// Converts one value between C++ element types, going through float for the 16-bit floats.
template <class To, class From>
To convert_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<To, bool>) {
    return static_cast<compute_t<From>>(v) != compute_t<From>(0);
  } else if constexpr (std::is_same_v<To, float16> || std::is_same_v<To, bfloat16>) {
    return To(static_cast<float>(static_cast<compute_t<From>>(v)));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<compute_t<From>>) {
    return saturating_integer<To>(static_cast<compute_t<From>>(v));
  } else {
    return static_cast<To>(static_cast<compute_t<From>>(v));
  }
}

}  // namespace kiln
