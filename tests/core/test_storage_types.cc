// The storage types (8- and 4-bit floats, 4- and 2-bit integers) against closed forms: each
// type's largest value and smallest subnormal, every encoding surviving a trip through double,
// rounding ties, overflow with and without saturation, ONNX's packing. ml_dtypes' conversions check the same
// rules in the op cases (tests/ops/cases/storage_types.py).
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "core/storage_types.h"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {
namespace {

constexpr DType kSmallFloats[] = {DType::kFloat8E4M3FN, DType::kFloat8E4M3FNUZ, DType::kFloat8E5M2,
                                  DType::kFloat8E5M2FNUZ, DType::kFloat4E2M1};

int codes(DType dtype) {
  return dtype == DType::kFloat4E2M1 ? 16 : 256;
}

TEST(StorageTypes, LargestAndSmallestValues) {
  const CastOptions saturate;
  EXPECT_EQ(storage_to_double(DType::kFloat8E4M3FN, 0x7E), 448.0);
  EXPECT_EQ(storage_to_double(DType::kFloat8E4M3FNUZ, 0x7F), 240.0);
  EXPECT_EQ(storage_to_double(DType::kFloat8E5M2, 0x7B), 57344.0);
  EXPECT_EQ(storage_to_double(DType::kFloat8E5M2FNUZ, 0x7F), 57344.0);
  EXPECT_EQ(storage_to_double(DType::kFloat4E2M1, 0x7), 6.0);
  EXPECT_EQ(storage_to_double(DType::kFloat8E4M3FN, 0x01), std::ldexp(1.0, -9));
  EXPECT_EQ(storage_to_double(DType::kFloat8E5M2, 0x01), std::ldexp(1.0, -16));
  EXPECT_EQ(storage_to_double(DType::kFloat8E8M0, 0), std::ldexp(1.0, -127));
  EXPECT_EQ(storage_to_double(DType::kFloat8E8M0, 254), std::ldexp(1.0, 127));
  EXPECT_TRUE(std::isnan(storage_to_double(DType::kFloat8E8M0, 255)));
  EXPECT_TRUE(std::isinf(storage_to_double(DType::kFloat8E5M2, 0x7C)));
  EXPECT_TRUE(std::isnan(storage_to_double(DType::kFloat8E4M3FN, 0xFF)));
  EXPECT_TRUE(std::isnan(storage_to_double(DType::kFloat8E4M3FNUZ, 0x80)));
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E4M3FN, 448.0, saturate), 0x7E);
}

TEST(StorageTypes, EveryEncodingSurvivesDoubleAndBack) {
  const CastOptions exact{false, RoundMode::kUp};
  for (DType dtype : kSmallFloats) {
    for (int bits = 0; bits < codes(dtype); ++bits) {
      const double v = storage_to_double(dtype, static_cast<uint8_t>(bits));
      const uint8_t back = storage_float_from_double(dtype, v, exact);
      if (std::isnan(v)) {
        EXPECT_TRUE(std::isnan(storage_to_double(dtype, back))) << dtype << " " << bits;
      } else {
        EXPECT_EQ(back, bits) << dtype << " " << bits << " = " << v;
      }
    }
  }
  // 2^-127 is a float32 subnormal, whose nonzero mantissa rounds up; rounding down keeps it.
  const CastOptions down{true, RoundMode::kDown};
  for (int bits = 0; bits < 256; ++bits)
    EXPECT_EQ(
        storage_float_from_double(DType::kFloat8E8M0,
                                  storage_to_double(DType::kFloat8E8M0, static_cast<uint8_t>(bits)), down),
        bits);
}

TEST(StorageTypes, RoundsHalfToEven) {
  const CastOptions options;
  // 1 + 1/16 lies halfway between 1 and 1.125 (E4M3's spacing at 1): to 1, the even mantissa.
  EXPECT_EQ(storage_to_double(DType::kFloat8E4M3FN,
                              storage_float_from_double(DType::kFloat8E4M3FN, 1.0625, options)),
            1.0);
  EXPECT_EQ(storage_to_double(DType::kFloat8E4M3FN,
                              storage_float_from_double(DType::kFloat8E4M3FN, 1.1875, options)),
            1.25);
  // float4: 0.25 between 0 and 0.5 goes to 0; 2.5 between 2 and 3 to 2; 3.5 between 3 and 4 to 4.
  EXPECT_EQ(
      storage_to_double(DType::kFloat4E2M1, storage_float_from_double(DType::kFloat4E2M1, 0.25, options)),
      0.0);
  EXPECT_EQ(
      storage_to_double(DType::kFloat4E2M1, storage_float_from_double(DType::kFloat4E2M1, 2.5, options)),
      2.0);
  EXPECT_EQ(
      storage_to_double(DType::kFloat4E2M1, storage_float_from_double(DType::kFloat4E2M1, 3.5, options)),
      4.0);
  // 464 is halfway from 448 to the 480 E4M3FN lacks: it stays 448; just past it overflows.
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E4M3FN, 464.0, {false, RoundMode::kUp}), 0x7E);
  EXPECT_TRUE(std::isnan(
      storage_to_double(DType::kFloat8E4M3FN,
                        storage_float_from_double(DType::kFloat8E4M3FN, 465.0, {false, RoundMode::kUp}))));
}

