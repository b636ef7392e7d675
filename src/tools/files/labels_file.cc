// Labels files for the accuracy check (kiln::accuracy::read_labels, include/kiln/accuracy.hpp):
// a file layer over core and .npy only, so that its fuzz target stays small.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"
#include "kiln/npy.hpp"

namespace kiln::accuracy {
namespace {

// The largest image index a boxes file may name: the boxes are kept per image up to the last one,
// so an index is an allocation, which a file cannot be allowed to make absurd.
constexpr double kMaxImages = 1 << 24;
// Labels are integers a double holds exactly (and int64 converts without overflow).
constexpr double kMaxLabel = 9007199254740992.0;  // 2^53

bool is_label(double v) {
  return v == std::floor(v) && std::fabs(v) <= kMaxLabel;
}

// Rows (image index, label, x1, y1, x2, y2) grouped by image.
std::vector<std::vector<Detection>> read_boxes(const std::string& path, const Shape& shape,
                                               const std::vector<double>& values) {
  KILN_CHECK(shape[1] == 6, ErrorCode::kShapeMismatch, "labels '", path,
             "': boxes are rows (image, label, x1, y1, x2, y2), got shape ", shape);
  std::vector<std::vector<Detection>> boxes;
  for (int64_t k = 0; k < shape[0]; ++k) {
    const double* row = values.data() + k * 6;
    KILN_CHECK(row[0] >= 0 && is_label(row[0]) && is_label(row[1]), ErrorCode::kInvalidArgument, "labels '",
               path, "': box ", k, " has image ", row[0], " and label ", row[1],
               ", expected integers (image >= 0)");
    KILN_CHECK(row[0] < kMaxImages, ErrorCode::kOutOfRange, "labels '", path, "': box ", k, " is of image ",
               row[0], "; at most ", kMaxImages, " images are supported");
    const auto image = static_cast<size_t>(row[0]);
    if (boxes.size() <= image) boxes.resize(image + 1);
    boxes[image].push_back({static_cast<float>(row[2]), static_cast<float>(row[3]),
                            static_cast<float>(row[4]), static_cast<float>(row[5]), 1.0f,
                            static_cast<int64_t>(row[1])});
  }
  return boxes;
}

}  // namespace

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
      KILN_CHECK(is_label(values[i]), ErrorCode::kInvalidArgument, "labels '", path, "': value ", i, " is ",
                 values[i], ", expected an integer of at most 2^53 in magnitude");
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
