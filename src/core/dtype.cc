#include "kiln/dtype.hpp"

namespace kiln {

size_t dtype_size(DType dtype) {
  return dispatch_dtype(dtype, [](auto tag) { return sizeof(typename decltype(tag)::type); });
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
  }
  return "invalid";
}

DType dtype_from_name(const std::string& name) {
  for (DType d : kAllDTypes) {
    if (name == dtype_name(d)) return d;
  }
  raise(ErrorCode::kNotFound, "unknown dtype '", name,
        "' (expected one of float32, float64, float16, bfloat16, int8, uint8, int32, int64, bool, int16, "
        "uint16, "
        "uint32, uint64)");
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
  }
  return 0;
}

DType dtype_from_onnx(int64_t code) {
  for (DType d : kAllDTypes) {
    if (dtype_to_onnx(d) == code) return d;
  }
  raise(ErrorCode::kUnsupported, "ONNX data type ", code, " is not supported by Kiln");
}

}  // namespace kiln
