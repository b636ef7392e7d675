// 16-bit floating-point storage types. Arithmetic happens in float: each type converts to
// float implicitly and from float explicitly, rounding to nearest, ties to even.
#pragma once

#include <cstdint>
#include <cstring>

namespace kiln {

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
}  // namespace detail

// IEEE 754 binary16 <-> binary32, bit-exact, including subnormals, infinities and NaN.
uint16_t float_to_half_bits(float value);
float half_bits_to_float(uint16_t bits);

// bfloat16 is the top half of a binary32: widening is a shift, narrowing rounds to even.
inline uint16_t float_to_bfloat16_bits(float value) {
  uint32_t u = detail::float_bits(value);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bfloat16_bits_to_float(uint16_t bits) {
  return detail::bits_float(static_cast<uint32_t>(bits) << 16);
}

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  explicit float16(float v) : bits(float_to_half_bits(v)) {}
  explicit float16(double v) : float16(static_cast<float>(v)) {}
  operator float() const { return half_bits_to_float(bits); }
  static float16 from_bits(uint16_t b) {
    float16 h;
    h.bits = b;
    return h;
  }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float v) : bits(float_to_bfloat16_bits(v)) {}
  explicit bfloat16(double v) : bfloat16(static_cast<float>(v)) {}
  operator float() const { return bfloat16_bits_to_float(bits); }
  static bfloat16 from_bits(uint16_t b) {
    bfloat16 h;
    h.bits = b;
    return h;
  }
};

}  // namespace kiln
