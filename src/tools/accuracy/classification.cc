// Classification metrics for the accuracy check (include/kiln/accuracy.hpp); labels files are
// read in src/tools/files/labels_file.cc.
#include <algorithm>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"

namespace kiln::accuracy {

std::vector<int64_t> top1(const Tensor& scores) {
  KILN_CHECK(scores.ndim() >= 1 && scores.shape()[scores.ndim() - 1] > 0, ErrorCode::kShapeMismatch,
             "top1: expected scores (..., C) with C > 0, got ", scores.shape());
  const int64_t classes = scores.shape()[scores.ndim() - 1];
  const std::vector<float> s = scores.cast(DType::kFloat32).contiguous().to_vector<float>();
  std::vector<int64_t> out(s.size() / static_cast<size_t>(classes));
  for (size_t r = 0; r < out.size(); ++r) {
    const auto row = s.begin() + static_cast<std::ptrdiff_t>(r * static_cast<size_t>(classes));
    out[r] = std::max_element(row, row + classes) - row;
  }
  return out;
}

double agreement(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  KILN_CHECK(a.size() == b.size(), ErrorCode::kShapeMismatch, "agreement: ", a.size(), " values against ",
             b.size());
  if (a.empty()) return 1.0;
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

}  // namespace kiln::accuracy
