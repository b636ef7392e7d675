// Shapes, dtype conversions, tensor views and copies.
#include <cmath>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/allocator.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln {
namespace {

TEST(Shape, PrintsLikeNumpyAndCountsElements) {
  EXPECT_EQ(Shape({3, 4}).to_string(), "(3, 4)");
  EXPECT_EQ(Shape({7}).to_string(), "(7,)");
  EXPECT_EQ(Shape({}).to_string(), "()");
  EXPECT_EQ(Shape({-1, 3}).to_string(), "(?, 3)");
  EXPECT_EQ(Shape({}).numel(), 1);
  EXPECT_EQ(Shape({2, 0, 5}).numel(), 0);
  EXPECT_EQ(Shape({-1, 3}).numel(), -1);
}

TEST(Shape, ElementCountsNeverOverflow) {
  EXPECT_EQ(Shape({0, int64_t{1} << 40, int64_t{1} << 40}).numel(), 0);
  try {
    Shape({int64_t{1} << 40, int64_t{1} << 40}).numel();
    FAIL() << "expected an overflow error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
  }
  EXPECT_EQ(contiguous_strides(Shape({int64_t{1} << 40, int64_t{1} << 40, 0})).size(), 3u);
}

TEST(Shape, BroadcastFollowsNumpy) {
  EXPECT_EQ(broadcast_shapes({3, 1}, {1, 4}, "t"), Shape({3, 4}));
  EXPECT_EQ(broadcast_shapes({2, 1, 5}, {3, 1}, "t"), Shape({2, 3, 5}));
  EXPECT_EQ(broadcast_shapes({}, {4}, "t"), Shape({4}));
  EXPECT_EQ(broadcast_shapes({0, 3}, {1, 3}, "t"), Shape({0, 3}));
  EXPECT_EQ(broadcast_shapes({-1, 3}, {5, 1}, "t"), Shape({5, 3}));
  try {
    broadcast_shapes({2, 3}, {4, 3}, "Add");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShapeMismatch);
    EXPECT_STREQ(e.what(),
                 "Add: shapes (2, 3) and (4, 3) cannot be broadcast together (dimension 0: 2 vs 4)");
  }
}

TEST(Shape, NormalizeAxisChecksTheRange) {
  EXPECT_EQ(normalize_axis(-1, 3, "t"), 2);
  EXPECT_EQ(normalize_axis(0, 3, "t"), 0);
  try {
    normalize_axis(3, 3, "Softmax");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfRange);
    EXPECT_NE(std::string(e.what()).find("axis 3 is out of range for a tensor of rank 3"), std::string::npos);
  }
  EXPECT_THROW(normalize_axis(-4, 3, "t"), Error);
}

TEST(DType, SizesNamesAndOnnxCodes) {
  EXPECT_EQ(dtype_size(DType::kBFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kInt64), 8u);
  EXPECT_EQ(dtype_size(DType::kBool), 1u);
  for (DType d : kComputeDTypes) {
    EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
    EXPECT_EQ(dtype_from_onnx(dtype_to_onnx(d)), d);
  }
  EXPECT_EQ(dtype_to_onnx(DType::kFloat32), 1);
  EXPECT_EQ(dtype_to_onnx(DType::kBFloat16), 16);
  EXPECT_EQ(dtype_from_onnx(8), DType::kString);
  EXPECT_THROW(dtype_from_onnx(99), Error);
  EXPECT_THROW(dtype_from_name("float8"), Error);
}

TEST(Tensor, CastsBetweenEveryPairOfDtypes) {
  // Small integers survive every dtype; bool maps nonzero to true.
  const std::vector<double> values = {0, 1, 2, 3, 100, 127};
  for (DType from : kComputeDTypes) {
    for (DType to : kComputeDTypes) {
      Tensor t = Tensor::from_vector(values, Shape{6}).cast(from).cast(to).cast(DType::kFloat64);
      const auto got = t.to_vector<double>();
      for (size_t i = 0; i < values.size(); ++i) {
        double expected = values[i];
        if (from == DType::kBool || to == DType::kBool) expected = values[i] != 0 ? 1 : 0;
        EXPECT_EQ(got[i], expected) << dtype_name(from) << " -> " << dtype_name(to) << " at " << i;
      }
    }
  }
}

