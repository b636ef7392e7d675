// Complex tensors: std::complex elements laid out as numpy lays them out, their ONNX codes and
// names, conversions (between the two widths and from real types; never to a real type, which
// would drop the imaginary part), printing, and numpy's '<c8' / '<c16' files; and the errors:
// arithmetic on them, a conversion that would lose a part.
#include <gtest/gtest.h>

#include <complex>
#include <filesystem>

#include "kiln/npy.hpp"
#include "kiln/tensor.hpp"
#include "test_support.h"

namespace kiln {
namespace {

using kiln::testing::expect_error;
using c64 = std::complex<float>;
using c128 = std::complex<double>;

TEST(ComplexTensor, HasNumpysLayoutNamesAndOnnxCodes) {
  EXPECT_EQ(dtype_size(DType::kComplex64), 8u);
  EXPECT_EQ(dtype_size(DType::kComplex128), 16u);
  EXPECT_EQ(dtype_from_onnx(14), DType::kComplex64);
  EXPECT_EQ(dtype_from_onnx(15), DType::kComplex128);
  EXPECT_EQ(dtype_to_onnx(DType::kComplex128), 15);
  EXPECT_EQ(dtype_from_name("complex64"), DType::kComplex64);
  EXPECT_STREQ(dtype_name(DType::kComplex128), "complex128");
  EXPECT_TRUE(is_moved_only(DType::kComplex64));
  EXPECT_FALSE(is_storage_type(DType::kComplex64));
  const Tensor t = Tensor::from_vector<c64>({{1.f, 2.f}, {-3.f, 0.5f}}, Shape{2});
  const float* parts = static_cast<const float*>(t.raw_data());
  EXPECT_EQ((std::vector<float>(parts, parts + 4)), (std::vector<float>{1.f, 2.f, -3.f, 0.5f}));
}

TEST(ComplexTensor, CastsBetweenWidthsAndFromRealTypes) {
  const Tensor wide = Tensor::from_vector<c128>({{1.25, -2.0}, {1e300, 3.0}}, Shape{2});
  const std::vector<c64> narrow = wide.cast(DType::kComplex64).to_vector<c64>();
  EXPECT_EQ(narrow[0], c64(1.25f, -2.f));
  EXPECT_TRUE(std::isinf(narrow[1].real()));  // past float's range, as numpy gives it
  EXPECT_EQ(narrow[1].imag(), 3.f);
  // A real number is the real part; a strided source is read through its strides.
  const Tensor ints = Tensor::from_vector<int32_t>({1, 2, 3, 4, 5, 6}, Shape{2, 3}).transpose({1, 0});
  EXPECT_EQ(ints.cast(DType::kComplex128).to_vector<c128>(),
            (std::vector<c128>{{1, 0}, {4, 0}, {2, 0}, {5, 0}, {3, 0}, {6, 0}}));
  const Tensor halves = Tensor::from_vector<float>({0.5f, -1.5f}, Shape{2}).cast(DType::kFloat16);
  EXPECT_EQ(halves.cast(DType::kComplex64).to_vector<c64>(), (std::vector<c64>{{0.5f, 0.f}, {-1.5f, 0.f}}));
  // A slice of a complex tensor converts from where it starts.
  EXPECT_EQ(wide.slice(0, 1, 2).cast(DType::kComplex128).to_vector<c128>(),
            (std::vector<c128>{{1e300, 3.0}}));
}

TEST(ComplexTensor, RefusesWhatWouldLoseAPartAndArithmetic) {
  const Tensor t = Tensor::from_vector<c64>({{1.f, 2.f}}, Shape{1});
  expect_error([&] { t.cast(DType::kFloat32); }, ErrorCode::kTypeMismatch,
               {"complex64 does not convert to float32", "imaginary part"});
  expect_error([&] { t.cast(DType::kString); }, ErrorCode::kTypeMismatch,
               {"complex64 does not convert to string"});
  Tensor text = Tensor::empty(Shape{1}, DType::kString);
  expect_error([&] { text.cast(DType::kComplex64); }, ErrorCode::kTypeMismatch,
               {"string does not convert to complex64"});
  expect_error([&] { t.item(); }, ErrorCode::kUnsupported, {"complex64 is a complex type"});
  expect_error([] { Tensor::full(Shape{1}, 1.0, DType::kComplex128); }, ErrorCode::kUnsupported,
               {"complex128 is a complex type"});
}

TEST(ComplexTensor, PrintsRealAndImaginaryParts) {
  const Tensor t = Tensor::from_vector<c64>({{1.f, 2.f}, {-3.f, 0.5f}}, Shape{2});
  EXPECT_EQ(t.to_string(), "[(1,2) (-3,0.5)]\n<Tensor (2,) complex64>");
}

TEST(ComplexTensor, IsWrittenAndReadAsNumpyComplex) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_complex_tensor.npy").string();
  for (const Tensor& t :
       {Tensor::from_vector<c64>({{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}, {7.f, -8.f}}, Shape{2, 2}),
        Tensor::from_vector<c128>({{1e-300, -2.0}}, Shape{1})}) {
    npy::save(path, t);
    const Tensor back = npy::load(path);
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(0, std::memcmp(back.raw_data(), t.raw_data(), t.nbytes()));
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kiln
