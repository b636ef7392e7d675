// Classification metrics and labels files for the accuracy check (include/kiln/accuracy.hpp).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"
#include "kiln/npy.hpp"

namespace kiln::accuracy {
namespace {

// Rows (image index, label, x1, y1, x2, y2) grouped by image.
std::vector<std::vector<Detection>> read_boxes(const std::string& path, const Shape& shape,
                                               const std::vector<double>& values) {
  KILN_CHECK(shape[1] == 6, ErrorCode::kShapeMismatch, "labels '", path,
             "': boxes are rows (image, label, x1, y1, x2, y2), got shape ", shape);
  std::vector<std::vector<Detection>> boxes;
  for (int64_t k = 0; k < shape[0]; ++k) {
    const double* row = values.data() + k * 6;
    KILN_CHECK(row[0] >= 0 && row[0] == std::floor(row[0]) && row[1] == std::floor(row[1]),
               ErrorCode::kInvalidArgument, "labels '", path, "': box ", k, " has image ", row[0],
               " and label ", row[1], ", expected integers (image >= 0)");
    const auto image = static_cast<size_t>(row[0]);
    if (boxes.size() <= image) boxes.resize(image + 1);
    boxes[image].push_back({static_cast<float>(row[2]), static_cast<float>(row[3]),
                            static_cast<float>(row[4]), static_cast<float>(row[5]), 1.0f,
                            static_cast<int64_t>(row[1])});
  }
  return boxes;
}

}  // namespace

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

Labels read_labels(const std::string& path) {
  if (path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0) {
    const Tensor t = npy::load(path);
    const std::vector<double> values = t.cast(DType::kFloat64).contiguous().to_vector<double>();
    if (t.ndim() == 2) return {.boxes = read_boxes(path, t.shape(), values)};
    KILN_CHECK(t.ndim() == 1, ErrorCode::kShapeMismatch, "labels '", path,
               "': expected (N) classes or (K, 6) boxes, got shape ", t.shape());
    std::vector<int64_t> labels;
    labels.reserve(values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      KILN_CHECK(values[i] == std::floor(values[i]), ErrorCode::kInvalidArgument, "labels '", path,
                 "': value ", i, " is ", values[i], ", expected an integer");
      labels.push_back(static_cast<int64_t>(values[i]));
    }
    return {.classes = labels};
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
  return {.classes = labels};
}

}  // namespace kiln::accuracy