TEST(StorageTypes, OverflowSaturatesOrNot) {
  const double inf = std::numeric_limits<double>::infinity();
  const CastOptions saturate{true, RoundMode::kUp}, plain{false, RoundMode::kUp};
  EXPECT_EQ(
      storage_to_double(DType::kFloat8E5M2, storage_float_from_double(DType::kFloat8E5M2, 1e6, saturate)),
      57344.0);
  EXPECT_EQ(storage_to_double(DType::kFloat8E5M2, storage_float_from_double(DType::kFloat8E5M2, -1e6, plain)),
            -inf);
  EXPECT_EQ(storage_to_double(DType::kFloat8E4M3FN,
                              storage_float_from_double(DType::kFloat8E4M3FN, -inf, saturate)),
            -448.0);
  EXPECT_TRUE(std::isnan(storage_to_double(DType::kFloat8E4M3FNUZ,
                                           storage_float_from_double(DType::kFloat8E4M3FNUZ, inf, plain))));
  // float4_e2m1fn has neither infinity nor NaN: it saturates whatever the option says.
  EXPECT_EQ(storage_to_double(DType::kFloat4E2M1, storage_float_from_double(DType::kFloat4E2M1, inf, plain)),
            6.0);
  // The fnuz types have no negative zero.
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E5M2FNUZ, -1e-30, saturate), 0);
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E5M2, -1e-30, saturate), 0x80);
}

TEST(StorageTypes, E8M0RoundingModes) {
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E8M0, 3.0, {true, RoundMode::kUp}), 129);
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E8M0, 3.0, {true, RoundMode::kDown}), 128);
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E8M0, 1.25, {true, RoundMode::kNearest}), 127);
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E8M0, 1.75, {true, RoundMode::kNearest}), 128);
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E8M0, 3e38, {true, RoundMode::kUp}), 254);
  EXPECT_EQ(storage_float_from_double(DType::kFloat8E8M0, 3e38, {false, RoundMode::kUp}), 255);
}

TEST(StorageTypes, SmallIntegers) {
  EXPECT_EQ(storage_int_min(DType::kInt4), -8);
  EXPECT_EQ(storage_int_max(DType::kUInt2), 3);
  EXPECT_EQ(static_cast<int8_t>(storage_int_from_double(DType::kInt4, -7.9)), -7);
  EXPECT_EQ(storage_int_from_double(DType::kInt4, 8.0), 0);  // out of range
  EXPECT_EQ(storage_int_from_double(DType::kUInt4, std::nan("")), 0);
  EXPECT_EQ(static_cast<int8_t>(storage_int_from_integer(DType::kInt4, 9)), -7);  // 0b1001 wraps
  EXPECT_EQ(storage_int_from_integer(DType::kUInt2, -1), 3);
  EXPECT_EQ(storage_to_double(DType::kInt2, static_cast<uint8_t>(int8_t{-2})), -2.0);
}

TEST(StorageTypes, PackingKeepsEveryElement) {
  for (DType dtype : {DType::kInt4, DType::kUInt4, DType::kFloat4E2M1, DType::kInt2, DType::kUInt2}) {
    for (int64_t count : {0, 1, 2, 3, 5, 8, 9}) {
      std::vector<uint8_t> elements(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) {
        const auto raw = static_cast<uint8_t>(i * 7 + 3);
        elements[static_cast<size_t>(i)] = dtype == DType::kFloat4E2M1 ? static_cast<uint8_t>(raw & 0xF)
                                                                       : storage_int_from_integer(dtype, raw);
      }
      std::vector<uint8_t> packed(static_cast<size_t>(packed_size(dtype, count)));
      pack_elements(dtype, elements.data(), packed.data(), count);
      std::vector<uint8_t> back(static_cast<size_t>(count));
      unpack_elements(dtype, packed.data(), back.data(), count);
      EXPECT_EQ(back, elements) << dtype << " x" << count;
    }
  }
  // The first element takes the lowest bits.
  const uint8_t elements[] = {0x1, 0xF};
  uint8_t packed = 0;
  pack_elements(DType::kUInt4, elements, &packed, 2);
  EXPECT_EQ(packed, 0xF1);
}

TEST(StorageTypes, TensorCastsThroughExactValues) {
  const Tensor x = Tensor::from_vector<float>({0.5f, -3.0f, 1000.0f, 0.1f}, Shape{4});
  const Tensor f8 = x.cast(DType::kFloat8E4M3FN);
  EXPECT_EQ(f8.dtype(), DType::kFloat8E4M3FN);
  EXPECT_EQ(f8.itemsize(), 1u);
  EXPECT_EQ(f8.cast(DType::kFloat32).to_vector<float>(),
            (std::vector<float>{0.5f, -3.0f, 448.0f, 0.1015625f}));
  const Tensor unsaturated = x.cast(DType::kFloat8E5M2, {false, RoundMode::kUp});
  EXPECT_EQ(unsaturated.cast(DType::kFloat32).to_vector<float>()[2], 1024.0f);
  const Tensor i4 = Tensor::from_vector<int32_t>({-9, 7, 8, -8}, Shape{4}).cast(DType::kInt4);
  EXPECT_EQ(i4.cast(DType::kInt64).to_vector<int64_t>(), (std::vector<int64_t>{7, 7, -8, -8}));
  EXPECT_EQ(i4.cast(DType::kUInt2).cast(DType::kInt32).to_vector<int32_t>(),
            (std::vector<int32_t>{3, 3, 0, 0}));
  EXPECT_NE(f8.to_string().find("448"), std::string::npos);
}

}  // namespace
}  // namespace kiln
