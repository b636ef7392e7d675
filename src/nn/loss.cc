// Gluon's losses, written with NDArray ops so that autograd differentiates them; the shapes are
// checked first so that a wrong label names the loss instead of an op deep inside it.
#include "kiln/nn/loss.hpp"

namespace kiln::nn {

namespace {

std::vector<int64_t> all_axes_but(int batch_axis, int rank) {
  std::vector<int64_t> axes;
  for (int a = 0; a < rank; ++a)
    if (a != batch_axis) axes.push_back(a);
  return axes;
}

}  // namespace

Loss::Loss(const std::string& hint, LossOptions options)
    : HybridBlock(hint, options.prefix), options_(options) {}

NDArray Loss::operator()(const NDArray& pred, const NDArray& label, const NDArray& sample_weight) {
  std::vector<NDArray> inputs = {pred, label};
  if (sample_weight.defined()) inputs.push_back(sample_weight);
  return forward(inputs)[0];
}

NDArray Loss::label_like_pred(const NDArray& label, const NDArray& pred) const {
  KILN_CHECK(label.size() == pred.size(), ErrorCode::kShapeMismatch, name(), ": label shape ", label.shape(),
             " does not fit prediction shape ", pred.shape(), " (the same number of elements is needed)");
  return label.shape() == pred.shape() ? label : label.reshape(pred.shape());
}

std::vector<NDArray> Loss::hybrid_forward(const std::vector<NDArray>& inputs) {
  KILN_CHECK(inputs.size() == 2 || inputs.size() == 3, ErrorCode::kInvalidArgument, name(),
             ": expected inputs (pred, label[, sample_weight]), got ", inputs.size());
  const NDArray& pred = inputs[0];
  KILN_CHECK(pred.ndim() >= 1, ErrorCode::kShapeMismatch, name(),
             ": expected a prediction with a batch axis, got ", pred.shape());
  NDArray loss = elementwise(pred, inputs[1]);
  if (inputs.size() == 3) {
    const NDArray& w = inputs[2];
    broadcast_shapes(loss.shape(), w.shape(),
                     name() + ": sample_weight " + w.shape().to_string() + " against the loss " +
                         loss.shape().to_string());
    loss = loss * w;
  }
  if (options_.weight != 1.0) loss = loss * options_.weight;
  const int batch_axis = normalize_axis(options_.batch_axis, loss.ndim(), name() + " batch_axis");
  const std::vector<int64_t> axes = all_axes_but(batch_axis, loss.ndim());
  if (axes.empty()) return {loss};
  return {sums() ? nd::sum(loss, axes) : nd::mean(loss, axes)};
}

L1Loss::L1Loss(LossOptions options) : Loss("l1loss", options) {}

NDArray L1Loss::elementwise(const NDArray& pred, const NDArray& label) const {
  return nd::abs(label_like_pred(label, pred) - pred);
}

L2Loss::L2Loss(LossOptions options) : Loss("l2loss", options) {}

NDArray L2Loss::elementwise(const NDArray& pred, const NDArray& label) const {
  const NDArray d = label_like_pred(label, pred) - pred;
  return d * d * 0.5;
}

HuberLoss::HuberLoss(double rho, LossOptions options) : Loss("huberloss", options), rho_(rho) {
  KILN_CHECK(rho > 0, ErrorCode::kInvalidArgument, name(), ": rho must be > 0, got ", rho);
}

NDArray HuberLoss::elementwise(const NDArray& pred, const NDArray& label) const {
  const NDArray d = nd::abs(label_like_pred(label, pred) - pred);
  const NDArray rho = nd::scalar(rho_, d.dtype());
  return nd::where(nd::greater(d, rho), d - 0.5 * rho_, d * d * (0.5 / rho_));
}

SoftmaxCrossEntropyLoss::SoftmaxCrossEntropyLoss(SoftmaxCrossEntropyOptions options)
    : Loss("softmaxcrossentropyloss", options), options_(options) {}

NDArray SoftmaxCrossEntropyLoss::elementwise(const NDArray& pred, const NDArray& label) const {
  const int axis = normalize_axis(options_.axis, pred.ndim(), name() + " axis");
  const NDArray log_prob =
      options_.from_logits ? pred : nd::invoke1("LogSoftmax", {pred}, {{"axis", static_cast<int64_t>(axis)}});
  if (!options_.sparse_label) return -nd::sum(log_prob * label_like_pred(label, pred), {axis}, true);
  // Sparse labels: pred's shape without the class axis, or with it as 1.
  Shape picked = pred.shape();
  picked[axis] = 1;
  KILN_CHECK(label.size() == picked.numel(), ErrorCode::kShapeMismatch, name(), ": label shape ",
             label.shape(), " does not fit prediction shape ", pred.shape(),
             " (sparse labels need one class index per sample: ", picked, ")");
  const NDArray index = label.astype(DType::kInt64).reshape(picked);
  return -nd::invoke1("GatherElements", {log_prob, index}, {{"axis", static_cast<int64_t>(axis)}});
}

SigmoidBinaryCrossEntropyLoss::SigmoidBinaryCrossEntropyLoss(SigmoidBinaryCrossEntropyOptions options)
    : Loss("sigmoidbinarycrossentropyloss", options), from_sigmoid_(options.from_sigmoid) {}

NDArray SigmoidBinaryCrossEntropyLoss::elementwise(const NDArray& pred, const NDArray& label) const {
  const NDArray z = label_like_pred(label, pred);
  if (!from_sigmoid_) return nd::relu(pred) - pred * z + nd::invoke1("Softplus", {-nd::abs(pred)});
  constexpr double kEps = 1e-12;
  return -(nd::log(pred + kEps) * z + nd::log(1.0 - pred + kEps) * (1.0 - z));
}

KLDivLoss::KLDivLoss(KLDivOptions options) : Loss("kldivloss", options), options_(options) {}

NDArray KLDivLoss::elementwise(const NDArray& pred, const NDArray& label) const {
  KILN_CHECK(label.shape() == pred.shape(), ErrorCode::kShapeMismatch, name(), ": label shape ",
             label.shape(), " differs from prediction shape ", pred.shape());
  const NDArray log_prob =
      options_.from_logits ? pred : nd::invoke1("LogSoftmax", {pred}, {{"axis", options_.axis}});
  return label * (nd::log(label + 1e-12) - log_prob);
}

}  // namespace kiln::nn
