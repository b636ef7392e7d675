// Dense, Dropout, Embedding and Flatten on the registered ops (Gemm / MatMul, Dropout, Gather,
// Flatten), so that autograd differentiates them with the ops' gradient rules.
#include "kiln/nn/basic_layers.hpp"

#include "autograd/tape.h"
#include "kiln/autograd.hpp"
#include "kiln/nn/activation_layers.hpp"
#include "nn/layer_inputs.h"

namespace kiln::nn {

namespace {

NDArray flatten_batch(const NDArray& x) {
  return x.ndim() == 2 ? x : x.flatten();
}

}  // namespace

Dense::Dense(int64_t units, DenseOptions options)
    : HybridBlock("dense", options.prefix), units_(units), options_(std::move(options)) {
  KILN_CHECK(units > 0, ErrorCode::kInvalidArgument, "Dense '", name(), "': units must be > 0, got ", units);
  check_activation(options_.activation, "Dense '" + name() + "'");
  weight_ = register_parameter(
      "weight",
      {.shape = {units, options_.in_units}, .dtype = options_.dtype, .init = options_.weight_initializer});
  if (options_.use_bias)
    bias_ = register_parameter(
        "bias", {.shape = {units}, .dtype = options_.dtype, .init = options_.bias_initializer});
}

Parameter& Dense::bias() const {
  KILN_CHECK(bias_ != nullptr, ErrorCode::kInvalidArgument, "Dense '", name(),
             "' has no bias (use_bias is false)");
  return *bias_;
}

void Dense::infer_shape(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  KILN_CHECK(x.ndim() >= 1, ErrorCode::kShapeMismatch, "Dense '", name(),
             "': expected an input of rank >= 1, got ", x.shape());
  const int64_t in_units =
      options_.flatten ? x.size() / std::max<int64_t>(x.shape()[0], 1) : x.shape()[x.ndim() - 1];
  weight_->set_shape({units_, in_units});
}

std::vector<NDArray> Dense::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  const NDArray w = weight_->data();
  NDArray y;
  if (options_.flatten) {
    const NDArray flat = flatten_batch(x);
    KILN_CHECK(flat.shape()[1] == w.shape()[1], ErrorCode::kShapeMismatch, "Dense '", name(), "': input ",
               x.shape(), " has ", flat.shape()[1], " features per sample, the weight ", w.shape(),
               " expects ", w.shape()[1]);
    std::vector<NDArray> args = {flat, w};
    if (bias_) args.push_back(bias_->data());
    y = nd::invoke1("Gemm", args, {{"transB", 1}});
  } else {
    KILN_CHECK(x.ndim() >= 1 && x.shape()[x.ndim() - 1] == w.shape()[1], ErrorCode::kShapeMismatch, "Dense '",
               name(), "': input ", x.shape(), " does not end in the weight's in_units ", w.shape()[1]);
    y = nd::dot(x, w.transpose());
    if (bias_) y = y + bias_->data();
  }
  return {options_.activation.empty() ? y : activation(y, options_.activation)};
}

Dropout::Dropout(double rate, const std::string& prefix) : HybridBlock("dropout", prefix), rate_(rate) {
  KILN_CHECK(rate >= 0 && rate < 1, ErrorCode::kInvalidArgument, "Dropout '", name(),
             "': rate must be in [0, 1), got ", rate);
}

std::vector<NDArray> Dropout::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  const bool training = autograd::is_training();
  // In predict mode Dropout is the identity, but a trace still records it, so that export writes
  // the layer as MXNet's export does (and a SymbolBlock made from the files trains with it).
  if (rate_ == 0 || (!training && !autograd::is_tracing())) return {x};
  const NDArray ratio = nd::scalar(rate_, x.dtype());
  // Two outputs: the gradient rule needs the mask.
  return {nd::invoke("Dropout", {x, ratio, nd::scalar(training ? 1 : 0, DType::kBool)}, {}, 2)[0]};
}

Embedding::Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : HybridBlock("embedding", options.prefix) {
  KILN_CHECK(input_dim > 0 && output_dim > 0, ErrorCode::kInvalidArgument, "Embedding '", name(),
             "': input_dim and output_dim must be > 0, got ", input_dim, " and ", output_dim);
  weight_ = register_parameter(
      "weight",
      {.shape = {input_dim, output_dim}, .dtype = options.dtype, .init = options.weight_initializer});
}

std::vector<NDArray> Embedding::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  // Indices may come as floats (Gluon feeds them so); Gather takes integers.
  const NDArray indices =
      x.dtype() == DType::kInt64 || x.dtype() == DType::kInt32 ? x : x.astype(DType::kInt64);
  return {nd::invoke1("Gather", {weight_->data(), indices}, {{"axis", 0}})};
}

Flatten::Flatten(const std::string& prefix) : HybridBlock("flatten", prefix) {}

std::vector<NDArray> Flatten::hybrid_forward(const std::vector<NDArray>& inputs) {
  return {flatten_batch(single_input(inputs, name()))};
}

}  // namespace kiln::nn
