// .npy files written by numpy (tests/fuzz/corpus/npy) read back exactly; Kiln's own files
// round-trip; malformed input is rejected with kiln::Error.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "kiln/error.hpp"
#include "kiln/npy.hpp"

namespace kiln {
namespace {

const std::string kCorpus = std::string(KILN_SOURCE_DIR) + "/tests/fuzz/corpus/npy/";

TEST(Npy, ReadsFilesNumpyWrote) {
  Tensor f = npy::load(kCorpus + "f32_2x3.npy");  // np.arange(6, float32).reshape(2, 3)
  EXPECT_EQ(f.shape(), Shape({2, 3}));
  EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  Tensor fortran = npy::load(kCorpus + "i64_fortran.npy");  // same values, Fortran order
  EXPECT_EQ(fortran.shape(), Shape({2, 3}));
  EXPECT_EQ(fortran.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  Tensor empty = npy::load(kCorpus + "bool_empty.npy");
  EXPECT_EQ(empty.shape(), Shape({0, 4}));
  EXPECT_EQ(empty.dtype(), DType::kBool);
  Tensor scalar = npy::load(kCorpus + "f16_scalar.npy");
  EXPECT_EQ(scalar.ndim(), 0);
  EXPECT_EQ(scalar.item(), 1.5);
}

// numpy reads any nonzero byte of a bool array as True; a C++ bool may only hold 0 or 1, so the
// reader keeps the truth value (found by the labels fuzz target: reading byte 101 as bool is UB).
TEST(Npy, BoolBytesOtherThanZeroAndOneAreTrue) {
  const std::string path = ::testing::TempDir() + "/kiln_bool_bytes.npy";
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }";
  header.append(128 - 10 - header.size() - 1, ' ');  // the data starts 64-byte aligned
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  out << "\x93NUMPY" << '\x01' << '\x00' << static_cast<char>(header.size()) << '\x00' << header;
  out << '\x00' << '\x01' << static_cast<char>(101) << static_cast<char>(255);
  out.close();
  const Tensor t = npy::load(path);
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  EXPECT_EQ(std::vector<int>(bytes, bytes + 4), (std::vector<int>{0, 1, 1, 1}));
}

TEST(Npy, RoundTripsEveryDtype) {
  const std::string path = ::testing::TempDir() + "/kiln_roundtrip.npy";
  for (DType d : kComputeDTypes) {
    Tensor t = Tensor::from_vector<double>({0, 1, 2, 3, 4, 5}, Shape{3, 2}).cast(d);
    npy::save(path, t);
    Tensor back = npy::load(path);
    EXPECT_EQ(back.dtype(), d);
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.cast(DType::kFloat64).to_vector<double>(), t.cast(DType::kFloat64).to_vector<double>());
  }
}

TEST(Npy, RejectsMalformedInput) {
  auto read = [](const std::string& bytes) {
    std::istringstream in(bytes);
    return npy::read(in, "test");
  };
  EXPECT_THROW(read("not numpy"), Error);
  const std::string magic("\x93NUMPY\x01\x00", 8);
  auto with_header = [&](const std::string& h) {
    const char len[2] = {static_cast<char>(h.size() & 0xff), static_cast<char>(h.size() >> 8)};
    return magic + std::string(len, 2) + h;
  };
  // Claims far more data than present: rejected before allocating.
  try {
    read(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000, 1000000000), }\n"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("needs more data"), std::string::npos) << e.what();
  }
  EXPECT_THROW(read(with_header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }\n") + "abcd"),
               Error);
  EXPECT_THROW(read(with_header("{'descr': '<m8', 'fortran_order': False, 'shape': (1,), }\n") + "abcdefgh"),
               Error);
  // A text width whose bytes overflow is refused; one that no element uses allocates nothing.
  try {
    read(with_header("{'descr': '<U7015607419526039320', 'fortran_order': False, 'shape': (3,), }\n"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("text width 7015607419526039320"), std::string::npos) << e.what();
  }
  EXPECT_EQ(
      read(with_header("{'descr': '<U1000000000000', 'fortran_order': False, 'shape': (0,), }\n")).numel(),
      0);
  EXPECT_THROW(read(with_header("{'descr': '<f4', 'shape': (1,), }\n")), Error);
  EXPECT_THROW(read(with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n") + "abcd"),
               Error);
  EXPECT_THROW(npy::load("/nonexistent/file.npy"), Error);
}

}  // namespace
}  // namespace kiln
