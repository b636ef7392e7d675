// Reading and writing numpy's .npy files (format versions 1.0 to 3.0, little-endian,
// C or Fortran order). numpy has no bfloat16: Kiln writes bfloat16 as its uint16 bits ('<u2'),
// and load() reads '<u2' as bfloat16; load_as() reinterprets bytes as any same-size dtype.
#pragma once

#include <istream>
#include <string>

#include "kiln/tensor.hpp"

namespace kiln::npy {

// Reads .npy data from a stream; `source` names it in errors. Throws kiln::Error (kIo,
// kUnsupported) for anything malformed, truncated or inconsistent, before allocating.
Tensor read(std::istream& in, const std::string& source);
// Loads a .npy file; throws kiln::Error(kIo / kUnsupported) naming the file and the problem.
Tensor load(const std::string& path);
// Loads a .npy file and reinterprets its bytes as `dtype` (same item size), e.g. uint16 -> bfloat16.
Tensor load_as(const std::string& path, DType dtype);
// Writes a tensor as a version 1.0 .npy file (bfloat16 is written as uint16).
void save(const std::string& path, const Tensor& tensor);

}  // namespace kiln::npy
