// TensorProto decoding and encoding; see tensor_proto.h for what is checked and why.
#include "frontends/onnx/tensor_proto.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <vector>

#include "core/bool_bytes.h"
#include "core/caching_allocator.h"
#include "core/storage_types.h"
#include "kiln/error.hpp"
#include "onnx/onnx-data_pb.h"

namespace kiln::onnx {
namespace {

namespace fs = std::filesystem;

Shape shape_of(const ::onnx::TensorProto& proto, const std::string& where) {
  std::vector<int64_t> dims;
  for (int64_t d : proto.dims()) {
    KILN_CHECK(d >= 0, ErrorCode::kIo, where, ": negative dimension ", d);
    dims.push_back(d);
  }
  Shape shape(dims);
  shape.numel();  // throws on overflow
  return shape;
}

// Bytes an external-data tensor names, read after checking the location and the length.
std::string read_external(const ::onnx::TensorProto& proto, const TensorSource& source, size_t expected) {
  std::string location;
  int64_t offset = 0;
  int64_t length = -1;
  for (const auto& entry : proto.external_data()) {
    try {
      if (entry.key() == "location") location = entry.value();
      if (entry.key() == "offset") offset = std::stoll(entry.value());
      if (entry.key() == "length") length = std::stoll(entry.value());
    } catch (const std::exception&) {
      raise(ErrorCode::kIo, source.where, ": external data ", entry.key(), " '", entry.value(),
            "' is not a number");
    }
  }
  KILN_CHECK(!source.base_dir.empty(), ErrorCode::kIo, source.where,
             ": has external data but the model was not read from a file");
  KILN_CHECK(!location.empty(), ErrorCode::kIo, source.where, ": external data without a location");
  const fs::path relative(location);
  KILN_CHECK(relative.is_relative(), ErrorCode::kIo, source.where, ": external data location '", location,
             "' must be relative to the model's folder");
  for (const auto& part : relative) {
    KILN_CHECK(part != "..", ErrorCode::kIo, source.where, ": external data location '", location,
               "' leaves the model's folder");
  }
  const fs::path path = fs::path(source.base_dir) / relative;
  std::error_code ec;
  const auto file_size = fs::file_size(path, ec);
  KILN_CHECK(!ec, ErrorCode::kIo, source.where, ": cannot read external data file '", path.string(), "'");
  KILN_CHECK(offset >= 0, ErrorCode::kIo, source.where, ": negative external data offset ", offset);
  if (length < 0) length = static_cast<int64_t>(expected);
  KILN_CHECK(static_cast<size_t>(length) == expected, ErrorCode::kIo, source.where, ": external data length ",
             length, " does not match the ", expected, " bytes its shape and type need");
  KILN_CHECK(
      static_cast<uint64_t>(offset) <= file_size && expected <= file_size - static_cast<uint64_t>(offset),
      ErrorCode::kIo, source.where, ": external data file '", path.string(), "' has ", file_size,
      " bytes, too few for ", expected, " bytes at offset ", offset);
  std::ifstream in(path, std::ios::binary);
  std::string bytes(expected, '\0');
  in.seekg(offset);
  in.read(bytes.data(), static_cast<std::streamsize>(expected));
  KILN_CHECK(in.good() || expected == 0, ErrorCode::kIo, source.where, ": reading '", path.string(),
             "' failed");
  return bytes;
}

// Copies a typed repeated field into the tensor, converting each element to the tensor's type.
template <class Field>
void copy_field(const Field& field, Tensor& out, int64_t numel) {
  dispatch_dtype(out.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* dst = out.data<T>();
    for (int64_t i = 0; i < numel; ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>) {
        // 16-bit floats are stored as their bit patterns in int32_data.
        dst[i] = T::from_bits(static_cast<uint16_t>(field.Get(static_cast<int>(i))));
      } else {
        dst[i] = static_cast<T>(field.Get(static_cast<int>(i)));
      }
    }
  });
}

