// Normalization layers. BatchNorm and LayerNorm run their ops directly; InstanceNorm and GroupNorm
// are LayerNormalization over a reshaped input followed by the per-channel (per-group) affine
// map, because LayerNormalization has a gradient rule and the dedicated ops do not.
#include "kiln/nn/norm_layers.hpp"

#include "kiln/autograd.hpp"
#include "nn/layer_inputs.h"

namespace kiln::nn {

namespace {

ParameterOptions affine_param(int64_t channels, bool learned,
                              const std::shared_ptr<const Initializer>& init) {
  return {.shape = {channels}, .init = init, .grad_req = learned ? GradReq::kWrite : GradReq::kNull};
}

// `v` (C) as (1, C, 1, ..., 1) for an input of rank `rank`.
NDArray channel_view(const NDArray& v, int rank) {
  Shape shape{1, v.size()};
  for (int i = 2; i < rank; ++i) shape.push_back(1);
  return v.reshape(shape);
}

// Normalizes x over its last axis, without scale or shift.
NDArray normalize_last_axis(const NDArray& x, double epsilon) {
  const int64_t n = x.shape()[x.ndim() - 1];
  const NDArray ones = nd::ones(Shape{n}, x.dtype());
  const NDArray zeros = nd::zeros(Shape{n}, x.dtype());
  return nd::invoke1("LayerNormalization", {x, ones, zeros}, {{"axis", -1}, {"epsilon", epsilon}});
}

}  // namespace

BatchNorm::BatchNorm(BatchNormOptions options)
    : HybridBlock("batchnorm", options.prefix), options_(std::move(options)) {
  KILN_CHECK(options_.axis == 1, ErrorCode::kUnsupported, "BatchNorm '", name(),
             "': only axis 1 is supported, got ", options_.axis);
  gamma_ = register_parameter("gamma",
                              affine_param(options_.in_channels, options_.scale, options_.gamma_initializer));
  beta_ = register_parameter("beta",
                             affine_param(options_.in_channels, options_.center, options_.beta_initializer));
  ParameterOptions running = {.shape = {options_.in_channels}, .grad_req = GradReq::kNull};
  running.init = options_.running_mean_initializer;
  running_mean_ = register_parameter("running_mean", running);
  running.init = options_.running_variance_initializer;
  running_var_ = register_parameter("running_var", running);
}

void BatchNorm::infer_shape(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  KILN_CHECK(x.ndim() >= 2, ErrorCode::kShapeMismatch, "BatchNorm '", name(), "': expected (N, C, ...), got ",
             x.shape());
  for (const auto& p : {gamma_, beta_, running_mean_, running_var_}) p->set_shape({x.shape()[1]});
}

std::vector<NDArray> BatchNorm::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  KILN_CHECK(x.ndim() >= 2 && x.shape()[1] == gamma_->shape()[0], ErrorCode::kShapeMismatch, "BatchNorm '",
             name(), "': expected (N, ", gamma_->shape()[0], ", ...), got ", x.shape());
  const std::vector<NDArray> args = {x, gamma_->data(), beta_->data(), running_mean_->data(),
                                     running_var_->data()};
  const bool batch_stats = autograd::is_training() && !options_.use_global_stats;
  const AttrMap attrs = {
      {"epsilon", options_.epsilon}, {"momentum", options_.momentum}, {"training_mode", batch_stats ? 1 : 0}};
  if (!batch_stats) return {nd::invoke1("BatchNormalization", args, attrs)};
  const std::vector<NDArray> outs = nd::invoke("BatchNormalization", args, attrs, 3);
  running_mean_->set_data(outs[1]);
  running_var_->set_data(outs[2]);
  return {outs[0]};
}

LayerNorm::LayerNorm(NormOptions options, int axis)
    : HybridBlock("layernorm", options.prefix), options_(std::move(options)), axis_(axis) {
  gamma_ = register_parameter("gamma",
                              affine_param(options_.in_channels, options_.scale, options_.gamma_initializer));
  beta_ = register_parameter("beta",
                             affine_param(options_.in_channels, options_.center, options_.beta_initializer));
}