TEST(Tensor, FloatToIntegerTruncatesAndHalfRounds) {
  Tensor f = Tensor::from_vector<float>({1.7f, -1.7f, 2.5f, 65519.0f, 65520.0f}, Shape{5});
  EXPECT_EQ(f.cast(DType::kInt32).to_vector<int32_t>(), (std::vector<int32_t>{1, -1, 2, 65519, 65520}));
  const auto h = f.cast(DType::kFloat16).cast(DType::kFloat32).to_vector<float>();
  EXPECT_EQ(h[2], 2.5f);
  EXPECT_EQ(h[3], 65504.0f);
  EXPECT_TRUE(std::isinf(h[4]));
}

TEST(Tensor, FloatToIntegerSaturatesOutOfRangeAndMapsNanToZero) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Tensor d = Tensor::from_vector<double>({1e3, -1e3, nan, 127.9, -128.9, 1e300, -0.5}, Shape{7});
  EXPECT_EQ(d.cast(DType::kInt8).to_vector<int8_t>(), (std::vector<int8_t>{127, -128, 0, 127, -128, 127, 0}));
  EXPECT_EQ(d.cast(DType::kUInt8).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 0, 0, 127, 0, 255, 0}));
  const Tensor big =
      Tensor::from_vector<float>({2e19f, -1e19f, 0x1p63f}, Shape{3});  // 2^63 is just past int64
  const std::vector<int64_t> want = {std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(),
                                     std::numeric_limits<int64_t>::max()};
  EXPECT_EQ(big.cast(DType::kInt64).to_vector<int64_t>(), want);
  EXPECT_EQ(big.cast(DType::kUInt64).to_vector<uint64_t>()[0], std::numeric_limits<uint64_t>::max());
}

TEST(Tensor, ViewsShareStorageAndCopiesDoNot) {
  Tensor t = Tensor::from_vector<int32_t>({0, 1, 2, 3, 4, 5}, Shape{2, 3});
  Tensor r = t.reshape({3, 2});
  EXPECT_EQ(r.storage(), t.storage());
  Tensor tr = t.transpose({1, 0});
  EXPECT_EQ(tr.storage(), t.storage());
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.to_vector<int32_t>(), (std::vector<int32_t>{0, 3, 1, 4, 2, 5}));
  Tensor s = t.slice(1, 0, 3, 2);
  EXPECT_EQ(s.shape(), Shape({2, 2}));
  EXPECT_EQ(s.to_vector<int32_t>(), (std::vector<int32_t>{0, 2, 3, 5}));
  Tensor s_neg = t.slice(-1, -2, 100);
  EXPECT_EQ(s_neg.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 4, 5}));
  t.data<int32_t>()[0] = 42;
  EXPECT_EQ(tr.to_vector<int32_t>()[0], 42);
  Tensor c = tr.contiguous();
  EXPECT_NE(c.storage(), t.storage());
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_THROW(tr.reshape({6}), Error);      // not contiguous
  EXPECT_THROW(t.reshape({4, 2}), Error);    // wrong element count
  EXPECT_THROW(t.transpose({0, 0}), Error);  // repeated axis
  EXPECT_THROW(t.data<float>(), Error);      // wrong dtype
}

TEST(Tensor, StridedCopyIntoAView) {
  Tensor dst = Tensor::zeros({3, 4}, DType::kFloat32);
  Tensor src = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
  dst.slice(1, 1, 4).slice(0, 0, 2).copy_from(src);
  EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 0, 4, 5, 6, 0, 0, 0, 0}));
  EXPECT_THROW(dst.copy_from(src), Error);
}

