// MXNet's `.params` format: an NDArray list as `NDArray::Save(stream, arrays, names)` writes it.
//
//   uint64 0x112 (list magic), uint64 reserved, uint64 array count, arrays...,
//   uint64 name count (0 or the array count), names as (uint64 length, bytes)...
//
// One array, by record layout (all integers little-endian):
//   V2 0xF993fac9 / V3 0xF993faca: magic, int32 storage type, shape, context, type flag, data
//   V1 0xF993fac8:                  magic, shape, context, type flag, data
//   legacy (no magic):             uint32 ndim, ndim x uint32 dims, context, type flag, data
// where shape = int32 ndim + ndim x int64 dims, context = int32 dev_type + int32 dev_id, and
// the type flag is an mshadow type code. Under V2 and older an ndim of 0 marks a "none" array
// and the record ends after the shape; V3 (numpy shape semantics) marks it with ndim -1 or a
// -1 dimension instead, and 0-d arrays are scalars.
#include <bit>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "core/bool_bytes.h"
#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet {
namespace {

static_assert(std::endian::native == std::endian::little,
              "MXNet files are little-endian; data is copied as is");

constexpr uint64_t kListMagic = 0x112;
constexpr uint32_t kMagicV1 = 0xF993fac8;
constexpr uint32_t kMagicV2 = 0xF993fac9;
constexpr uint32_t kMagicV3 = 0xF993faca;
constexpr int32_t kDefaultStorage = 0;
constexpr int32_t kCpuDevType = 1;

// Reads little-endian fields and refuses any size the remaining bytes cannot back, so a
// corrupt count or shape never turns into a large allocation.
class Reader {
 public:
  Reader(std::istream& in, const std::string& source) : in_(in), source_(source) {
    const std::streampos start = in.tellg();
    in.seekg(0, std::ios::end);
    const std::streampos end = in.tellg();
    in.seekg(start);
    KILN_CHECK(start != std::streampos(-1) && end != std::streampos(-1) && in.good(), ErrorCode::kIo, source,
               ": cannot determine the size of the input");
    remaining_ = static_cast<uint64_t>(end - start);
  }

  uint64_t remaining() const { return remaining_; }
  const std::string& source() const { return source_; }

  void need(uint64_t bytes, const std::string& what) const {
    KILN_CHECK(bytes <= remaining_, ErrorCode::kIo, source_, ": truncated at ", what, ": expected ", bytes,
               " bytes, ", remaining_, " remain");
  }

  void bytes(void* dst, uint64_t n, const std::string& what) {
    need(n, what);
    in_.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
    KILN_CHECK(static_cast<uint64_t>(in_.gcount()) == n, ErrorCode::kIo, source_, ": read failed at ", what);
    remaining_ -= n;
  }

  template <class T>
  T scalar(const std::string& what) {
    unsigned char b[sizeof(T)];
    bytes(b, sizeof(T), what);
    std::make_unsigned_t<T> v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::make_unsigned_t<T>>(b[i]) << (8 * i);
    return static_cast<T>(v);
  }