void LayerNorm::infer_shape(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  const int axis = normalize_axis(axis_, x.ndim(), "LayerNorm '" + name() + "' axis");
  gamma_->set_shape({x.shape()[axis]});
  beta_->set_shape({x.shape()[axis]});
}

std::vector<NDArray> LayerNorm::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  const int axis = normalize_axis(axis_, x.ndim(), "LayerNorm '" + name() + "' axis");
  KILN_CHECK(x.shape()[axis] == gamma_->shape()[0], ErrorCode::kShapeMismatch, "LayerNorm '", name(),
             "': axis ", axis, " of input ", x.shape(), " should be ", gamma_->shape()[0]);
  const AttrMap attrs = {{"axis", -1}, {"epsilon", options_.epsilon}};
  if (axis == x.ndim() - 1)
    return {nd::invoke1("LayerNormalization", {x, gamma_->data(), beta_->data()}, attrs)};
  // Swap the axis to the end and back (the op normalizes over trailing axes).
  std::vector<int64_t> perm;
  for (int i = 0; i < x.ndim(); ++i) perm.push_back(i);
  std::swap(perm[static_cast<size_t>(axis)], perm.back());
  const NDArray moved = x.transpose(perm).copy();
  const NDArray y = nd::invoke1("LayerNormalization", {moved, gamma_->data(), beta_->data()}, attrs);
  return {y.transpose(perm).copy()};
}

InstanceNorm::InstanceNorm(NormOptions options)
    : HybridBlock("instancenorm", options.prefix), options_(std::move(options)) {
  gamma_ = register_parameter("gamma",
                              affine_param(options_.in_channels, options_.scale, options_.gamma_initializer));
  beta_ = register_parameter("beta",
                             affine_param(options_.in_channels, options_.center, options_.beta_initializer));
}

void InstanceNorm::infer_shape(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  KILN_CHECK(x.ndim() >= 3, ErrorCode::kShapeMismatch, "InstanceNorm '", name(),
             "': expected (N, C, spatial...), got ", x.shape());
  gamma_->set_shape({x.shape()[1]});
  beta_->set_shape({x.shape()[1]});
}

std::vector<NDArray> InstanceNorm::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  KILN_CHECK(x.ndim() >= 3 && x.shape()[1] == gamma_->shape()[0], ErrorCode::kShapeMismatch, "InstanceNorm '",
             name(), "': expected (N, ", gamma_->shape()[0], ", spatial...), got ", x.shape());
  const NDArray normalized =
      normalize_last_axis(x.reshape(Shape{x.shape()[0], x.shape()[1], -1}), options_.epsilon)
          .reshape(x.shape());
  return {normalized * channel_view(gamma_->data(), x.ndim()) + channel_view(beta_->data(), x.ndim())};
}

GroupNorm::GroupNorm(int64_t num_groups, NormOptions options)
    : HybridBlock("groupnorm", options.prefix), num_groups_(num_groups), options_(std::move(options)) {
  KILN_CHECK(num_groups > 0, ErrorCode::kInvalidArgument, "GroupNorm '", name(),
             "': num_groups must be > 0, got ", num_groups);
  gamma_ = register_parameter("gamma", affine_param(num_groups, options_.scale, options_.gamma_initializer));
  beta_ = register_parameter("beta", affine_param(num_groups, options_.center, options_.beta_initializer));
}

std::vector<NDArray> GroupNorm::hybrid_forward(const std::vector<NDArray>& inputs) {
  const NDArray& x = single_input(inputs, name());
  KILN_CHECK(x.ndim() >= 2 && x.shape()[1] % num_groups_ == 0, ErrorCode::kShapeMismatch, "GroupNorm '",
             name(), "': the channels (axis 1) of input ", x.shape(), " are not divisible by num_groups ",
             num_groups_);
  const NDArray grouped = x.reshape(Shape{x.shape()[0], num_groups_, -1});
  const NDArray normalized = normalize_last_axis(grouped, options_.epsilon);
  const NDArray y = normalized * channel_view(gamma_->data(), 3) + channel_view(beta_->data(), 3);
  return {y.reshape(x.shape())};
}

}  // namespace kiln::nn