// The element type, shape and byte size a TensorProto declares, checked. nbytes is the size of
// the data in the file, where the 4- and 2-bit types are packed (storage_types.h).
struct Declared {
  DType dtype;
  Shape shape;
  size_t nbytes;
  bool packed() const { return packed_bits(dtype) < 8; }
};

Declared declared(const ::onnx::TensorProto& proto, const std::string& where) {
  DType dtype;
  try {
    dtype = dtype_from_onnx(proto.data_type());
  } catch (const Error& e) {
    raise(ErrorCode::kUnsupported, where, ": ", e.what());
  }
  KILN_CHECK(!proto.has_segment(), ErrorCode::kUnsupported, where, ": segmented tensors are not supported");
  const Shape shape = shape_of(proto, where);
  const int64_t numel = shape.numel();
  const size_t item = dtype_size(dtype);
  KILN_CHECK(static_cast<uint64_t>(numel) <= std::numeric_limits<size_t>::max() / item, ErrorCode::kIo, where,
             ": shape ", shape, " is too large");
  if (packed_bits(dtype) < 8) return {dtype, shape, static_cast<size_t>(packed_size(dtype, numel))};
  return {dtype, shape, static_cast<size_t>(numel) * item};
}

// A tensor of the declared type and shape from the bytes of the file's layout.
Tensor tensor_from_bytes(const Declared& d, const void* bytes) {
  Tensor out = Tensor::empty(d.shape, d.dtype);
  if (d.packed())
    unpack_elements(d.dtype, static_cast<const uint8_t*>(bytes), static_cast<uint8_t*>(out.raw_data()),
                    d.shape.numel());
  else if (d.nbytes != 0)
    std::memcpy(out.raw_data(), bytes, d.nbytes);
  if (d.dtype == DType::kBool) canonicalize_bool_bytes(out.raw_data(), d.nbytes);
  return out;
}

// The storage types in int32_data: one 8-bit element, or one packed byte, per entry.
Tensor storage_tensor_from_int32_data(const ::onnx::TensorProto& proto, const Declared& d,
                                      const std::string& where) {
  const auto entries = static_cast<int64_t>(d.nbytes);
  KILN_CHECK(proto.int32_data_size() == entries, ErrorCode::kIo, where, ": int32_data has ",
             proto.int32_data_size(), " entries, shape ", d.shape, " of ", dtype_name(d.dtype), " needs ",
             entries);
  std::vector<uint8_t> bytes(static_cast<size_t>(entries));
  for (int64_t i = 0; i < entries; ++i)
    bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(proto.int32_data(static_cast<int>(i)));
  return tensor_from_bytes(d, bytes.data());
}

void check_raw_size(const ::onnx::TensorProto& proto, const Declared& d, const std::string& where) {
  KILN_CHECK(proto.raw_data().size() == d.nbytes, ErrorCode::kIo, where, ": raw_data has ",
             proto.raw_data().size(), " bytes, shape ", d.shape, " of ", dtype_name(d.dtype), " needs ",
             d.nbytes);
}

}  // namespace

Tensor take_tensor_from_proto(::onnx::TensorProto& proto, const TensorSource& source) {
  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL || !proto.has_raw_data() ||
      proto.data_type() == ::onnx::TensorProto::STRING)
    return tensor_from_proto(proto, source);
  const Declared d = declared(proto, source.where);
  if (d.packed()) return tensor_from_proto(proto, source);
  check_raw_size(proto, d, source.where);
  // The bytes move to the allocator's alignment inside the string's own buffer (its capacity
  // usually has room: the parser grows it as it reads): a weight read in place is then aligned as
  // one from the allocator, which AVX-512 loads want. Without room they are copied.
  constexpr size_t kAlignment = CachingAllocator::kAlignment;
  const std::string& raw = proto.raw_data();
  const size_t shift = (kAlignment - reinterpret_cast<uintptr_t>(raw.data()) % kAlignment) % kAlignment;
  if (d.nbytes == 0 || raw.capacity() < d.nbytes + shift) return tensor_from_proto(proto, source);
  std::string* bytes = proto.release_raw_data();
  bytes->resize(d.nbytes + shift);  // within the capacity: the buffer stays where it is
  std::memmove(bytes->data() + shift, bytes->data(), d.nbytes);
  if (d.dtype == DType::kBool) canonicalize_bool_bytes(bytes->data() + shift, d.nbytes);
  std::shared_ptr<Storage> storage =
      Storage::wrap(bytes->data() + shift, d.nbytes, cpu(), [bytes](void*) { delete bytes; });
  return Tensor(std::move(storage), d.shape, d.dtype);
}

