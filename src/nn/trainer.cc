// Trainer: the optimizer's per-parameter state, the 1 / batch_size gradient scaling and the
// allreduce hook.
#include "kiln/nn/trainer.hpp"

#include "kiln/autograd.hpp"

namespace kiln::nn {

Trainer::Trainer(const ParameterDict& params, const std::string& optimizer, const AttrMap& options)
    : Trainer(params, create_optimizer(optimizer, options)) {}

Trainer::Trainer(const ParameterDict& params, std::unique_ptr<Optimizer> optimizer)
    : optimizer_(std::move(optimizer)) {
  KILN_CHECK(optimizer_ != nullptr, ErrorCode::kInvalidArgument, "Trainer: null optimizer");
  for (const auto& p : params) params_.push_back(p);
  states_.resize(params_.size());
  has_state_.assign(params_.size(), false);
}

void Trainer::step(int64_t batch_size) {
  allreduce_grads();
  update(batch_size);
}

void Trainer::allreduce_grads() {
  if (allreduce_hook_) allreduce_hook_(params_);
}

void Trainer::update(int64_t batch_size) {
  KILN_CHECK(batch_size > 0, ErrorCode::kInvalidArgument, "Trainer::step: batch_size must be > 0, got ",
             batch_size);
  for (const auto& p : params_)
    KILN_CHECK(p->grad_req() == GradReq::kNull || p->initialized(), ErrorCode::kInvalidArgument,
               "Trainer::step: parameter '", p->name(),
               "' is not initialized (deferred initialization finishes at the first forward pass)");
  // The optimizer's own rescale_grad still applies; the gradient is scaled by 1 / batch_size
  // before it (Gluon sets rescale_grad = scale / batch_size). The parameters' gradient buffers
  // are left as backward wrote them.
  const double scale = 1.0 / static_cast<double>(batch_size);
  auto paused = autograd::pause(autograd::is_training());
  for (size_t i = 0; i < params_.size(); ++i) {
    Parameter& p = *params_[i];
    if (p.grad_req() == GradReq::kNull) continue;
    const int index = static_cast<int>(i);
    const NDArray weight = p.data();
    if (!has_state_[i]) {
      states_[i] = optimizer_->create_state(index, weight);
      has_state_[i] = true;
    }
    optimizer_->set_lr_mult(index, p.lr_mult());
    optimizer_->set_wd_mult(index, p.wd_mult());
    optimizer_->update(index, weight, p.grad() * scale, states_[i]);
  }
}

}  // namespace kiln::nn
