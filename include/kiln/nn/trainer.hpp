// Gluon's Trainer (mx.gluon.Trainer): applies an nn::Optimizer to a set of parameters.
//
//   nn::Trainer trainer(net.collect_params(), "adam", {{"learning_rate", 0.002}});
//   { auto rec = autograd::record(); loss = loss_fn(net(x), y); }
//   loss.backward();
//   trainer.step(batch_size);   // gradients scaled by 1 / batch_size, every trainable parameter updated
//
// step() first runs the allreduce hook (none by default) on the gradients, the point where
// distributed training sums them across workers, then updates each parameter whose grad_req is
// not null with the optimizer (index = position in the dict; lr_mult / wd_mult from the parameter).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/nn/optimizer.hpp"
#include "kiln/nn/parameter.hpp"

namespace kiln::nn {

class Trainer {
 public:
  // The optimizer by name with MXNet's option names (create_optimizer).
  Trainer(const ParameterDict& params, const std::string& optimizer, const AttrMap& options = {});
  Trainer(const ParameterDict& params, std::unique_ptr<Optimizer> optimizer);

  // allreduce_grads() then update(batch_size).
  void step(int64_t batch_size);
  // Runs the allreduce hook on the trainable parameters (a no-op without one).
  void allreduce_grads();
  // One optimizer update of every trainable parameter with rescale_grad = the optimizer's
  // rescale_grad / batch_size. Throws kiln::Error naming a parameter that is not initialized.
  void update(int64_t batch_size);

  using AllreduceHook = std::function<void(const std::vector<std::shared_ptr<Parameter>>&)>;
  void set_allreduce_hook(AllreduceHook hook) { allreduce_hook_ = std::move(hook); }

  double learning_rate() const { return optimizer_->learning_rate(); }
  void set_learning_rate(double lr) { optimizer_->set_learning_rate(lr); }
  Optimizer& optimizer() const { return *optimizer_; }
  const std::vector<std::shared_ptr<Parameter>>& params() const { return params_; }

 private:
  std::vector<std::shared_ptr<Parameter>> params_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<OptimizerState> states_;
  std::vector<bool> has_state_;
  AllreduceHook allreduce_hook_;
};

}  // namespace kiln::nn
