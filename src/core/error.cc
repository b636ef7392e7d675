#include "kiln/error.hpp"

namespace kiln {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "InvalidArgument";
    case ErrorCode::kShapeMismatch:
      return "ShapeMismatch";
    case ErrorCode::kTypeMismatch:
      return "TypeMismatch";
    case ErrorCode::kOutOfRange:
      return "OutOfRange";
    case ErrorCode::kUnsupported:
      return "Unsupported";
    case ErrorCode::kNotFound:
      return "NotFound";
    case ErrorCode::kRuntime:
      return "Runtime";
    case ErrorCode::kIo:
      return "Io";
    case ErrorCode::kInternal:
      return "Internal";
  }
  return "Unknown";
}

}  // namespace kiln
