// oneDNN's BatchNormalization (inference form, constant parameters) against the reference
// kernel: ranks 2 to 6, parameters of other float types, a large epsilon, bfloat16 and float16
// data, and the training form, run-time parameters and small tensors left to the reference kernel.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

// X, scale, B, mean and a positive variance for `channels` channels.
std::vector<Operand> batch_norm_operands(const Shape& x, std::mt19937& rng, bool constant_params,
                                         DType dtype = DType::kFloat32) {
  const Shape per_channel{x[1]};
  return {{random_tensor(x, rng, -3.f, 3.f, dtype)},
          {random_tensor(per_channel, rng, 0.5f, 2.f), constant_params},
          {random_tensor(per_channel, rng, -1.f, 1.f), constant_params},
          {random_tensor(per_channel, rng, -0.5f, 0.5f), constant_params},
          {random_tensor(per_channel, rng, 0.1f, 3.f), constant_params}};
}

// Float32 tensors are above the size below which the reference kernel keeps the op (2^18
// elements: below it the reference kernel is as fast), 16-bit ones above 8192.
TEST(OnednnBatchNorm, Ranks) {
  std::mt19937 rng(51);
  for (const Shape& x : std::vector<Shape>{{4096, 67},
                                           {2, 3, 45000},
                                           {3, 1, 90000},
                                           {5, 4, 13200},
                                           {3, 6, 1, 15000},
                                           {2, 17, 90, 90},
                                           {1, 64, 66, 66},
                                           {2, 3, 40, 40, 30},
                                           {1, 2, 30, 30, 15, 10}}) {
    SCOPED_TRACE(x.to_string());
    compare("BatchNormalization", {}, batch_norm_operands(x, rng, true), CompareOptions{.tolerance = 1e-6});
  }
  compare("BatchNormalization", {{"epsilon", 0.5}}, batch_norm_operands({2, 5, 180, 150}, rng, true),
          CompareOptions{.tolerance = 1e-6});
}

TEST(OnednnBatchNorm, ParametersOfOtherFloatTypes) {
  std::mt19937 rng(54);
  std::vector<Operand> operands = batch_norm_operands({2, 6, 150, 150}, rng, true);
  for (size_t i = 1; i < operands.size(); ++i) operands[i].value = operands[i].value.cast(DType::kFloat16);
  compare("BatchNormalization", {}, operands, CompareOptions{.tolerance = 1e-6});
}

TEST(OnednnBatchNorm, LowPrecisionData) {
  std::mt19937 rng(52);
  const std::string f16 = provider_for(DType::kFloat16), bf16 = provider_for(DType::kBFloat16);
  for (const Shape& x : std::vector<Shape>{{2, 19, 16, 16}, {512, 19}}) {
    SCOPED_TRACE(x.to_string());
    compare("BatchNormalization", {}, batch_norm_operands(x, rng, true, DType::kBFloat16),
            CompareOptions{.provider = bf16, .tolerance = 1e-2});
    compare("BatchNormalization", {}, batch_norm_operands(x, rng, true, DType::kFloat16),
            CompareOptions{.provider = f16, .tolerance = 2e-3});
  }
}

TEST(OnednnBatchNorm, WhatOneDnnDoesNotCoverStaysWithTheReference) {
  std::mt19937 rng(53);
  // The training form (batch statistics).
  compare("BatchNormalization", {{"training_mode", 1}}, batch_norm_operands({2, 3, 300, 150}, rng, true),
          false);
  // Parameters computed at run time.
  compare("BatchNormalization", {}, batch_norm_operands({2, 3, 300, 150}, rng, false), false);
  // Tensors small enough that the reference kernel is as fast or faster.
  compare("BatchNormalization", {}, batch_norm_operands({2, 17, 5, 6}, rng, true), false);
  compare("BatchNormalization", {}, batch_norm_operands({2, 3, 4, 4}, rng, true, DType::kBFloat16), false);
}

}  // namespace
}  // namespace kiln::onednn
