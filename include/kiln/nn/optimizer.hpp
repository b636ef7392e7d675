// Optimizers with MXNet Gluon semantics (mx.optimizer): SGD (momentum), NAG, Adam, AdamW,
// RMSProp (plain and centered) and AdaGrad. They work on NDArrays: a parameter is an index with a
// weight, its gradient and the state the optimizer made for it, and update() writes the new
// weight and state in place (through the update ops of src/ops/optimizer_update.cc).
//
//   auto opt = nn::create_optimizer("adam", {{"learning_rate", 1e-3}, {"wd", 1e-4}});
//   nn::OptimizerState state = opt->create_state(0, weight);
//   opt->update(0, weight, grad, state);   // weight and state changed in place
//
// As in MXNet, each parameter index counts its updates (t, from begin_num_update + 1), and the
// learning rate of an update is schedule(num_update) (num_update: the largest count so far) or
// the fixed learning_rate, times the index's lr_mult; weight decay is wd times its wd_mult. With
// multi_precision, float16 and bfloat16 weights are updated through a float32 master copy kept in
// the state. An Optimizer is not thread-safe: one thread updates at a time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/ndarray.hpp"
#include "kiln/nn/lr_scheduler.hpp"

namespace kiln::nn {

// What an optimizer keeps per parameter: its state arrays (momentum, moments ...; none for plain
// SGD) in the order its update op takes them, and the float32 master copy of a 16-bit weight
// under multi_precision (undefined otherwise).
struct OptimizerState {
  std::vector<NDArray> arrays;
  NDArray weight32;
};

// The arguments of MXNet's Optimizer base class.
struct OptimizerOptions {
  double learning_rate = 0.01;  // ignored when lr_scheduler is set: the schedule's base_lr rules
  double wd = 0;
  double rescale_grad = 1;
  double clip_gradient = -1;  // clip rescaled gradients to [-c, c] when c > 0
  bool multi_precision = false;
  int64_t begin_num_update = 0;
  std::shared_ptr<const LRScheduler> lr_scheduler;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // "sgd", "adam", ...: the name create_optimizer knows it by.
  const std::string& name() const { return name_; }

  // Zero-filled state arrays of the weight's shape (float32 with a master copy, which starts as
  // the weight's value; the weight's dtype otherwise).
  OptimizerState create_state(int index, const NDArray& weight) const;
  // One update of parameter `index`: weight and state change in place. Throws kiln::Error naming
  // the index when the gradient or state does not fit the weight; nothing changes then.
  void update(int index, const NDArray& weight, const NDArray& grad, OptimizerState& state);

  // Per-parameter multipliers (MXNet's lr_mult / wd_mult); 1 for indices never set.
  void set_lr_mult(int index, double mult);
  void set_wd_mult(int index, double mult);
  // The base learning rate at the current num_update (before lr_mult).
  double learning_rate() const;
  // Sets the fixed learning rate; an error when a schedule decides it.
  void set_learning_rate(double lr);
  int64_t num_update() const { return num_update_; }
  // Updates done on `index` (begin_num_update when none).
  int64_t update_count(int index) const;
  const OptimizerOptions& options() const { return options_; }

 protected:
  Optimizer(std::string name, OptimizerOptions options);

  // What one step of one parameter gets: the learning rate and weight decay with their
  // multipliers applied, and t, the parameter's update count including this update.
  struct Step {
    int index;
    double lr, wd;
    int64_t t;
  };
  virtual int num_states() const = 0;
  // Runs the update op on (weight or master copy, grad, states). `weight32` is the master copy
  // to pass as the op's last input and output, or undefined.
  virtual void step(const Step& s, const NDArray& weight, const NDArray& grad,
                    const std::vector<NDArray>& states, const NDArray& weight32) = 0;
  // The attributes every update op takes (lr, wd, rescale_grad, clip_gradient).
  AttrMap common_attrs(const Step& s) const;
  // Runs `op` in place: inputs (weight, grad, states..., weight32?) into (weight, states..., weight32?).
  static void run_update_op(const std::string& op, const NDArray& weight, const NDArray& grad,
                            const std::vector<NDArray>& states, const NDArray& weight32,
                            const AttrMap& attrs);

 private:
  void check_fits(int index, const NDArray& weight, const NDArray& grad, const OptimizerState& state) const;

  std::string name_;
  OptimizerOptions options_;
  std::map<int, double> lr_mult_, wd_mult_;
  std::map<int, int64_t> update_count_;
  int64_t num_update_;
};

// SGD; with momentum > 0, MXNet's sgd_mom_update (velocity scaled by the learning rate).
struct SGDOptions : OptimizerOptions {
  double momentum = 0;
};
class SGD : public Optimizer {
 public:
  explicit SGD(SGDOptions options = {});

