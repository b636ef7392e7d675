#include "kiln/half.hpp"

namespace kiln {

uint16_t float_to_half_bits(float value) {
  const uint32_t u = detail::float_bits(value);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u)
    return sign | 0x7e00u | static_cast<uint16_t>((abs >> 13) & 0x3ffu);  // NaN stays NaN
  // 65520 = 0x477ff000 is halfway between the largest half (65504) and 2^16; ties go to even,
  // which is the infinity side, so everything from there up overflows.
  if (abs >= 0x477ff000u) return sign | 0x7c00u;
  if (abs >= 0x38800000u) {  // a normal half: rebias the exponent (127 -> 15) and round 13 bits away
    uint32_t m = abs - 0x38000000u;
    m += 0xfffu + ((m >> 13) & 1u);
    return sign | static_cast<uint16_t>(m >> 13);
  }
  if (abs <= 0x33000000u) return sign;  // at or below 2^-25, half of the smallest subnormal: rounds to zero
  // A subnormal half counts units of 2^-24; shift the 24-bit significand down to that unit.
  const uint32_t exponent = abs >> 23;
  const uint32_t significand = (abs & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;
  uint32_t result = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  return sign | static_cast<uint16_t>(result);
}

float half_bits_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1fu;
  const uint32_t mantissa = bits & 0x3ffu;
  if (exponent == 0) {
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return detail::bits_float(sign | 0x7f800000u | (mantissa << 13));
  return detail::bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

}  // namespace kiln
