// Evaluation metrics, computed on the host in float64 from the arrays' values.
#include "kiln/nn/metric.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace kiln::nn {

namespace {

std::vector<double> host_values(const NDArray& a) {
  return a.astype(DType::kFloat64).to_vector<double>();
}

void check_defined(const NDArray& label, const NDArray& pred, const std::string& where) {
  KILN_CHECK(label.defined() && pred.defined(), ErrorCode::kInvalidArgument, where, ": the ",
             label.defined() ? "prediction" : "label", " is an undefined array");
}

// A label as a class index: truncated toward zero as numpy's astype('int32').
int64_t class_of(double label, const std::string& where, size_t sample) {
  KILN_CHECK(std::isfinite(label), ErrorCode::kInvalidArgument, where, ": label ", sample, " is ", label,
             ", not a class index");
  return static_cast<int64_t>(label);
}

// (rows, columns) of a 2-D prediction whose rows match the labels.
std::pair<int64_t, int64_t> check_scores(const NDArray& label, const NDArray& pred,
                                         const std::string& where) {
  KILN_CHECK(pred.ndim() == 2, ErrorCode::kShapeMismatch, where,
             ": expected predictions of shape (samples, classes), got ", pred.shape());
  KILN_CHECK(label.size() == pred.shape()[0], ErrorCode::kShapeMismatch, where, ": ", label.size(),
             " labels (shape ", label.shape(), ") for ", pred.shape()[0], " predictions (shape ",
             pred.shape(), ")");
  return {pred.shape()[0], pred.shape()[1]};
}

double fscore(int64_t true_pos, int64_t false_pos, int64_t false_neg) {
  const double tp = static_cast<double>(true_pos);
  const double precision = true_pos + false_pos > 0 ? tp / static_cast<double>(true_pos + false_pos) : 0;
  const double recall = true_pos + false_neg > 0 ? tp / static_cast<double>(true_pos + false_neg) : 0;
  return precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
}

}  // namespace

std::pair<std::string, double> EvalMetric::get() const {
  const double value = num_inst_ == 0 ? std::numeric_limits<double>::quiet_NaN()
                                      : sum_metric_ / static_cast<double>(num_inst_);
  return {name_, value};
}

void EvalMetric::reset() {
  sum_metric_ = 0;
  num_inst_ = 0;
}

void EvalMetric::check_pair_count(const std::vector<NDArray>& labels,
                                  const std::vector<NDArray>& preds) const {
  KILN_CHECK(labels.size() == preds.size(), ErrorCode::kInvalidArgument, name_, ": ", labels.size(),
             " label arrays but ", preds.size(), " prediction arrays");
}

std::string EvalMetric::where(size_t pair) const {
  return name_ + ": pair " + std::to_string(pair);
}

void PairwiseMetric::update(const std::vector<NDArray>& labels, const std::vector<NDArray>& preds) {
  check_pair_count(labels, preds);
  Contribution total;
  for (size_t i = 0; i < labels.size(); ++i) {
    check_defined(labels[i], preds[i], where(i));
    const Contribution c = evaluate(labels[i], preds[i], where(i));
    total.sum += c.sum;
    total.instances += c.instances;
  }
  sum_metric_ += total.sum;
  num_inst_ += total.instances;
}

Accuracy::Accuracy(int axis) : PairwiseMetric("accuracy"), axis_(axis) {}

PairwiseMetric::Contribution Accuracy::evaluate(const NDArray& label, const NDArray& pred,
                                                const std::string& where) const {
  std::vector<double> predicted;
  if (pred.shape() == label.shape()) {
    predicted = host_values(pred);
  } else {
    const int axis = normalize_axis(axis_, pred.ndim(), where + " (Accuracy axis)");
    predicted = host_values(nd::argmax(pred, axis));
  }
  const std::vector<double> truth = host_values(label);
  KILN_CHECK(predicted.size() == truth.size(), ErrorCode::kShapeMismatch, where, ": ", truth.size(),
             " labels (shape ", label.shape(), ") for ", predicted.size(),
             " predicted classes (prediction shape ", pred.shape(), ")");
  Contribution c;
  for (size_t i = 0; i < truth.size(); ++i)
    c.sum += class_of(predicted[i], where, i) == class_of(truth[i], where, i) ? 1 : 0;
  c.instances = static_cast<int64_t>(truth.size());
  return c;
}

TopKAccuracy::TopKAccuracy(int top_k)
    : PairwiseMetric("top_k_accuracy_" + std::to_string(top_k)), top_k_(top_k) {
  KILN_CHECK(top_k >= 1, ErrorCode::kInvalidArgument, "TopKAccuracy: top_k must be >= 1, got ", top_k);
}

