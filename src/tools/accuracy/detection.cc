// Detection metrics for the accuracy check (include/kiln/accuracy.hpp): IoU, NMS, decoding a
// YOLO-style output, and mAP.
#include <algorithm>
#include <map>
#include <numeric>

#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"

namespace kiln::accuracy {

float iou(const Detection& a, const Detection& b) {
  const float w = std::max(0.0f, std::min(a.x2, b.x2) - std::max(a.x1, b.x1));
  const float h = std::max(0.0f, std::min(a.y2, b.y2) - std::max(a.y1, b.y1));
  const float inter = w * h;
  const float area_a = std::max(0.0f, a.x2 - a.x1) * std::max(0.0f, a.y2 - a.y1);
  const float area_b = std::max(0.0f, b.x2 - b.x1) * std::max(0.0f, b.y2 - b.y1);
  const float uni = area_a + area_b - inter;
  return uni > 0 ? inter / uni : 0.0f;
}

std::vector<Detection> nms(std::vector<Detection> boxes, float iou_threshold) {
  std::stable_sort(boxes.begin(), boxes.end(),
                   [](const Detection& a, const Detection& b) { return a.score > b.score; });
  std::vector<Detection> kept;
  for (const Detection& box : boxes) {
    const bool suppressed = std::any_of(kept.begin(), kept.end(), [&](const Detection& k) {
      return k.label == box.label && iou(k, box) > iou_threshold;
    });
    if (!suppressed) kept.push_back(box);
  }
  return kept;
}

std::vector<std::vector<Detection>> decode_yolo(const Tensor& output, float score_threshold,
                                                float iou_threshold) {
  KILN_CHECK(output.ndim() == 3 && output.shape()[2] >= 6, ErrorCode::kShapeMismatch,
             "decode_yolo: expected (N, boxes, 5 + classes), got ", output.shape());
  const int64_t images = output.shape()[0], boxes = output.shape()[1], row = output.shape()[2];
  const std::vector<float> v = output.cast(DType::kFloat32).contiguous().to_vector<float>();
  std::vector<std::vector<Detection>> out(static_cast<size_t>(images));
  for (int64_t n = 0; n < images; ++n) {
    std::vector<Detection> candidates;
    for (int64_t b = 0; b < boxes; ++b) {
      const float* p = v.data() + (n * boxes + b) * row;
      const float* best = std::max_element(p + 5, p + row);
      const float score = p[4] * *best;
      if (!(score >= score_threshold)) continue;
      candidates.push_back(
          {p[0] - p[2] / 2, p[1] - p[3] / 2, p[0] + p[2] / 2, p[1] + p[3] / 2, score, best - (p + 5)});
    }
    out[static_cast<size_t>(n)] = nms(std::move(candidates), iou_threshold);
  }
  return out;
}

namespace {

// Average precision of one label: the area under the precision-recall curve, with precision at
// each recall the best precision at that recall or beyond.
double average_precision(const std::vector<std::vector<Detection>>& predictions,
                         const std::vector<std::vector<Detection>>& truth, int64_t label,
                         float iou_threshold) {
  struct Scored {
    float score;
    size_t image;
    const Detection* box;
  };
  std::vector<Scored> scored;
  size_t positives = 0;
  for (size_t i = 0; i < truth.size(); ++i)
    for (const Detection& t : truth[i]) positives += t.label == label;
  for (size_t i = 0; i < predictions.size(); ++i)
    for (const Detection& p : predictions[i])
      if (p.label == label) scored.push_back({p.score, i, &p});
  std::stable_sort(scored.begin(), scored.end(),
                   [](const Scored& a, const Scored& b) { return a.score > b.score; });
  std::vector<std::vector<bool>> matched(truth.size());
  for (size_t i = 0; i < truth.size(); ++i) matched[i].assign(truth[i].size(), false);
  std::vector<double> precision, recall;
  size_t true_positives = 0;
  for (size_t k = 0; k < scored.size(); ++k) {
    const std::vector<Detection>& boxes = truth[scored[k].image];
    float best = 0;
    int best_index = -1;
    for (size_t j = 0; j < boxes.size(); ++j) {
      if (boxes[j].label != label) continue;
      const float overlap = iou(*scored[k].box, boxes[j]);
      if (overlap > best) best = overlap, best_index = static_cast<int>(j);
    }
    if (best_index >= 0 && best >= iou_threshold &&
        !matched[scored[k].image][static_cast<size_t>(best_index)]) {
      matched[scored[k].image][static_cast<size_t>(best_index)] = true;
      ++true_positives;
    }
    precision.push_back(static_cast<double>(true_positives) / static_cast<double>(k + 1));
    recall.push_back(static_cast<double>(true_positives) / static_cast<double>(positives));
  }
  for (size_t k = precision.size(); k-- > 1;) precision[k - 1] = std::max(precision[k - 1], precision[k]);
  double area = 0, previous_recall = 0;
  for (size_t k = 0; k < precision.size(); ++k) {
    area += (recall[k] - previous_recall) * precision[k];
    previous_recall = recall[k];
  }
  return area;
}

}  // namespace

double mean_average_precision(const std::vector<std::vector<Detection>>& predictions,
                              const std::vector<std::vector<Detection>>& truth, float iou_threshold) {
  KILN_CHECK(predictions.size() == truth.size(), ErrorCode::kShapeMismatch,
             "mean_average_precision: ", predictions.size(), " images of predictions against ", truth.size(),
             " of truth");
  std::map<int64_t, bool> labels;
  bool any_prediction = false;
  for (const auto& image : truth)
    for (const Detection& t : image) labels[t.label] = true;
  for (const auto& image : predictions) any_prediction |= !image.empty();
  if (labels.empty()) return any_prediction ? 0.0 : 1.0;
  double sum = 0;
  for (const auto& [label, present] : labels)
    sum += average_precision(predictions, truth, label, iou_threshold);
  return sum / static_cast<double>(labels.size());
}

}  // namespace kiln::accuracy
