// Gluon's convolution and pooling layers (mx.gluon.nn.conv_layers) in the NC(D)(H)W layout:
// Conv1D/2D/3D, Conv2DTranspose, MaxPool1D-3D, AvgPool1D-3D, GlobalAvgPool1D-3D and
// GlobalMaxPool1D-3D. Window arguments take one value per spatial axis, or one value for all.
//
//   nn::Conv2D conv(32, {3, 3}, {.padding = {1}, .activation = "relu"});   // weight (32, C, 3, 3)
//   nn::MaxPool2D pool({.pool_size = {2}});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/nn/block.hpp"

namespace kiln::nn {

struct ConvOptions {
  std::vector<int64_t> strides = {1};
  std::vector<int64_t> padding = {0};  // on both sides of each spatial axis
  std::vector<int64_t> dilation = {1};
  std::vector<int64_t> output_padding = {0};  // transposed convolutions only
  int64_t groups = 1;
  std::string activation;
  bool use_bias = true;
  DType dtype = DType::kFloat32;
  std::shared_ptr<const Initializer> weight_initializer;
  std::shared_ptr<const Initializer> bias_initializer = std::make_shared<Zero>();
  int64_t in_channels = 0;  // 0: inferred from the first input
  std::string prefix;
};

// The convolutions: `spatial` axes, forward (Conv) or transposed (ConvTranspose). Weight shapes
// as Gluon: (channels, in_channels / groups, k...) and, transposed, (in_channels,
// channels / groups, k...).
class ConvBase : public HybridBlock {
 public:
  Parameter& weight() const { return *weight_; }
  Parameter& bias() const;

 protected:
  ConvBase(int spatial, bool transposed, int64_t channels, std::vector<int64_t> kernel_size,
           ConvOptions options);
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;
  void infer_shape(const std::vector<NDArray>& inputs) override;

 private:
  void check_input(const NDArray& x) const;

  int spatial_;
  bool transposed_;
  std::vector<int64_t> kernel_;
  ConvOptions options_;
  std::shared_ptr<Parameter> weight_, bias_;
};

class Conv1D : public ConvBase {
 public:
  Conv1D(int64_t channels, std::vector<int64_t> kernel_size, ConvOptions options = {})
      : ConvBase(1, false, channels, std::move(kernel_size), std::move(options)) {}
};
class Conv2D : public ConvBase {
 public:
  Conv2D(int64_t channels, std::vector<int64_t> kernel_size, ConvOptions options = {})
      : ConvBase(2, false, channels, std::move(kernel_size), std::move(options)) {}
};
class Conv3D : public ConvBase {
 public:
  Conv3D(int64_t channels, std::vector<int64_t> kernel_size, ConvOptions options = {})
      : ConvBase(3, false, channels, std::move(kernel_size), std::move(options)) {}
};
// Forward only for now: ConvTranspose has no gradient rule in src/ops yet.
class Conv2DTranspose : public ConvBase {
 public:
  Conv2DTranspose(int64_t channels, std::vector<int64_t> kernel_size, ConvOptions options = {})
      : ConvBase(2, true, channels, std::move(kernel_size), std::move(options)) {}
};

struct PoolOptions {
  std::vector<int64_t> pool_size = {2};
  std::vector<int64_t> strides;  // empty: pool_size
  std::vector<int64_t> padding = {0};
  bool ceil_mode = false;
  bool count_include_pad = true;  // average pooling: padding counts in the divisor (Gluon's default)
  std::string prefix;
};

enum class PoolKind { kMax, kAverage };

class PoolBase : public HybridBlock {
 protected:
  PoolBase(int spatial, PoolKind kind, PoolOptions options);
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  int spatial_;
  PoolKind kind_;
  PoolOptions options_;
};

#define KILN_NN_POOL_LAYER(Name, Spatial, Kind)                                              \
  class Name : public PoolBase {                                                             \
   public:                                                                                   \
    explicit Name(PoolOptions options = {}) : PoolBase(Spatial, Kind, std::move(options)) {} \
  };
KILN_NN_POOL_LAYER(MaxPool1D, 1, PoolKind::kMax)
KILN_NN_POOL_LAYER(MaxPool2D, 2, PoolKind::kMax)
KILN_NN_POOL_LAYER(MaxPool3D, 3, PoolKind::kMax)
KILN_NN_POOL_LAYER(AvgPool1D, 1, PoolKind::kAverage)
KILN_NN_POOL_LAYER(AvgPool2D, 2, PoolKind::kAverage)
KILN_NN_POOL_LAYER(AvgPool3D, 3, PoolKind::kAverage)
#undef KILN_NN_POOL_LAYER

// The mean or max over all spatial axes, kept as size-1 axes: (N, C, 1, ...).
class GlobalPoolBase : public HybridBlock {
 protected:
  GlobalPoolBase(int spatial, PoolKind kind, const std::string& prefix);
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override;

 private:
  int spatial_;
  PoolKind kind_;
};

#define KILN_NN_GLOBAL_POOL_LAYER(Name, Spatial, Kind)                                       \
  class Name : public GlobalPoolBase {                                                       \
   public:                                                                                   \
    explicit Name(const std::string& prefix = "") : GlobalPoolBase(Spatial, Kind, prefix) {} \
  };
KILN_NN_GLOBAL_POOL_LAYER(GlobalAvgPool1D, 1, PoolKind::kAverage)
KILN_NN_GLOBAL_POOL_LAYER(GlobalAvgPool2D, 2, PoolKind::kAverage)
KILN_NN_GLOBAL_POOL_LAYER(GlobalAvgPool3D, 3, PoolKind::kAverage)
KILN_NN_GLOBAL_POOL_LAYER(GlobalMaxPool1D, 1, PoolKind::kMax)
KILN_NN_GLOBAL_POOL_LAYER(GlobalMaxPool2D, 2, PoolKind::kMax)
KILN_NN_GLOBAL_POOL_LAYER(GlobalMaxPool3D, 3, PoolKind::kMax)
#undef KILN_NN_GLOBAL_POOL_LAYER

}  // namespace kiln::nn