 private:
  std::istream& in_;
  const std::string& source_;
  uint64_t remaining_ = 0;
};

// A shape with int64 dimensions (V1 and newer). Returns false for MXNet's "none" marker.
bool read_shape(Reader& r, uint32_t magic, std::vector<int64_t>& dims, const std::string& where) {
  const int32_t ndim = r.scalar<int32_t>(where + " ndim");
  if (magic == kMagicV3 && ndim == -1) return false;
  KILN_CHECK(ndim >= 0, ErrorCode::kIo, r.source(), ": ", where, ": invalid ndim ", ndim);
  r.need(static_cast<uint64_t>(ndim) * 8, where + " shape");
  bool known = true;
  for (int32_t i = 0; i < ndim; ++i) {
    const int64_t d = r.scalar<int64_t>(where + " shape");
    const bool unknown = magic == kMagicV3 && d == -1;
    KILN_CHECK(d >= 0 || unknown, ErrorCode::kIo, r.source(), ": ", where, ": invalid dimension ", d,
               " at axis ", i);
    known &= !unknown;
    dims.push_back(d);
  }
  if (!known) return false;
  return magic == kMagicV3 || ndim > 0;
}

// A legacy shape: `ndim` (read in place of a magic) uint32 dimensions. ndim 0 is "none".
bool read_legacy_shape(Reader& r, uint32_t ndim, std::vector<int64_t>& dims, const std::string& where) {
  r.need(static_cast<uint64_t>(ndim) * 4, where + " shape (no known record magic, so the first word, " +
                                              std::to_string(ndim) + ", is read as a legacy ndim)");
  for (uint32_t i = 0; i < ndim; ++i) dims.push_back(r.scalar<uint32_t>(where + " legacy shape"));
  return ndim > 0;
}

Tensor read_array(Reader& r, const std::string& where) {
  const uint32_t magic = r.scalar<uint32_t>(where + " magic");
  std::vector<int64_t> dims;
  bool defined = false;
  if (magic == kMagicV2 || magic == kMagicV3) {
    const int32_t stype = r.scalar<int32_t>(where + " storage type");
    KILN_CHECK(stype != 1 && stype != 2, ErrorCode::kUnsupported, r.source(), ": ", where,
               ": sparse storage (", stype == 1 ? "row_sparse" : "csr", ") is not supported");
    KILN_CHECK(stype == kDefaultStorage, ErrorCode::kIo, r.source(), ": ", where, ": unknown storage type ",
               stype);
    defined = read_shape(r, magic, dims, where);
  } else if (magic == kMagicV1) {
    defined = read_shape(r, magic, dims, where);
  } else {
    defined = read_legacy_shape(r, magic, dims, where);
  }
  if (!defined) return Tensor();

  r.scalar<int32_t>(where + " context device type");  // arrays saved from a GPU load onto the CPU
  r.scalar<int32_t>(where + " context device id");
  const DType dtype =
      dtype_from_mxnet_flag(r.scalar<int32_t>(where + " type flag"), r.source() + ": " + where);

  // The element count is checked against the bytes that remain before anything is allocated.
  // An empty array holds no data, but the product of its other dimensions must still fit in
  // int64 so that element counts and strides stay defined.
  uint64_t count = 1;
  bool empty = false;
  for (const int64_t d : dims) {
    empty |= d == 0;
    KILN_CHECK(d == 0 || (!__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) &&
                          count <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())),
               ErrorCode::kIo, r.source(), ": ", where, ": shape ", Shape(dims), " has too many elements");
  }
  const uint64_t itemsize = dtype_size(dtype);
  KILN_CHECK(empty || count <= r.remaining() / itemsize, ErrorCode::kIo, r.source(), ": ", where, ": shape ",
             Shape(dims), " ", dtype_name(dtype), " needs ", count, " x ", itemsize, " bytes of data, ",
             r.remaining(), " remain");
  Tensor t = Tensor::empty(Shape(dims), dtype);
  r.bytes(t.raw_data(), empty ? 0 : count * itemsize, where + " data");
  if (dtype == DType::kBool) canonicalize_bool_bytes(t.raw_data(), t.nbytes());
  return t;
}

template <class T>
void put(std::ostream& out, T value) {
  char b[sizeof(T)];
  std::memcpy(b, &value, sizeof(T));
  out.write(b, sizeof(T));
}

void write_array(std::ostream& out, const Tensor& tensor, bool numpy_shape) {
  put<uint32_t>(out, numpy_shape ? kMagicV3 : kMagicV2);
  put<int32_t>(out, kDefaultStorage);
  if (!tensor.defined()) {
    put<int32_t>(out, 0);  // the V2 "none" marker
    return;
  }
  const Tensor t = tensor.contiguous();
  put<int32_t>(out, t.ndim());
  for (const int64_t d : t.shape()) put<int64_t>(out, d);
  put<int32_t>(out, kCpuDevType);
  put<int32_t>(out, 0);
  put<int32_t>(out, mxnet_flag_from_dtype(t.dtype()));
  if (t.nbytes()) out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.nbytes()));
}

}  // namespace

int32_t mxnet_flag_from_dtype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 0;
    case DType::kFloat64:
      return 1;
    case DType::kFloat16:
      return 2;
    case DType::kUInt8:
      return 3;
    case DType::kInt32:
      return 4;
    case DType::kInt8:
      return 5;
    case DType::kInt64:
      return 6;
    case DType::kBool:
      return 7;
    case DType::kInt16:
      return 8;
    case DType::kUInt16:
      return 9;
    case DType::kUInt32:
      return 10;
    case DType::kUInt64:
      return 11;
    case DType::kBFloat16:
      return 12;
    default:
      break;
  }
  raise(ErrorCode::kUnsupported, "mxnet: MXNet has no type flag for ", dtype_name(dtype),
        "; cast it to a wider type first");
}

