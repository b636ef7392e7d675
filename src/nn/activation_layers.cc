// Activation layers on the activation ops (Relu, Sigmoid, Softplus, LeakyRelu, PRelu, Elu, Selu,
// Gelu), each differentiated by its op's gradient rule.
#include "kiln/nn/activation_layers.hpp"

#include <map>

#include "nn/layer_inputs.h"

namespace kiln::nn {

namespace {

// MXNet act_type -> the op computing it.
const std::map<std::string, std::string>& activation_ops() {
  static const std::map<std::string, std::string> ops = {{"relu", "Relu"},
                                                         {"sigmoid", "Sigmoid"},
                                                         {"tanh", "Tanh"},
                                                         {"softrelu", "Softplus"},
                                                         {"softsign", "Softsign"}};
  return ops;
}

}  // namespace

void check_activation(const std::string& act_type, const std::string& where) {
  KILN_CHECK(act_type.empty() || activation_ops().count(act_type), ErrorCode::kInvalidArgument, where,
             ": unknown activation '", act_type,
             "'; expected one of relu, sigmoid, tanh, softrelu, softsign");
}

NDArray activation(const NDArray& x, const std::string& act_type) {
  check_activation(act_type, "activation");
  KILN_CHECK(!act_type.empty(), ErrorCode::kInvalidArgument, "activation: empty act_type");
  return nd::invoke1(activation_ops().at(act_type), {x});
}

Activation::Activation(std::string act_type, const std::string& prefix)
    : HybridBlock(act_type, prefix), act_type_(std::move(act_type)) {
  KILN_CHECK(!act_type_.empty(), ErrorCode::kInvalidArgument, "Activation: empty act_type");
  check_activation(act_type_, "Activation '" + name() + "'");
}

std::vector<NDArray> Activation::hybrid_forward(const std::vector<NDArray>& inputs) {
  return {activation(single_input(inputs, name()), act_type_)};
}

LeakyReLU::LeakyReLU(double alpha, const std::string& prefix)
    : HybridBlock("leakyrelu", prefix), alpha_(alpha) {
  KILN_CHECK(alpha >= 0, ErrorCode::kInvalidArgument, "LeakyReLU '", name(), "': alpha must be >= 0, got ",
             alpha);
}

std::vector<NDArray> LeakyReLU::hybrid_forward(const std::vector<NDArray>& inputs) {
  return {nd::invoke1("LeakyRelu", {single_input(inputs, name())}, {{"alpha", alpha_}})};
}

PReLU::PReLU(PReLUOptions options) : HybridBlock("prelu", options.prefix) {
  KILN_CHECK(options.in_channels > 0, ErrorCode::kInvalidArgument, "PReLU '", name(),
             "': in_channels must be > 0, got ", options.in_channels);
  alpha_ = register_parameter("alpha", {.shape = {options.in_channels}, .init = options.alpha_initializer});
}

std::vector<NDArray> PReLU::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  NDArray slope = alpha_->data();
  // One slope per channel (axis 1): (C, 1, ..., 1) broadcasts over the axes after it.
  if (slope.size() > 1 && x.ndim() > 2) {
    Shape per_channel{slope.size()};
    for (int i = 2; i < x.ndim(); ++i) per_channel.push_back(1);
    slope = slope.reshape(per_channel);
  }
  return {nd::invoke1("PRelu", {x, slope})};
}

ELU::ELU(double alpha, const std::string& prefix) : HybridBlock("elu", prefix), alpha_(alpha) {}

std::vector<NDArray> ELU::hybrid_forward(const std::vector<NDArray>& inputs) {
  return {nd::invoke1("Elu", {single_input(inputs, name())}, {{"alpha", alpha_}})};
}

SELU::SELU(const std::string& prefix) : HybridBlock("selu", prefix) {}

std::vector<NDArray> SELU::hybrid_forward(const std::vector<NDArray>& inputs) {
  return {nd::invoke1("Selu", {single_input(inputs, name())})};
}

Swish::Swish(double beta, const std::string& prefix) : Swish("swish", beta, prefix) {}

Swish::Swish(const std::string& hint, double beta, const std::string& prefix)
    : HybridBlock(hint, prefix), beta_(beta) {}

std::vector<NDArray> Swish::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  return {x * nd::sigmoid(beta_ == 1.0 ? x : x * beta_)};
}

SiLU::SiLU(const std::string& prefix) : Swish("silu", 1.0, prefix) {}

GELU::GELU(const std::string& prefix) : HybridBlock("gelu", prefix) {}

std::vector<NDArray> GELU::hybrid_forward(const std::vector<NDArray>& inputs) {
  return {nd::invoke1("Gelu", {single_input(inputs, name())})};
}

}  // namespace kiln::nn
