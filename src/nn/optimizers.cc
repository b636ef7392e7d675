// The concrete optimizers (SGD, NAG, Adam, AdamW, RMSProp, AdaGrad): each validates its options
// and maps one step onto its update op (src/ops/optimizer_update.cc).
#include <cmath>

#include "kiln/nn/optimizer.hpp"

namespace kiln::nn {

namespace {

void check_option(bool ok, const char* optimizer, const char* option, const char* expected, double value) {
  KILN_CHECK(ok, ErrorCode::kInvalidArgument, optimizer, " optimizer: ", option, " must be ", expected,
             ", got ", value);
}

void check_decay_rate(const char* optimizer, const char* option, double value) {
  check_option(value >= 0 && value < 1, optimizer, option, "in [0, 1)", value);
}

void check_non_negative(const char* optimizer, const char* option, double value) {
  check_option(std::isfinite(value) && value >= 0, optimizer, option, "finite and >= 0", value);
}

// Adam's bias correction folded into the learning rate: sqrt(1 - beta2^t) / (1 - beta1^t).
double bias_correction(double beta1, double beta2, int64_t t) {
  const double n = static_cast<double>(t);
  return std::sqrt(1 - std::pow(beta2, n)) / (1 - std::pow(beta1, n));
}

}  // namespace

SGD::SGD(SGDOptions options) : Optimizer("sgd", options), momentum_(options.momentum) {
  check_non_negative("sgd", "momentum", momentum_);
}

void SGD::step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
               const NDArray& weight32) {
  AttrMap attrs = common_attrs(s);
  if (momentum_ > 0) attrs.emplace("momentum", momentum_);
  run_update_op(momentum_ > 0 ? "SGDMomUpdate" : "SGDUpdate", weight, grad, states, weight32, attrs);
}

NAG::NAG(SGDOptions options) : Optimizer("nag", options), momentum_(options.momentum) {
  check_non_negative("nag", "momentum", momentum_);
}

void NAG::step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
               const NDArray& weight32) {
  AttrMap attrs = common_attrs(s);
  if (momentum_ > 0) attrs.emplace("momentum", momentum_);
  run_update_op(momentum_ > 0 ? "NAGMomUpdate" : "SGDUpdate", weight, grad, states, weight32, attrs);
}

Adam::Adam(AdamOptions options)
    : Optimizer("adam", options), beta1_(options.beta1), beta2_(options.beta2), epsilon_(options.epsilon) {
  check_decay_rate("adam", "beta1", beta1_);
  check_decay_rate("adam", "beta2", beta2_);
  check_non_negative("adam", "epsilon", epsilon_);
}

void Adam::step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
                const NDArray& weight32) {
  AttrMap attrs = common_attrs(s);
  attrs.insert_or_assign("lr", s.lr * bias_correction(beta1_, beta2_, s.t));
  attrs.emplace("beta1", beta1_);
  attrs.emplace("beta2", beta2_);
  attrs.emplace("epsilon", epsilon_);
  run_update_op("AdamUpdate", weight, grad, states, weight32, attrs);
}

AdamW::AdamW(AdamWOptions options)
    : Optimizer("adamw", options),
      beta1_(options.beta1),
      beta2_(options.beta2),
      epsilon_(options.epsilon),
      correct_bias_(options.correct_bias) {
  check_decay_rate("adamw", "beta1", beta1_);
  check_decay_rate("adamw", "beta2", beta2_);
  check_non_negative("adamw", "epsilon", epsilon_);
}

void AdamW::step(const Step& s, const NDArray& weight, const NDArray& grad,
                 const std::vector<NDArray>& states, const NDArray& weight32) {
  // The op computes weight -= eta * (lr * adam_step + wd * weight): eta carries the scheduled
  // rate, lr only the bias correction, so the decay is lr * wd as in PyTorch's AdamW.
  AttrMap attrs = common_attrs(s);
  attrs.insert_or_assign("lr", correct_bias_ ? bias_correction(beta1_, beta2_, s.t) : 1.0);
  attrs.emplace("eta", s.lr);
  attrs.emplace("beta1", beta1_);
  attrs.emplace("beta2", beta2_);
  attrs.emplace("epsilon", epsilon_);
  run_update_op("AdamWUpdate", weight, grad, states, weight32, attrs);
}

RMSProp::RMSProp(RMSPropOptions options)
    : Optimizer("rmsprop", options),
      gamma1_(options.gamma1),
      gamma2_(options.gamma2),
      epsilon_(options.epsilon),
      clip_weights_(options.clip_weights),
      centered_(options.centered) {
  check_decay_rate("rmsprop", "gamma1", gamma1_);
  check_non_negative("rmsprop", "gamma2", gamma2_);
  check_non_negative("rmsprop", "epsilon", epsilon_);
}

void RMSProp::step(const Step& s, const NDArray& weight, const NDArray& grad,
                   const std::vector<NDArray>& states, const NDArray& weight32) {
  AttrMap attrs = common_attrs(s);
  attrs.emplace("gamma1", gamma1_);
  attrs.emplace("epsilon", epsilon_);
  attrs.emplace("clip_weights", clip_weights_);
  if (centered_) attrs.emplace("gamma2", gamma2_);
  run_update_op(centered_ ? "RMSPropAlexUpdate" : "RMSPropUpdate", weight, grad, states, weight32, attrs);
}

AdaGrad::AdaGrad(AdaGradOptions options) : Optimizer("adagrad", options), epsilon_(options.epsilon) {
  check_non_negative("adagrad", "epsilon", epsilon_);
}

void AdaGrad::step(const Step& s, const NDArray& weight, const NDArray& grad,
                   const std::vector<NDArray>& states, const NDArray& weight32) {
  AttrMap attrs = common_attrs(s);
  attrs.emplace("epsilon", epsilon_);
  run_update_op("AdaGradUpdate", weight, grad, states, weight32, attrs);
}

}  // namespace kiln::nn
