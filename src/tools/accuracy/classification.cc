// Classification metrics and labels files for the accuracy check (include/kiln/accuracy.hpp).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"
#include "kiln/npy.hpp"

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

std::vector<int64_t> read_labels(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    const Tensor t = npy::load(path);
    const std::vector<double> values = t.cast(DType::kFloat64).contiguous().to_vector<double>();
    std::vector<int64_t> labels;
    labels.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      KILN_CHECK(values[i] == std::floor(values[i]), ErrorCode::kInvalidArgument, "labels '", path,
                 "': value ", i, " is ", values[i], ", expected an integer");
      labels.push_back(static_cast<int64_t>(values[i]));
    }
    return labels;
  }
  std::ifstream in(path);
  KILN_CHECK(in.good(), ErrorCode::kIo, "labels '", path, "': cannot open");
  std::stringstream text;
  text << in.rdbuf();
  std::string all = text.str();
  std::replace(all.begin(), all.end(), ',', ' ');
  std::istringstream words(all);
  std::vector<int64_t> labels;
  for (std::string word; words >> word;) {
    size_t used = 0;
    int64_t label = 0;
    try {
      label = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    KILN_CHECK(used == word.size(), ErrorCode::kInvalidArgument, "labels '", path, "': label ", labels.size(),
               " is '", word, "', expected an integer");
    labels.push_back(label);
  }
  return labels;
}

}  // namespace kiln::accuracy