// mshadow type flags.
DType dtype_from_mxnet_flag(int64_t flag, const std::string& where) {
  switch (flag) {
    case 0:
      return DType::kFloat32;
    case 1:
      return DType::kFloat64;
    case 2:
      return DType::kFloat16;
    case 3:
      return DType::kUInt8;
    case 4:
      return DType::kInt32;
    case 5:
      return DType::kInt8;
    case 6:
      return DType::kInt64;
    case 7:
      return DType::kBool;
    case 8:
      return DType::kInt16;
    case 9:
      return DType::kUInt16;
    case 10:
      return DType::kUInt32;
    case 11:
      return DType::kUInt64;
    case 12:
      return DType::kBFloat16;
  }
  raise(ErrorCode::kIo, where, ": unknown type flag ", flag, " (expected an mshadow type code 0-12)");
}

NamedTensors read_params(std::istream& in, const std::string& source) {
  Reader r(in, source);
  const uint64_t magic = r.scalar<uint64_t>("the list magic");
  KILN_CHECK(magic == kListMagic, ErrorCode::kIo, source, ": not an MXNet NDArray file (magic 0x", std::hex,
             magic, ", expected 0x", kListMagic, ")");
  r.scalar<uint64_t>("the reserved field");
  const uint64_t count = r.scalar<uint64_t>("the array count");
  // The smallest record (a legacy "none" array) is 4 bytes.
  KILN_CHECK(count <= r.remaining() / 4, ErrorCode::kIo, source, ": array count ", count,
             " exceeds what the ", r.remaining(), " remaining bytes can hold");
  NamedTensors result;
  result.tensors.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    result.tensors.push_back(read_array(r, "array " + std::to_string(i)));
  }
  const uint64_t name_count = r.scalar<uint64_t>("the name count");
  KILN_CHECK(name_count == 0 || name_count == count, ErrorCode::kIo, source, ": ", name_count, " names for ",
             count, " arrays (expected 0 or ", count, ")");
  result.names.reserve(name_count);
  for (uint64_t i = 0; i < name_count; ++i) {
    const std::string what = "name " + std::to_string(i);
    const uint64_t length = r.scalar<uint64_t>(what + " length");
    r.need(length, what);
    std::string name(length, '\0');
    r.bytes(name.data(), length, what);
    result.names.push_back(std::move(name));
  }
  return result;
}

NamedTensors load_params(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), ErrorCode::kIo, path, ": cannot open file");
  return read_params(in, path);
}

void write_params(std::ostream& out, const NamedTensors& params, const std::string& target) {
  const size_t count = params.tensors.size();
  KILN_CHECK(params.names.empty() || params.names.size() == count, ErrorCode::kInvalidArgument, target, ": ",
             params.names.size(), " names for ", count, " tensors (expected 0 or ", count, ")");
  bool numpy_shape = false;
  for (const Tensor& t : params.tensors) numpy_shape |= t.defined() && (t.ndim() == 0 || t.numel() == 0);
  for (size_t i = 0; i < count; ++i) {
    const Tensor& t = params.tensors[i];
    const std::string what =
        params.names.empty() ? "tensor " + std::to_string(i) : "'" + params.names[i] + "'";
    // MXNet cannot read a "none" array under numpy shape semantics (its reader mishandles ndim -1).
    KILN_CHECK(t.defined() || !numpy_shape, ErrorCode::kInvalidArgument, target, ": ", what,
               " is undefined, which MXNet cannot load next to 0-d or empty arrays");
    KILN_CHECK(!t.defined() || t.device().is_cpu(), ErrorCode::kInvalidArgument, target, ": ", what,
               " is on ", t.device(), "; copy it to the CPU first");
  }
  put<uint64_t>(out, kListMagic);
  put<uint64_t>(out, 0);
  put<uint64_t>(out, count);
  for (const Tensor& t : params.tensors) write_array(out, t, numpy_shape);
  put<uint64_t>(out, params.names.size());
  for (const std::string& name : params.names) {
    put<uint64_t>(out, name.size());
    out.write(name.data(), static_cast<std::streamsize>(name.size()));
  }
  KILN_CHECK(out.good(), ErrorCode::kIo, target, ": write failed");
}

void save_params(const std::string& path, const NamedTensors& params) {
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out.good(), ErrorCode::kIo, path, ": cannot open for writing");
  write_params(out, params, path);
  out.close();
  KILN_CHECK(out.good(), ErrorCode::kIo, path, ": write failed");
}

}  // namespace kiln::mxnet