std::string folder_of(const std::string& path) {
  const fs::path file(path);
  return file.has_parent_path() ? file.parent_path().string() : std::string(".");
}

Tensor tensor_from_proto(const ::onnx::TensorProto& proto, const TensorSource& source) {
  const std::string& where = source.where;
  const Declared d = declared(proto, where);
  const int64_t numel = d.shape.numel();

  if (is_string(d.dtype)) {
    // Strings are objects: ONNX keeps them in string_data, never as raw bytes.
    KILN_CHECK(proto.data_location() != ::onnx::TensorProto::EXTERNAL && !proto.has_raw_data(),
               ErrorCode::kIo, where,
               ": a string tensor keeps its strings in string_data, not in raw or external data");
    KILN_CHECK(proto.string_data_size() == numel, ErrorCode::kIo, where, ": string_data has ",
               proto.string_data_size(), " strings, shape ", d.shape, " needs ", numel);
    Tensor out = Tensor::empty(d.shape, d.dtype);
    std::copy(proto.string_data().begin(), proto.string_data().end(), out.data<std::string>());
    return out;
  }
  if (proto.data_location() == ::onnx::TensorProto::EXTERNAL) {
    const std::string bytes = read_external(proto, source, d.nbytes);
    return tensor_from_bytes(d, bytes.data());
  }
  if (proto.has_raw_data()) {
    check_raw_size(proto, d, where);
    return tensor_from_bytes(d, proto.raw_data().data());
  }
  if (is_storage_type(d.dtype)) return storage_tensor_from_int32_data(proto, d, where);
  // Typed fields: sizes are checked against the shape before the tensor is allocated.
  const auto check_then_copy = [&](const auto& field, const char* field_name) {
    KILN_CHECK(field.size() == numel, ErrorCode::kIo, where, ": ", field_name, " has ", field.size(),
               " elements, shape ", d.shape, " needs ", numel);
    Tensor out = Tensor::empty(d.shape, d.dtype);
    copy_field(field, out, numel);
    return out;
  };
  // Complex numbers lie in float_data (complex64) or double_data (complex128) as (real, imaginary)
  // pairs.
  const auto check_then_copy_pairs = [&](const auto& field, const char* field_name, auto part_tag) {
    using Part = typename decltype(part_tag)::type;
    KILN_CHECK(field.size() == 2 * numel, ErrorCode::kIo, where, ": ", field_name, " has ", field.size(),
               " numbers, shape ", d.shape, " of ", dtype_name(d.dtype), " needs ", 2 * numel,
               " (a real and an imaginary part each)");
    Tensor out = Tensor::empty(d.shape, d.dtype);
    std::copy(field.begin(), field.end(), static_cast<Part*>(out.raw_data()));
    return out;
  };
  switch (d.dtype) {
    case DType::kComplex64:
      return check_then_copy_pairs(proto.float_data(), "float_data", TypeTag<float>{});
    case DType::kComplex128:
      return check_then_copy_pairs(proto.double_data(), "double_data", TypeTag<double>{});
    case DType::kFloat32:
      return check_then_copy(proto.float_data(), "float_data");
    case DType::kFloat64:
      return check_then_copy(proto.double_data(), "double_data");
    case DType::kInt64:
      return check_then_copy(proto.int64_data(), "int64_data");
    case DType::kUInt32:
    case DType::kUInt64:
      return check_then_copy(proto.uint64_data(), "uint64_data");
    default:
      return check_then_copy(proto.int32_data(), "int32_data");
  }
}

