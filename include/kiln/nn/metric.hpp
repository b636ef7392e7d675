// Evaluation metrics with MXNet 1.x's semantics (mx.metric): Accuracy, TopKAccuracy,
// CrossEntropy, MAE, MSE and F1. Each accumulates over update(labels, preds) calls, one label
// array and one prediction array per output; get() gives (name, value) with value NaN before any
// update, and reset() starts over. Values are read to the host (the arrays are waited for).
//
//   nn::Accuracy acc;
//   acc.update({label}, {softmax_output});
//   auto [name, value] = acc.get();   // "accuracy", correct / total
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/ndarray.hpp"

namespace kiln::nn {

class EvalMetric {
 public:
  virtual ~EvalMetric() = default;

  // Throws kiln::Error naming the metric and the pair index when the lists differ in length or a
  // pair does not fit; the metric is unchanged then.
  virtual void update(const std::vector<NDArray>& labels, const std::vector<NDArray>& preds) = 0;
  std::pair<std::string, double> get() const;
  virtual void reset();

  const std::string& name() const { return name_; }
  double sum_metric() const { return sum_metric_; }
  int64_t num_inst() const { return num_inst_; }

 protected:
  explicit EvalMetric(std::string name) : name_(std::move(name)) {}
  // Throws unless there are as many labels as predictions.
  void check_pair_count(const std::vector<NDArray>& labels, const std::vector<NDArray>& preds) const;
  std::string where(size_t pair) const;  // "accuracy: pair 1"

  double sum_metric_ = 0;
  int64_t num_inst_ = 0;

 private:
  std::string name_;
};

// A metric to which each (label, pred) pair adds a sum and an instance count of its own.
class PairwiseMetric : public EvalMetric {
 public:
  void update(const std::vector<NDArray>& labels, const std::vector<NDArray>& preds) override;

 protected:
  using EvalMetric::EvalMetric;
  struct Contribution {
    double sum = 0;
    int64_t instances = 0;
  };
  virtual Contribution evaluate(const NDArray& label, const NDArray& pred,
                                const std::string& where) const = 0;
};

// Fraction of predictions equal to the label. A prediction of another shape than its label holds
// scores, and its argmax along `axis` is the predicted class. Labels and classes compare as int32
// (labels truncated, as MXNet's astype('int32')).
class Accuracy : public PairwiseMetric {
 public:
  explicit Accuracy(int axis = 1);

 protected:
  Contribution evaluate(const NDArray& label, const NDArray& pred, const std::string& where) const override;

 private:
  int axis_;
};

// Fraction of samples whose label is among the top_k scores of its row of pred (N, classes).
// Ties: among equal scores the lower class index ranks higher. Named "top_k_accuracy_<k>".
class TopKAccuracy : public PairwiseMetric {
 public:
  explicit TopKAccuracy(int top_k = 1);

 protected:
  Contribution evaluate(const NDArray& label, const NDArray& pred, const std::string& where) const override;

 private:
  int top_k_;
};

// Mean of -log(p + eps) over samples, p the predicted probability (pred: (N, classes)) of the
// sample's label. Named "cross-entropy".
class CrossEntropy : public PairwiseMetric {
 public:
  explicit CrossEntropy(double eps = 1e-12);

 protected:
  Contribution evaluate(const NDArray& label, const NDArray& pred, const std::string& where) const override;

 private:
  double eps_;
};

// Mean absolute / squared error. As MXNet 1.x, each (label, pred) pair adds its mean error as one
// instance (so get() averages batch means). A 1-D array counts as a column, so label (N) fits pred
// (N, 1); otherwise the shapes must be equal (MXNet would broadcast them).
class MAE : public PairwiseMetric {
 public:
  MAE() : PairwiseMetric("mae") {}

 protected:
  Contribution evaluate(const NDArray& label, const NDArray& pred, const std::string& where) const override;
};

class MSE : public PairwiseMetric {
 public:
  MSE() : PairwiseMetric("mse") {}

 protected:
  Contribution evaluate(const NDArray& label, const NDArray& pred, const std::string& where) const override;
};

// Binary F1 score: labels in {0, 1}, pred (N, 2) scores whose argmax is the predicted class (1 is
// positive). F1 = 2 * precision * recall / (precision + recall), 0 when undefined.
// kMacro (MXNet's default "macro"): the mean of the F1 of each update() call. kMicro: the F1 of the
// counts over all updates.
enum class F1Average { kMacro, kMicro };

class F1 : public EvalMetric {
 public:
  explicit F1(F1Average average = F1Average::kMacro);
  void update(const std::vector<NDArray>& labels, const std::vector<NDArray>& preds) override;
  void reset() override;

 private:
  F1Average average_;
  // kMicro: the confusion counts of all updates so far.
  int64_t true_pos_ = 0, false_pos_ = 0, false_neg_ = 0, total_ = 0;
};

}  // namespace kiln::nn
