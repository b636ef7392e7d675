// Bool tensors read from files: a byte other than 0 or 1 is not a valid C++ bool (reading it is
// undefined behaviour), so the readers of .npy, .params and ONNX tensors keep its truth value.
#pragma once

#include <cstddef>

namespace kiln {

inline void canonicalize_bool_bytes(void* data, size_t count) {
  auto* p = static_cast<unsigned char*>(data);
  for (size_t i = 0; i < count; ++i) p[i] = p[i] != 0;
}

}  // namespace kiln