::onnx::TensorProto tensor_to_proto(const Tensor& tensor, const std::string& name) {
  ::onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(dtype_to_onnx(tensor.dtype()));
  for (int64_t d : tensor.shape().dims()) proto.add_dims(d);
  const Tensor dense = tensor.contiguous();
  if (is_string(tensor.dtype())) {
    for (int64_t i = 0; i < dense.numel(); ++i) proto.add_string_data(dense.data<std::string>()[i]);
    return proto;
  }
  if (packed_bits(tensor.dtype()) < 8) {
    std::string packed(static_cast<size_t>(packed_size(tensor.dtype(), dense.numel())), '\0');
    pack_elements(tensor.dtype(), static_cast<const uint8_t*>(dense.raw_data()),
                  reinterpret_cast<uint8_t*>(packed.data()), dense.numel());
    proto.set_raw_data(std::move(packed));
    return proto;
  }
  proto.set_raw_data(std::string(static_cast<const char*>(dense.raw_data()), dense.nbytes()));
  return proto;
}

Tensor load_tensor_pb(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), ErrorCode::kNotFound, "cannot open tensor file '", path, "'");
  ::onnx::TensorProto proto;
  KILN_CHECK(proto.ParseFromIstream(&in), ErrorCode::kIo, "'", path,
             "' is not a serialized ONNX TensorProto");
  return tensor_from_proto(proto, {folder_of(path), "tensor file '" + path + "'"});
}

namespace {

Tensor sequence_from_proto(const ::onnx::SequenceProto& proto, DType element_dtype,
                           const TensorSource& source) {
  KILN_CHECK(proto.elem_type() == ::onnx::SequenceProto::TENSOR || proto.tensor_values_size() == 0,
             ErrorCode::kUnsupported, source.where, ": only sequences of tensors are supported");
  std::vector<Tensor> elements;
  for (const ::onnx::TensorProto& t : proto.tensor_values()) elements.push_back(tensor_from_proto(t, source));
  return Tensor::sequence(elements.empty() ? element_dtype : elements.front().dtype(), std::move(elements));
}

}  // namespace

Tensor load_value_pb(const std::string& path, ValueFile kind, DType element_dtype) {
  if (kind == ValueFile::kTensor) return load_tensor_pb(path);
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), ErrorCode::kNotFound, "cannot open value file '", path, "'");
  const TensorSource source{folder_of(path), "value file '" + path + "'"};
  if (kind == ValueFile::kSequence) {
    ::onnx::SequenceProto proto;
    KILN_CHECK(proto.ParseFromIstream(&in), ErrorCode::kIo, "'", path,
               "' is not a serialized ONNX SequenceProto");
    return sequence_from_proto(proto, element_dtype, source);
  }
  ::onnx::OptionalProto proto;
  KILN_CHECK(proto.ParseFromIstream(&in), ErrorCode::kIo, "'", path,
             "' is not a serialized ONNX OptionalProto");
  if (proto.has_tensor_value()) return tensor_from_proto(proto.tensor_value(), source);
  if (proto.has_sequence_value()) return sequence_from_proto(proto.sequence_value(), element_dtype, source);
  return Tensor();
}

void save_tensor_pb(const std::string& path, const Tensor& tensor, const std::string& name) {
  std::ofstream out(path, std::ios::binary);
  KILN_CHECK(out.good() && tensor_to_proto(tensor, name).SerializeToOstream(&out), ErrorCode::kIo,
             "cannot write tensor file '", path, "'");
}

}  // namespace kiln::onnx
