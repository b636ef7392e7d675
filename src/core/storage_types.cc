// The storage types' encodings; see storage_types.h for the rules.
#include "core/storage_types.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

namespace kiln {
namespace {

// ---- Small floats: 1 sign bit, `exponent_bits`, `mantissa_bits` ----

// What the all-ones exponent means and where NaN lives.
enum class Specials {
  kIeee,         // all-ones exponent: infinity (mantissa 0) or NaN (float8_e5m2)
  kFiniteNan,    // only all-ones exponent and mantissa is NaN, no infinity (float8_e4m3fn)
  kUnsignedNan,  // no infinity, no negative zero: the sign bit alone is NaN (the fnuz types)
  kNone,         // neither infinity nor NaN (float4_e2m1fn)
};

struct SmallFloat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  Specials specials;

  int sign_bit() const { return 1 << (exponent_bits + mantissa_bits); }
  int exponent_ones() const { return (1 << exponent_bits) - 1; }
  int mantissa_ones() const { return (1 << mantissa_bits) - 1; }

  // The bits of the largest finite value.
  uint8_t max_bits() const {
    const int exponent = specials == Specials::kIeee ? exponent_ones() - 1 : exponent_ones();
    const int mantissa = specials == Specials::kFiniteNan ? mantissa_ones() - 1 : mantissa_ones();
    return static_cast<uint8_t>((exponent << mantissa_bits) | mantissa);
  }
  uint8_t infinity_bits() const { return static_cast<uint8_t>(exponent_ones() << mantissa_bits); }
  uint8_t nan_bits(bool negative) const {
    switch (specials) {
      case Specials::kIeee:  // a quiet NaN, the mantissa's top bit set
        return static_cast<uint8_t>((negative ? sign_bit() : 0) | infinity_bits() |
                                    (1 << (mantissa_bits - 1)));
      case Specials::kFiniteNan:
        return static_cast<uint8_t>((negative ? sign_bit() : 0) | (exponent_ones() << mantissa_bits) |
                                    mantissa_ones());
      case Specials::kUnsignedNan:
        return static_cast<uint8_t>(sign_bit());
      case Specials::kNone:
        break;
    }
    return 0;  // no NaN to give: 0, as the format's nearest thing to "no value"
  }
};

constexpr SmallFloat kE4M3FN{4, 3, 7, Specials::kFiniteNan};
constexpr SmallFloat kE4M3FNUZ{4, 3, 8, Specials::kUnsignedNan};
constexpr SmallFloat kE5M2{5, 2, 15, Specials::kIeee};
constexpr SmallFloat kE5M2FNUZ{5, 2, 16, Specials::kUnsignedNan};
constexpr SmallFloat kE2M1{2, 1, 1, Specials::kNone};

const SmallFloat& small_float(DType dtype) {
  switch (dtype) {
    case DType::kFloat8E4M3FN:
      return kE4M3FN;
    case DType::kFloat8E4M3FNUZ:
      return kE4M3FNUZ;
    case DType::kFloat8E5M2:
      return kE5M2;
    case DType::kFloat8E5M2FNUZ:
      return kE5M2FNUZ;
    case DType::kFloat4E2M1:
      return kE2M1;
    default:
      raise(ErrorCode::kInternal, dtype_name(dtype), " is not a small float with sign and mantissa");
  }
}

double decode(const SmallFloat& f, uint8_t raw) {
  const int bits = raw & ((f.sign_bit() << 1) - 1);
  const bool negative = (bits & f.sign_bit()) != 0;
  const int exponent = (bits >> f.mantissa_bits) & f.exponent_ones();
  const int mantissa = bits & f.mantissa_ones();
  constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
  switch (f.specials) {
    case Specials::kIeee:
      if (exponent == f.exponent_ones())
        return mantissa != 0 ? kNan
               : negative    ? -std::numeric_limits<double>::infinity()
                             : std::numeric_limits<double>::infinity();
      break;
    case Specials::kFiniteNan:
      if (exponent == f.exponent_ones() && mantissa == f.mantissa_ones()) return kNan;
      break;
    case Specials::kUnsignedNan:
      if (bits == f.sign_bit()) return kNan;
      break;
    case Specials::kNone:
      break;
  }
  // Exponent 0 holds the subnormals, with the smallest normal exponent and no implicit one.
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, 1 - f.bias - f.mantissa_bits)
                    : std::ldexp(mantissa + (1 << f.mantissa_bits), exponent - f.bias - f.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

uint8_t encode(const SmallFloat& f, double x, bool saturate) {
  const bool negative = std::signbit(x);
  if (std::isnan(x)) return f.nan_bits(negative);
  const int sign = negative ? f.sign_bit() : 0;
  const auto overflow = [&]() -> uint8_t {
    if (saturate || f.specials == Specials::kNone) return static_cast<uint8_t>(sign | f.max_bits());
    if (f.specials == Specials::kIeee) return static_cast<uint8_t>(sign | f.infinity_bits());
    return f.nan_bits(negative);
  };
  const double magnitude = std::fabs(x);
  if (std::isinf(magnitude)) return overflow();
  // Round at the spacing of magnitude's binade (the subnormals' below the smallest normal), half
  // to even; a rounded value past the largest finite one overflows.
  const int min_exponent = 1 - f.bias;
  int e = 0;
  std::frexp(magnitude, &e);  // magnitude = m * 2^e, m in [0.5, 1)
  int exponent = std::max(e - 1, min_exponent);
  const double rounded = std::ldexp(std::nearbyint(std::ldexp(magnitude, f.mantissa_bits - exponent)),
                                    exponent - f.mantissa_bits);
  if (rounded > decode(f, f.max_bits())) return overflow();
  if (rounded == 0) return static_cast<uint8_t>(f.specials == Specials::kUnsignedNan ? 0 : sign);
  std::frexp(rounded, &e);  // rounding may have carried into the next binade
  exponent = e - 1;
  if (exponent < min_exponent)
    return static_cast<uint8_t>(sign | static_cast<int>(std::ldexp(rounded, f.mantissa_bits - min_exponent)));
  const int mantissa =
      static_cast<int>(std::ldexp(rounded, f.mantissa_bits - exponent)) - (1 << f.mantissa_bits);
  return static_cast<uint8_t>(sign | ((exponent + f.bias) << f.mantissa_bits) | mantissa);
}

// ---- float8_e8m0fnu: 2^(bits - 127), 0xFF NaN, no sign ----

double decode_e8m0(uint8_t bits) {
  return bits == 0xFF ? std::numeric_limits<double>::quiet_NaN() : std::ldexp(1.0, bits - 127);
}

// ONNX's rules, on the float32 bits: the exponent field is the result, moved up one when the
// rounding mode says so (and held at the largest power when saturating). "nearest" rounds up
// from 1.5 times the power (the guard bit) with any bit below it set, or when the value is
// normal.
uint8_t encode_e8m0(float x, bool saturate, RoundMode mode) {
  const auto bits = std::bit_cast<uint32_t>(x);
  uint32_t exponent = (bits >> 23) & 0xFF;
  if (exponent == 0xFF) return 0xFF;
  bool round_up = false;
  switch (mode) {
    case RoundMode::kUp:
      round_up = (bits & 0x7FFFFF) != 0;
      break;
    case RoundMode::kDown:
      break;
    case RoundMode::kNearest:
      round_up = (bits & 0x400000) != 0 && ((bits & 0x200000) != 0 || (bits & 0x1FFFFF) != 0 || exponent > 0);
      break;
  }
  if (round_up && !(saturate && exponent == 0xFE)) ++exponent;
  return static_cast<uint8_t>(exponent);
}

// ---- Small integers ----

int int_bits(DType dtype) {
  return dtype == DType::kInt4 || dtype == DType::kUInt4 ? 4 : 2;
}
bool is_signed_int(DType dtype) {
  return dtype == DType::kInt4 || dtype == DType::kInt2;
}
bool is_storage_int(DType dtype) {
  return dtype == DType::kInt4 || dtype == DType::kUInt4 || dtype == DType::kInt2 || dtype == DType::kUInt2;
}

// The low `bits` of `value` as the byte Kiln holds: sign-extended for the signed types.
uint8_t from_low_bits(DType dtype, unsigned value) {
  const int bits = int_bits(dtype);
  const unsigned low = value & ((1u << bits) - 1);
  if (is_signed_int(dtype) && (low >> (bits - 1)) != 0) return static_cast<uint8_t>(low | (0xFFu << bits));
  return static_cast<uint8_t>(low);
}

}  // namespace

double storage_to_double(DType dtype, uint8_t bits) {
  if (dtype == DType::kFloat8E8M0) return decode_e8m0(bits);
  if (is_storage_int(dtype)) return is_signed_int(dtype) ? static_cast<int8_t>(bits) : bits;
  return decode(small_float(dtype), bits);
}

uint8_t storage_float_from_double(DType dtype, double value, const CastOptions& options) {
  if (dtype == DType::kFloat8E8M0)
    return encode_e8m0(static_cast<float>(value), options.saturate, options.e8m0_rounding);
  return encode(small_float(dtype), value, options.saturate);
}

int storage_int_min(DType dtype) {
  return is_signed_int(dtype) ? -(1 << (int_bits(dtype) - 1)) : 0;
}
int storage_int_max(DType dtype) {
  return is_signed_int(dtype) ? (1 << (int_bits(dtype) - 1)) - 1 : (1 << int_bits(dtype)) - 1;
}

uint8_t storage_int_from_double(DType dtype, double value) {
  const double truncated = std::trunc(value);
  if (!(truncated >= storage_int_min(dtype) && truncated <= storage_int_max(dtype))) return 0;
  return static_cast<uint8_t>(static_cast<int>(truncated));
}

uint8_t storage_int_from_integer(DType dtype, int64_t value) {
  return from_low_bits(dtype, static_cast<unsigned>(static_cast<uint64_t>(value) & 0xFFu));
}

int packed_bits(DType dtype) {
  if (dtype == DType::kFloat4E2M1) return 4;
  if (is_storage_int(dtype)) return int_bits(dtype);
  return 8;
}

void unpack_elements(DType dtype, const uint8_t* packed, uint8_t* elements, int64_t count) {
  const int bits = packed_bits(dtype);
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  for (int64_t i = 0; i < count; ++i) {
    const unsigned field = (packed[i / per_byte] >> ((i % per_byte) * bits)) & mask;
    elements[i] = is_storage_int(dtype) ? from_low_bits(dtype, field) : static_cast<uint8_t>(field);
  }
}

void pack_elements(DType dtype, const uint8_t* elements, uint8_t* packed, int64_t count) {
  const int bits = packed_bits(dtype);
  const int per_byte = 8 / bits;
  const unsigned mask = (1u << bits) - 1;
  std::fill_n(packed, packed_size(dtype, count), uint8_t{0});
  for (int64_t i = 0; i < count; ++i)
    packed[i / per_byte] |= static_cast<uint8_t>((elements[i] & mask) << ((i % per_byte) * bits));
}

}  // namespace kiln
