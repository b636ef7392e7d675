// Gluon's basic layers (mx.gluon.nn.basic_layers): Dense, Dropout, Embedding and Flatten.
// Options follow the Python keyword arguments; parameters are named as Gluon names them
// (prefix + "weight" / "bias"), and a 0 in_units / input_dim is inferred at the first forward.
#pragma once

#include <memory>
#include <string>

#include "kiln/nn/block.hpp"

namespace kiln::nn {

struct DenseOptions {
  std::string activation;  // "" for none; else as Activation
  bool use_bias = true;
  // true: the input is flattened to (batch, rest); false: Dense applies to the last axis.
  bool flatten = true;
  DType dtype = DType::kFloat32;
  std::shared_ptr<const Initializer> weight_initializer;  // null: the one given to initialize()
  std::shared_ptr<const Initializer> bias_initializer = std::make_shared<Zero>();
  int64_t in_units = 0;  // 0: inferred from the first input
  std::string prefix;
};

// y = activation(x W^T + b) with weight (units, in_units) and bias (units).
class Dense : public HybridBlock {
 public:
  explicit Dense(int64_t units, DenseOptions options = {});
  Parameter& weight() const { return *weight_; }
  Parameter& bias() const;  // an error when use_bias is false

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
  void infer_shape(const std::vector<NDArray>& inputs) override;

 private:
  int64_t units_;
  DenseOptions options_;
  std::shared_ptr<Parameter> weight_, bias_;
};

// Zeroes each element with probability `rate` and scales the rest by 1 / (1 - rate) while
// autograd is in training mode; the identity otherwise.
class Dropout : public HybridBlock {
 public:
  explicit Dropout(double rate, const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  double rate_;
};

struct EmbeddingOptions {
  DType dtype = DType::kFloat32;
  std::shared_ptr<const Initializer> weight_initializer;
  std::string prefix;
};

// Rows of weight (input_dim, output_dim) picked by integer-valued indices of any shape: the
// output has the indices' shape + (output_dim).
class Embedding : public HybridBlock {
 public:
  Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});
  Parameter& weight() const { return *weight_; }

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  std::shared_ptr<Parameter> weight_;
};

// (N, d1, d2, ...) -> (N, d1 * d2 * ...).
class Flatten : public HybridBlock {
 public:
  explicit Flatten(const std::string& prefix = "");

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
};

}  // namespace kiln::nn
