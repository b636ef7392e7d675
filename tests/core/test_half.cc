// 16-bit float conversions against closed forms: exact values, rounding ties, subnormals,
// overflow, infinities and NaN.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "kiln/half.hpp"

namespace kiln {
namespace {

TEST(Float16, ExactValuesRoundTrip) {
  for (float v : {0.0f, 1.0f, -2.0f, 0.5f, 65504.0f, -65504.0f, 6.103515625e-05f /* 2^-14 */,
                  5.9604644775390625e-08f /* 2^-24 */}) {
    EXPECT_EQ(static_cast<float>(float16(v)), v) << v;
  }
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(-2.0f).bits, 0xc000);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float16(5.9604644775390625e-08f).bits, 0x0001);
}

TEST(Float16, EveryHalfSurvivesFloatAndBack) {
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float16 h = float16::from_bits(static_cast<uint16_t>(b));
    const float f = h;
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(static_cast<float>(float16(f))));
    } else {
      EXPECT_EQ(float16(f).bits, h.bits) << std::hex << b;
    }
  }
}

TEST(Float16, RoundsToNearestEven) {
  // 1 + 2^-11 is halfway between 1 and the next half (1 + 2^-10): ties go to the even one, 1.
  EXPECT_EQ(float16(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  // 1 + 3*2^-11 is halfway between 1+2^-10 (odd mantissa) and 1+2^-9: goes up to the even one.
  EXPECT_EQ(float16(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  // Just above the tie rounds up.
  EXPECT_EQ(float16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)).bits, 0x3c01);
  // Subnormal tie: 2.5 * 2^-24 rounds to 2 * 2^-24, 3.5 * 2^-24 to 4 * 2^-24.
  EXPECT_EQ(float16(2.5f * std::ldexp(1.0f, -24)).bits, 0x0002);
  EXPECT_EQ(float16(3.5f * std::ldexp(1.0f, -24)).bits, 0x0004);
  // Half of the smallest subnormal is a tie with zero: zero is even.
  EXPECT_EQ(float16(std::ldexp(1.0f, -25)).bits, 0x0000);
  EXPECT_EQ(float16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)).bits, 0x0001);
}

TEST(Float16, OverflowInfinityAndNaN) {
  EXPECT_EQ(float16(65519.0f).bits, 0x7bff);  // below the tie: largest finite
  EXPECT_EQ(float16(65520.0f).bits, 0x7c00);  // the tie goes to even: infinity
  EXPECT_EQ(float16(1e10f).bits, 0x7c00);
  EXPECT_EQ(float16(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
  EXPECT_TRUE(std::isnan(static_cast<float>(float16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(float16(-0.0f).bits, 0x8000);
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1).
  EXPECT_EQ(bfloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  // 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6: up to even.
  EXPECT_EQ(bfloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  EXPECT_EQ(static_cast<float>(bfloat16(3.0f)), 3.0f);
  EXPECT_TRUE(std::isnan(static_cast<float>(bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::infinity()).bits, 0x7f80);
  // The largest float rounds up past the largest bfloat16 to infinity.
  EXPECT_EQ(bfloat16(std::numeric_limits<float>::max()).bits, 0x7f80);
}

}  // namespace
}  // namespace kiln
