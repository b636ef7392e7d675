// Pooling layers on MaxPool, AveragePool, GlobalAveragePool and ReduceMax.
#include "kiln/nn/conv_layers.hpp"

#include "nn/layer_inputs.h"

namespace kiln::nn {

namespace {

void check_input(const std::vector<NDArray>& inputs, int spatial, const std::string& block) {
  KILN_CHECK(inputs.size() == 1, ErrorCode::kInvalidArgument, "Block '", block, "': expected 1 input, got ",
             inputs.size());
  KILN_CHECK(inputs[0].ndim() == spatial + 2, ErrorCode::kShapeMismatch, "Block '", block, "': expected a ",
             spatial + 2, "-D input (N, C, spatial...), got ", inputs[0].shape());
}

}  // namespace

PoolBase::PoolBase(int spatial, PoolKind kind, PoolOptions options)
    : HybridBlock("pool", options.prefix), spatial_(spatial), kind_(kind), options_(std::move(options)) {
  options_.pool_size = per_axis(options_.pool_size, spatial, "pool_size", name());
  options_.strides =
      options_.strides.empty() ? options_.pool_size : per_axis(options_.strides, spatial, "strides", name());
  options_.padding = per_axis(options_.padding, spatial, "padding", name());
}

std::vector<NDArray> PoolBase::hybrid_forward(const std::vector<NDArray>& inputs) {
  check_input(inputs, spatial_, name());
  std::vector<int64_t> pads = options_.padding;
  pads.insert(pads.end(), options_.padding.begin(), options_.padding.end());
  AttrMap attrs = {{"kernel_shape", options_.pool_size},
                   {"strides", options_.strides},
                   {"pads", pads},
                   {"ceil_mode", options_.ceil_mode ? 1 : 0}};
  if (kind_ == PoolKind::kAverage) attrs.emplace("count_include_pad", options_.count_include_pad ? 1 : 0);
  return {nd::invoke1(kind_ == PoolKind::kMax ? "MaxPool" : "AveragePool", {inputs[0]}, attrs)};
}

GlobalPoolBase::GlobalPoolBase(int spatial, PoolKind kind, const std::string& prefix)
    : HybridBlock("pool", prefix), spatial_(spatial), kind_(kind) {}

std::vector<NDArray> GlobalPoolBase::hybrid_forward(const std::vector<NDArray>& inputs) {
  check_input(inputs, spatial_, name());
  if (kind_ == PoolKind::kAverage) return {nd::invoke1("GlobalAveragePool", {inputs[0]})};
  // ReduceMax rather than GlobalMaxPool: it has a gradient rule.
  std::vector<int64_t> spatial_axes;
  for (int a = 2; a < spatial_ + 2; ++a) spatial_axes.push_back(a);
  return {nd::max(inputs[0], spatial_axes, true)};
}

}  // namespace kiln::nn
