// Convolution layers on the Conv and ConvTranspose ops (NC... layout, symmetric padding).
#include "kiln/nn/conv_layers.hpp"

#include "kiln/nn/activation_layers.hpp"
#include "nn/layer_inputs.h"

namespace kiln::nn {

namespace {

std::vector<int64_t> both_sides(const std::vector<int64_t>& padding) {
  std::vector<int64_t> pads = padding;
  pads.insert(pads.end(), padding.begin(), padding.end());
  return pads;
}

}  // namespace

ConvBase::ConvBase(int spatial, bool transposed, int64_t channels, std::vector<int64_t> kernel_size,
                   ConvOptions options)
    : HybridBlock("conv", options.prefix),
      spatial_(spatial),
      transposed_(transposed),
      options_(std::move(options)) {
  kernel_ = per_axis(kernel_size, spatial, "kernel_size", name());
  options_.strides = per_axis(options_.strides, spatial, "strides", name());
  options_.padding = per_axis(options_.padding, spatial, "padding", name());
  options_.dilation = per_axis(options_.dilation, spatial, "dilation", name());
  options_.output_padding = per_axis(options_.output_padding, spatial, "output_padding", name());
  KILN_CHECK(channels > 0 && options_.groups > 0 && channels % options_.groups == 0,
             ErrorCode::kInvalidArgument, "Block '", name(), "': channels (", channels,
             ") must be a positive multiple of groups (", options_.groups, ")");
  check_activation(options_.activation, "Block '" + name() + "'");
  Shape weight_shape;
  const int64_t in_per_group = options_.in_channels / options_.groups;
  if (transposed_) {
    weight_shape = Shape{options_.in_channels, channels / options_.groups};
  } else {
    weight_shape = Shape{channels, in_per_group};
  }
  for (int64_t k : kernel_) weight_shape.push_back(k);
  weight_ = register_parameter(
      "weight", {.shape = weight_shape, .dtype = options_.dtype, .init = options_.weight_initializer});
  if (options_.use_bias)
    bias_ = register_parameter(
        "bias", {.shape = {channels}, .dtype = options_.dtype, .init = options_.bias_initializer});
}

Parameter& ConvBase::bias() const {
  KILN_CHECK(bias_ != nullptr, ErrorCode::kInvalidArgument, "Block '", name(),
             "' has no bias (use_bias is false)");
  return *bias_;
}

void ConvBase::check_input(const NDArray& x) const {
  KILN_CHECK(x.ndim() == spatial_ + 2, ErrorCode::kShapeMismatch, "Block '", name(), "': expected a ",
             spatial_ + 2, "-D input (N, C, spatial...), got ", x.shape());
  KILN_CHECK(x.shape()[1] % options_.groups == 0, ErrorCode::kShapeMismatch, "Block '", name(),
             "': input channels ", x.shape()[1], " are not divisible by groups ", options_.groups);
}

void ConvBase::infer_shape(const std::vector<NDArray>& inputs) {
  KILN_CHECK(inputs.size() == 1, ErrorCode::kInvalidArgument, "Block '", name(), "': expected 1 input, got ",
             inputs.size());
  check_input(inputs[0]);
  Shape shape = weight_->shape();
  if (transposed_) {
    shape[0] = inputs[0].shape()[1];
  } else {
    shape[1] = inputs[0].shape()[1] / options_.groups;
  }
  weight_->set_shape(shape);
}

std::vector<NDArray> ConvBase::hybrid_forward(const std::vector<NDArray>& inputs) {
  KILN_CHECK(inputs.size() == 1, ErrorCode::kInvalidArgument, "Block '", name(), "': expected 1 input, got ",
             inputs.size());
  const NDArray& x = inputs[0];
  check_input(x);
  const NDArray w = weight_->data();
  const int64_t expected_channels = transposed_ ? w.shape()[0] : w.shape()[1] * options_.groups;
  KILN_CHECK(x.shape()[1] == expected_channels, ErrorCode::kShapeMismatch, "Block '", name(), "': input ",
             x.shape(), " has ", x.shape()[1], " channels, the weight ", w.shape(), " expects ",
             expected_channels);
  AttrMap attrs = {{"kernel_shape", kernel_},
                   {"strides", options_.strides},
                   {"pads", both_sides(options_.padding)},
                   {"dilations", options_.dilation},
                   {"group", options_.groups}};
  if (transposed_) attrs.emplace("output_padding", options_.output_padding);
  std::vector<NDArray> args = {x, w};
  if (bias_) args.push_back(bias_->data());
  const NDArray y = nd::invoke1(transposed_ ? "ConvTranspose" : "Conv", args, attrs);
  return {options_.activation.empty() ? y : activation(y, options_.activation)};
}

}  // namespace kiln::nn