PairwiseMetric::Contribution TopKAccuracy::evaluate(const NDArray& label, const NDArray& pred,
                                                    const std::string& where) const {
  const auto [rows, classes] = check_scores(label, pred, where);
  const std::vector<double> scores = host_values(pred);
  const std::vector<double> truth = host_values(label);
  Contribution c;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t cls = class_of(truth[static_cast<size_t>(r)], where, static_cast<size_t>(r));
    if (cls < 0 || cls >= classes) continue;
    // The label is in the top k when fewer than k classes rank above it.
    const double* row = scores.data() + r * classes;
    int64_t above = 0;
    for (int64_t j = 0; j < classes; ++j) above += row[j] > row[cls] || (row[j] == row[cls] && j < cls);
    c.sum += above < top_k_ ? 1 : 0;
  }
  c.instances = rows;
  return c;
}

CrossEntropy::CrossEntropy(double eps) : PairwiseMetric("cross-entropy"), eps_(eps) {
  KILN_CHECK(std::isfinite(eps) && eps >= 0, ErrorCode::kInvalidArgument,
             "CrossEntropy: eps must be finite and >= 0, got ", eps);
}

PairwiseMetric::Contribution CrossEntropy::evaluate(const NDArray& label, const NDArray& pred,
                                                    const std::string& where) const {
  const auto [rows, classes] = check_scores(label, pred, where);
  const std::vector<double> probs = host_values(pred);
  const std::vector<double> truth = host_values(label);
  Contribution c;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t cls = class_of(truth[static_cast<size_t>(r)], where, static_cast<size_t>(r));
    KILN_CHECK(cls >= 0 && cls < classes, ErrorCode::kOutOfRange, where, ": label ", r, " is ", cls,
               ", outside the ", classes, " classes");
    c.sum -= std::log(probs[static_cast<size_t>(r * classes + cls)] + eps_);
  }
  c.instances = rows;
  return c;
}

namespace {

// The mean over elements of err(label - pred), shapes checked as MAE/MSE document.
template <class Err>
double mean_error(const NDArray& label, const NDArray& pred, const std::string& where, Err err) {
  auto as_matrix = [](const Shape& s) { return s.ndim() == 1 ? Shape{s[0], 1} : s; };
  KILN_CHECK(as_matrix(label.shape()) == as_matrix(pred.shape()), ErrorCode::kShapeMismatch, where,
             ": label shape ", label.shape(), " does not match prediction shape ", pred.shape());
  KILN_CHECK(label.size() > 0, ErrorCode::kInvalidArgument, where, ": empty arrays have no mean error");
  const std::vector<double> a = host_values(label), b = host_values(pred);
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += err(a[i] - b[i]);
  return sum / static_cast<double>(a.size());
}

}  // namespace

PairwiseMetric::Contribution MAE::evaluate(const NDArray& label, const NDArray& pred,
                                           const std::string& where) const {
  return {mean_error(label, pred, where, [](double d) { return std::abs(d); }), 1};
}

PairwiseMetric::Contribution MSE::evaluate(const NDArray& label, const NDArray& pred,
                                           const std::string& where) const {
  return {mean_error(label, pred, where, [](double d) { return d * d; }), 1};
}

F1::F1(F1Average average) : EvalMetric("f1"), average_(average) {}

void F1::update(const std::vector<NDArray>& labels, const std::vector<NDArray>& preds) {
  check_pair_count(labels, preds);
  int64_t true_pos = 0, false_pos = 0, false_neg = 0, total = 0;
  for (size_t i = 0; i < labels.size(); ++i) {
    check_defined(labels[i], preds[i], where(i));
    [[maybe_unused]] const auto [rows, classes] = check_scores(labels[i], preds[i], where(i));
    const std::vector<double> predicted = host_values(nd::argmax(preds[i], 1));
    const std::vector<double> truth = host_values(labels[i]);
    for (int64_t r = 0; r < rows; ++r) {
      const size_t k = static_cast<size_t>(r);
      const int64_t cls = class_of(truth[k], where(i), k);
      KILN_CHECK(cls == 0 || cls == 1, ErrorCode::kInvalidArgument, where(i), ": label ", r, " is ", truth[k],
                 "; F1 is for binary labels (0 or 1)");
      const bool predicted_positive = predicted[k] == 1, positive = cls == 1;
      true_pos += predicted_positive && positive;
      false_pos += predicted_positive && !positive;
      false_neg += !predicted_positive && positive;
    }
    total += rows;
  }
  if (average_ == F1Average::kMacro) {
    sum_metric_ += fscore(true_pos, false_pos, false_neg);
    num_inst_ += 1;
    return;
  }
  true_pos_ += true_pos;
  false_pos_ += false_pos;
  false_neg_ += false_neg;
  total_ += total;
  sum_metric_ = fscore(true_pos_, false_pos_, false_neg_) * static_cast<double>(total_);
  num_inst_ = total_;
}

void F1::reset() {
  EvalMetric::reset();
  true_pos_ = false_pos_ = false_neg_ = total_ = 0;
}

}  // namespace kiln::nn
