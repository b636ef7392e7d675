// Gluon's losses (mx.gluon.loss): one loss value per sample (the batch axis kept, the others
// averaged, or summed for KLDivLoss), times the loss's scalar weight and an optional
// sample_weight that broadcasts to the elementwise loss.
//
//   nn::SoftmaxCrossEntropyLoss loss_fn;
//   NDArray loss = loss_fn(scores, labels);   // (N)
//
// A label that does not fit the prediction throws kiln::Error naming the loss and both shapes.
#pragma once

#include <string>

#include "kiln/nn/block.hpp"

namespace kiln::nn {

struct LossOptions {
  double weight = 1.0;
  int batch_axis = 0;
  std::string prefix;
};

class Loss : public HybridBlock {
 public:
  // Inputs: pred, label and, optionally, sample_weight.
  NDArray operator()(const NDArray& pred, const NDArray& label, const NDArray& sample_weight = NDArray());
  using HybridBlock::operator();

 protected:
  Loss(const std::string& hint, LossOptions options);
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) final;
  // The elementwise (unreduced) loss, before weighting.
  virtual NDArray elementwise(const NDArray& pred, const NDArray& label) const = 0;
  // Averages (default) or sums the weighted loss over every axis but the batch axis.
  virtual bool sums() const { return false; }
  // `label` as pred's shape (Gluon's reshape_like): the same number of elements is required.
  NDArray label_like_pred(const NDArray& label, const NDArray& pred) const;

 private:
  LossOptions options_;
};

// |label - pred|.
class L1Loss : public Loss {
 public:
  explicit L1Loss(LossOptions options = {});

 protected:
  NDArray elementwise(const NDArray& pred, const NDArray& label) const override;
};

// (label - pred)^2 / 2 (the weight is halved, as Gluon).
class L2Loss : public Loss {
 public:
  explicit L2Loss(LossOptions options = {});

 protected:
  NDArray elementwise(const NDArray& pred, const NDArray& label) const override;
};

// |d| - rho / 2 where |d| > rho, d^2 / (2 rho) elsewhere (d = label - pred).
class HuberLoss : public Loss {
 public:
  explicit HuberLoss(double rho = 1.0, LossOptions options = {});

 protected:
  NDArray elementwise(const NDArray& pred, const NDArray& label) const override;

 private:
  double rho_;
};

struct SoftmaxCrossEntropyOptions : LossOptions {
  int axis = -1;             // the class axis
  bool sparse_label = true;  // labels are class indices (else probabilities of pred's shape)
  bool from_logits = false;  // pred already holds log-probabilities
};

// -log_softmax(pred)[label] (sparse) or -sum(label * log_softmax(pred)) over the class axis.
// Sparse labels have pred's shape without the class axis (a trailing 1 is accepted).
class SoftmaxCrossEntropyLoss : public Loss {
 public:
  explicit SoftmaxCrossEntropyLoss(SoftmaxCrossEntropyOptions options = {});

 protected:
  NDArray elementwise(const NDArray& pred, const NDArray& label) const override;

 private:
  SoftmaxCrossEntropyOptions options_;
};

struct SigmoidBinaryCrossEntropyOptions : LossOptions {
  bool from_sigmoid = false;  // pred already holds probabilities
};

// Binary cross entropy of sigmoid(pred) against label in [0, 1], computed stably from logits as
// max(x, 0) - x * z + log(1 + e^-|x|); from probabilities as -(z log(p + eps) + (1 - z) log(1 - p + eps)).
class SigmoidBinaryCrossEntropyLoss : public Loss {
 public:
  explicit SigmoidBinaryCrossEntropyLoss(SigmoidBinaryCrossEntropyOptions options = {});

 protected:
  NDArray elementwise(const NDArray& pred, const NDArray& label) const override;

 private:
  bool from_sigmoid_;
};

struct KLDivOptions : LossOptions {
  bool from_logits = true;  // pred holds log-probabilities (else log_softmax is applied on `axis`)
  int axis = -1;
};

// label * (log(label + 1e-12) - pred), summed over every axis but the batch axis (as Gluon 1.x).
class KLDivLoss : public Loss {
 public:
  explicit KLDivLoss(KLDivOptions options = {});

 protected:
  NDArray elementwise(const NDArray& pred, const NDArray& label) const override;
  bool sums() const override { return true; }

 private:
  KLDivOptions options_;
};

}  // namespace kiln::nn