// contiguous() of permuted, stepped and broadcast views, for 1-, 2-, 4- and 8-byte items, against
// the element each index names (value (i * 40 + j) * 50 + k, mod 97, of a (6, 40, 50) source).
TEST(Tensor, ContiguousCopiesOfViewsHoldTheElementsTheyIndex) {
  const auto value = [](int64_t i, int64_t j, int64_t k) { return ((i * 40 + j) * 50 + k) % 97; };
  std::vector<int64_t> iota(6 * 40 * 50);
  for (int64_t i = 0; i < 6; ++i)
    for (int64_t j = 0; j < 40; ++j)
      for (int64_t k = 0; k < 50; ++k) iota[static_cast<size_t>((i * 40 + j) * 50 + k)] = value(i, j, k);
  const Tensor source64 = Tensor::from_vector<int64_t>(iota, Shape{6, 40, 50});
  for (const DType dtype : {DType::kInt8, DType::kFloat16, DType::kInt32, DType::kInt64}) {
    SCOPED_TRACE(dtype_name(dtype));
    const Tensor source = source64.cast(dtype);
    // (k, i, j) with j = 3, 5, ..., 35: the source's dense axis moves outward (a transposition).
    const Tensor permuted = source.transpose({2, 0, 1}).slice(2, 3, 37, 2).contiguous();
    ASSERT_EQ(permuted.shape(), Shape({50, 6, 17}));
    const auto p = permuted.cast(DType::kInt64).to_vector<int64_t>();
    for (int64_t k = 0; k < 50; ++k)
      for (int64_t i = 0; i < 6; ++i)
        for (int64_t jj = 0; jj < 17; ++jj)
          ASSERT_EQ(p[static_cast<size_t>((k * 6 + i) * 17 + jj)], value(i, 3 + 2 * jj, k))
              << k << ' ' << i << ' ' << jj;
    // Rows cut short on both ends and every other block: the dense axis stays innermost.
    const Tensor rows = source.slice(0, 1, 6, 2).slice(2, 1, 49).contiguous();
    const auto r = rows.cast(DType::kInt64).to_vector<int64_t>();
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 40; ++j)
        for (int64_t k = 0; k < 48; ++k)
          ASSERT_EQ(r[static_cast<size_t>((i * 40 + j) * 48 + k)], value(1 + 2 * i, j, 1 + k))
              << i << ' ' << j << ' ' << k;
    // Row 2 of block 4 repeated 3 x 5 times (stride 0), as broadcasting reads it.
    const Tensor repeated = source.as_strided(Shape{3, 5, 50}, Dims{0, 0, 1}, (4 * 40 + 2) * 50).contiguous();
    const auto b = repeated.cast(DType::kInt64).to_vector<int64_t>();
    for (int64_t n = 0; n < 15; ++n)
      for (int64_t k = 0; k < 50; ++k)
        ASSERT_EQ(b[static_cast<size_t>(n * 50 + k)], value(4, 2, k)) << n << ' ' << k;
  }
}

TEST(Tensor, ScalarsLiveInsideTheirStorage) {
  const auto before = allocator_stats();
  Tensor s = Tensor::scalar(2.5, DType::kFloat16);
  EXPECT_EQ(allocator_stats().num_allocations, before.num_allocations);
  EXPECT_EQ(s.item(), 2.5);
  EXPECT_EQ(s.ndim(), 0);
}

TEST(Tensor, PrintsNestedValues) {
  Tensor t = Tensor::from_vector<float>({1, 2, 3, 4}, Shape{2, 2});
  EXPECT_EQ(t.to_string(), "[[1 2]\n [3 4]]\n<Tensor (2, 2) float32>");
  Tensor big = Tensor::zeros({100}, DType::kInt8);
  EXPECT_NE(big.to_string(10).find("..."), std::string::npos);
}

}  // namespace
}  // namespace kiln
