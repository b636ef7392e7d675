#include "kiln/dtype.hpp"

namespace kiln {

size_t dtype_size(DType dtype) {
  if (is_storage_type(dtype)) return 1;
  if (is_string(dtype)) return sizeof(std::string);
  if (dtype == DType::kComplex64) return sizeof(std::complex<float>);
  if (dtype == DType::kComplex128) return sizeof(std::complex<double>);
  return dispatch_dtype(dtype, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

void raise_no_arithmetic(DType dtype) {
  if (is_string(dtype))
    raise(ErrorCode::kUnsupported,
          "string tensors hold text: Kiln moves, compares and converts them (Cast, Equal, the string ops) "
          "but does not compute with them");
  if (is_complex(dtype))
    raise(ErrorCode::kUnsupported, dtype_name(dtype),
          " is a complex type: Kiln holds and moves it (the data movement ops, Where, Cast) but does not "
          "compute in it");
  raise(ErrorCode::kUnsupported, dtype_name(dtype),
        " is a storage type: Kiln holds, moves and converts it (Cast, QuantizeLinear, DequantizeLinear) but "
        "does not compute in it; cast it to a wider type first");
}

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat64:
      return "float64";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt8:
      return "int8";
    case DType::kUInt8:
      return "uint8";
    case DType::kInt32:
      return "int32";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kInt16:
      return "int16";
    case DType::kUInt16:
      return "uint16";
    case DType::kUInt32:
      return "uint32";
    case DType::kUInt64:
      return "uint64";
    // The names ml_dtypes gives these types.
    case DType::kFloat8E4M3FN:
      return "float8_e4m3fn";
    case DType::kFloat8E4M3FNUZ:
      return "float8_e4m3fnuz";
    case DType::kFloat8E5M2:
      return "float8_e5m2";
    case DType::kFloat8E5M2FNUZ:
      return "float8_e5m2fnuz";
    case DType::kFloat8E8M0:
      return "float8_e8m0fnu";
    case DType::kFloat4E2M1:
      return "float4_e2m1fn";
    case DType::kInt4:
      return "int4";
    case DType::kUInt4:
      return "uint4";
    case DType::kInt2:
      return "int2";
    case DType::kUInt2:
      return "uint2";
    case DType::kString:
      return "string";
    case DType::kComplex64:
      return "complex64";
    case DType::kComplex128:
      return "complex128";
  }
  return "invalid";
}

namespace {

// Calls f(d) for every dtype, computed and stored, until it returns true.
template <class F>
bool any_dtype(F&& f) {
  for (DType d : kComputeDTypes)
    if (f(d)) return true;
  for (DType d : kStorageDTypes)
    if (f(d)) return true;
  return f(DType::kString) || f(DType::kComplex64) || f(DType::kComplex128);
}

}  // namespace

DType dtype_from_name(const std::string& name) {
  DType found = DType::kFloat32;
  if (any_dtype([&](DType d) { return name == dtype_name(d) && (found = d, true); })) return found;
  std::string known;
  any_dtype([&](DType d) {
    known += (known.empty() ? "" : ", ") + std::string(dtype_name(d));
    return false;
  });
  raise(ErrorCode::kNotFound, "unknown dtype '", name, "' (expected one of ", known, ")");
}

int dtype_to_onnx(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 1;
    case DType::kUInt8:
      return 2;
    case DType::kInt8:
      return 3;
    case DType::kInt32:
      return 6;
    case DType::kInt64:
      return 7;
    case DType::kBool:
      return 9;
    case DType::kFloat16:
      return 10;
    case DType::kFloat64:
      return 11;
    case DType::kBFloat16:
      return 16;
    case DType::kUInt16:
      return 4;
    case DType::kInt16:
      return 5;
    case DType::kUInt32:
      return 12;
    case DType::kUInt64:
      return 13;
    case DType::kFloat8E4M3FN:
      return 17;
    case DType::kFloat8E4M3FNUZ:
      return 18;
    case DType::kFloat8E5M2:
      return 19;
    case DType::kFloat8E5M2FNUZ:
      return 20;
    case DType::kUInt4:
      return 21;
    case DType::kInt4:
      return 22;
    case DType::kFloat4E2M1:
      return 23;
    case DType::kFloat8E8M0:
      return 24;
    case DType::kUInt2:
      return 25;
    case DType::kInt2:
      return 26;
    case DType::kString:
      return 8;
    case DType::kComplex64:
      return 14;
    case DType::kComplex128:
      return 15;
  }
  return 0;
}

DType dtype_from_onnx(int64_t code) {
  DType found = DType::kFloat32;
  if (any_dtype([&](DType d) { return dtype_to_onnx(d) == code && (found = d, true); })) return found;
  raise(ErrorCode::kUnsupported, "ONNX data type ", code, " is not supported by Kiln");
}

}  // namespace kiln