 protected:
  int num_states() const override { return momentum_ > 0 ? 1 : 0; }
  void step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
            const NDArray& weight32) override;

 private:
  double momentum_;
};

// Nesterov accelerated gradient; plain SGD when momentum is 0.
class NAG : public Optimizer {
 public:
  explicit NAG(SGDOptions options = {});

 protected:
  int num_states() const override { return momentum_ > 0 ? 1 : 0; }
  void step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
            const NDArray& weight32) override;

 private:
  double momentum_;
};

struct AdamOptions : OptimizerOptions {
  AdamOptions() { learning_rate = 0.001; }
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-8;
};

// Adam as MXNet's Python Adam: the bias correction scales the learning rate,
//   lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t),   weight -= lr_t * mean / (sqrt(var) + epsilon),
// with wd added to the gradient (L2). PyTorch divides sqrt(var) by sqrt(1 - beta2^t) before adding
// epsilon instead; the two agree but for epsilon's scale (epsilon * sqrt(1 - beta2^t) in PyTorch's
// terms).
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {});

 protected:
  int num_states() const override { return 2; }
  void step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
            const NDArray& weight32) override;

 private:
  double beta1_, beta2_, epsilon_;
};

struct AdamWOptions : AdamOptions {
  bool correct_bias = true;
};

// AdamW (decoupled weight decay, Loshchilov & Hutter), moments as Adam's without wd:
//   weight -= lr * (c_t * mean / (sqrt(var) + epsilon) + wd * weight),
//   c_t = sqrt(1 - beta2^t) / (1 - beta1^t)   (1 without correct_bias),
// i.e. PyTorch's AdamW up to epsilon's scale (as for Adam).
class AdamW : public Optimizer {
 public:
  explicit AdamW(AdamWOptions options = {});

 protected:
  int num_states() const override { return 2; }
  void step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
            const NDArray& weight32) override;

 private:
  double beta1_, beta2_, epsilon_;
  bool correct_bias_;
};

struct RMSPropOptions : OptimizerOptions {
  RMSPropOptions() { learning_rate = 0.001; }
  double gamma1 = 0.9, gamma2 = 0.9, epsilon = 1e-8;
  bool centered = false;
  double clip_weights = -1;  // clip weights to [-c, c] after each update when c > 0
};

// RMSProp (Tieleman & Hinton); centered (Graves 2013) with momentum gamma2 when `centered`.
class RMSProp : public Optimizer {
 public:
  explicit RMSProp(RMSPropOptions options = {});

 protected:
  int num_states() const override { return centered_ ? 3 : 1; }
  void step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
            const NDArray& weight32) override;

 private:
  double gamma1_, gamma2_, epsilon_, clip_weights_;
  bool centered_;
};

struct AdaGradOptions : OptimizerOptions {
  double epsilon = 1e-7;  // MXNet's `eps`
};

class AdaGrad : public Optimizer {
 public:
  explicit AdaGrad(AdaGradOptions options = {});

 protected:
  int num_states() const override { return 1; }
  void step(const Step& s, const NDArray& weight, const NDArray& grad, const std::vector<NDArray>& states,
            const NDArray& weight32) override;

 private:
  double epsilon_;
};

// An optimizer by name ("sgd", "nag", "adam", "adamw", "rmsprop", "adagrad"; case-insensitive)
// with options named as in MXNet (learning_rate, wd, rescale_grad, clip_gradient,
// multi_precision, begin_num_update, momentum, beta1, beta2, epsilon, correct_bias, gamma1,
// gamma2, centered, clip_weights; AdaGrad's epsilon is also accepted as eps). Unknown names and
// options, and options of the wrong type, throw kiln::Error. With a schedule, learning_rate may
// not be given (the schedule's base_lr is the rate).
std::unique_ptr<Optimizer> create_optimizer(const std::string& name, const AttrMap& options = {},
                                            std::shared_ptr<const LRScheduler> lr_scheduler = nullptr);

// Scales the arrays in place so that their joint L2 norm is at most max_norm (when it is larger,
// each is multiplied by max_norm / (norm + 1e-8), as gluon.utils.clip_global_norm) and returns
// the norm before scaling. A non-finite norm is returned and the arrays are left as they are.
double clip_global_norm(const std::vector<NDArray>& arrays, double max_norm);

}  // namespace kiln::nn
