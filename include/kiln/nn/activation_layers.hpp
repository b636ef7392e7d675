// Gluon's activation layers (mx.gluon.nn.activations): Activation by name, LeakyReLU, PReLU
// (a learned slope, "alpha"), ELU, SELU, SiLU / Swish and GELU (erf form).
#pragma once

#include <memory>
#include <string>

#include "kiln/nn/block.hpp"

namespace kiln::nn {

// MXNet's Activation act_type: relu, sigmoid, tanh, softrelu (log(1 + e^x)), softsign
// (x / (1 + |x|)). Unknown names throw kiln::Error listing the known ones.
NDArray activation(const NDArray& x, const std::string& act_type);
// Throws unless `act_type` is "" or a name activation() knows; `where` names the caller.
void check_activation(const std::string& act_type, const std::string& where);

class Activation : public HybridBlock {
 public:
  explicit Activation(std::string act_type, const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  std::string act_type_;
};

// x for x >= 0, alpha * x otherwise.
class LeakyReLU : public HybridBlock {
 public:
  explicit LeakyReLU(double alpha, const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  double alpha_;
};

struct PReLUOptions {
  std::shared_ptr<const Initializer> alpha_initializer = std::make_shared<Constant>(0.25);
  int64_t in_channels = 1;  // one slope, or one per channel (axis 1)
  std::string prefix;
};

// LeakyReLU with a learned slope "alpha" of shape (in_channels).
class PReLU : public HybridBlock {
 public:
  explicit PReLU(PReLUOptions options = {});
  Parameter& alpha() const { return *alpha_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  std::shared_ptr<Parameter> alpha_;
};

// x for x > 0, alpha * (e^x - 1) otherwise.
class ELU : public HybridBlock {
 public:
  explicit ELU(double alpha = 1.0, const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  double alpha_;
};

// lambda * ELU(x, alpha) with the self-normalizing constants.
class SELU : public HybridBlock {
 public:
  explicit SELU(const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
};

// x * sigmoid(beta * x); SiLU is beta = 1.
class Swish : public HybridBlock {
 public:
  explicit Swish(double beta = 1.0, const std::string& prefix = "");

 protected:
  Swish(const std::string& hint, double beta, const std::string& prefix);
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  double beta_;
};

class SiLU : public Swish {
 public:
  explicit SiLU(const std::string& prefix = "");
};

// x * Phi(x), Phi the standard normal CDF (MXNet's LeakyReLU act_type "gelu").
class GELU : public HybridBlock {
 public:
  explicit GELU(const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
};

}  // namespace kiln::nn
