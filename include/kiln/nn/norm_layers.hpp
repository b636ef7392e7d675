// Gluon's normalization layers (mx.gluon.nn.basic_layers): BatchNorm, LayerNorm, InstanceNorm and
// GroupNorm, with Gluon's parameter names (gamma, beta, running_mean, running_var) and shapes.
#pragma once

#include <memory>
#include <string>

#include "kiln/nn/block.hpp"

namespace kiln::nn {

struct NormOptions {
  double epsilon = 1e-5;
  bool center = true;  // learn beta (else it stays 0 and takes no gradient)
  bool scale = true;   // learn gamma (else it stays 1 and takes no gradient)
  std::shared_ptr<const Initializer> beta_initializer = std::make_shared<Zero>();
  std::shared_ptr<const Initializer> gamma_initializer = std::make_shared<One>();
  int64_t in_channels = 0;  // 0: inferred from the first input
  std::string prefix;
};

// NormOptions' fields and BatchNorm's own (a separate struct: designated initializers cannot
// reach into a base).
struct BatchNormOptions {
  int axis = 1;  // the channel axis; only 1 (NC...) is supported
  double momentum = 0.9;
  double epsilon = 1e-5;
  bool center = true;
  bool scale = true;
  bool use_global_stats = false;  // normalize with the running statistics in training mode too
  std::shared_ptr<const Initializer> beta_initializer = std::make_shared<Zero>();
  std::shared_ptr<const Initializer> gamma_initializer = std::make_shared<One>();
  std::shared_ptr<const Initializer> running_mean_initializer = std::make_shared<Zero>();
  std::shared_ptr<const Initializer> running_variance_initializer = std::make_shared<One>();
  int64_t in_channels = 0;
  std::string prefix;
};

// In training mode (autograd::is_training) normalizes with the batch's statistics and moves
// running_mean / running_var towards them: running = running * momentum + batch * (1 - momentum),
// with the biased batch variance as MXNet. Otherwise normalizes with the running statistics.
class BatchNorm : public HybridBlock {
 public:
  explicit BatchNorm(BatchNormOptions options = {});
  Parameter& gamma() const { return *gamma_; }
  Parameter& beta() const { return *beta_; }
  Parameter& running_mean() const { return *running_mean_; }
  Parameter& running_var() const { return *running_var_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
  void infer_shape(const std::vector<NDArray>& inputs) override;

 private:
  BatchNormOptions options_;
  std::shared_ptr<Parameter> gamma_, beta_, running_mean_, running_var_;
};

// Normalizes over one axis (default the last): gamma and beta have that axis's size.
class LayerNorm : public HybridBlock {
 public:
  explicit LayerNorm(NormOptions options = {}, int axis = -1);
  Parameter& gamma() const { return *gamma_; }
  Parameter& beta() const { return *beta_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
  void infer_shape(const std::vector<NDArray>& inputs) override;

 private:
  NormOptions options_;
  int axis_;
  std::shared_ptr<Parameter> gamma_, beta_;
};

// Normalizes each (sample, channel) over the spatial axes; gamma and beta are per channel (axis 1).
class InstanceNorm : public HybridBlock {
 public:
  explicit InstanceNorm(NormOptions options = {});
  Parameter& gamma() const { return *gamma_; }
  Parameter& beta() const { return *beta_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
  void infer_shape(const std::vector<NDArray>& inputs) override;

 private:
  NormOptions options_;
  std::shared_ptr<Parameter> gamma_, beta_;
};

// Splits the channels into num_groups groups and normalizes each (sample, group) over its
// channels and spatial axes. As MXNet 1.x, gamma and beta have one value per group.
class GroupNorm : public HybridBlock {
 public:
  explicit GroupNorm(int64_t num_groups = 1, NormOptions options = {});
  Parameter& gamma() const { return *gamma_; }
  Parameter& beta() const { return *beta_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  int64_t num_groups_;
  NormOptions options_;
  std::shared_ptr<Parameter> gamma_, beta_;
};

}  // namespace kiln::nn
