// oneDNN's LayerNormalization against the reference kernel: every axis of odd shapes, Scale and
// B that broadcast, with and without B, constant and run-time parameters, the Mean output,
// inputs far from zero, bfloat16 and float16, and what stays with the reference kernel.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

Shape trailing(const Shape& x, int axis) {
  return Shape(std::vector<int64_t>(x.begin() + (axis < 0 ? axis + x.ndim() : axis), x.end()));
}

TEST(OnednnLayerNorm, EveryAxisWithAndWithoutBias) {
  std::mt19937 rng(61);
  for (const Shape& x : std::vector<Shape>{{7, 33}, {2, 5, 17}, {2, 3, 4, 5}, {300}}) {
    for (int axis = -x.ndim(); axis < x.ndim(); ++axis) {
      for (bool bias : {true, false}) {
        SCOPED_TRACE(x.to_string() + " axis " + std::to_string(axis) + (bias ? " with B" : ""));
        const Shape p = trailing(x, axis);
        std::vector<Operand> operands{{random_tensor(x, rng, -2.f, 2.f)}, {random_tensor(p, rng), true}};
        if (bias) operands.push_back({random_tensor(p, rng), true});
        compare("LayerNormalization", {{"axis", axis}}, operands, CompareOptions{.tolerance = 1e-5});
      }
    }
  }
}

TEST(OnednnLayerNorm, BroadcastAndRunTimeParameters) {
  std::mt19937 rng(62);
  const Shape x{3, 4, 6};
  // Scale and B of fewer axes, or with unit axes, expanded at compile time.
  compare("LayerNormalization", {{"axis", 1}},
          {{random_tensor(x, rng)}, {random_tensor({6}, rng), true}, {random_tensor({4, 1}, rng), true}},
          CompareOptions{.tolerance = 1e-5});
  // Full-size parameters fed at run time.
  compare("LayerNormalization", {{"axis", 1}},
          {{random_tensor(x, rng)}, {random_tensor({4, 6}, rng)}, {random_tensor({4, 6}, rng)}},
          CompareOptions{.tolerance = 1e-5});
  // A run-time parameter that broadcasts: the kernel would have to expand it per call.
  compare("LayerNormalization", {{"axis", 1}}, {{random_tensor(x, rng)}, {random_tensor({6}, rng)}}, false);
}

TEST(OnednnLayerNorm, MeanOutputAndValuesFarFromZero) {
  std::mt19937 rng(63);
  const Shape x{5, 64};
  compare("LayerNormalization", {{"epsilon", 1e-3}},
          {{random_tensor(x, rng, 1000.f, 1001.f)},
           {random_tensor({64}, rng), true},
           {random_tensor({64}, rng), true}},
          CompareOptions{.tolerance = 1e-4, .num_outputs = 2});
  compare("LayerNormalization", {}, {{random_tensor(x, rng, -3.f, 5.f)}, {random_tensor({64}, rng), true}},
          CompareOptions{.tolerance = 1e-5, .num_outputs = 2});
}

TEST(OnednnLayerNorm, LowPrecisionData) {
  std::mt19937 rng(64);
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    SCOPED_TRACE(dtype_name(dtype));
    const bool half = dtype == DType::kFloat16;
    compare("LayerNormalization", {},
            {{random_tensor({6, 48}, rng, -2.f, 2.f, dtype)},
             {random_tensor({48}, rng, -1.f, 1.f, dtype), true},
             {random_tensor({48}, rng, -1.f, 1.f, dtype), true}},
            CompareOptions{.provider = provider_for(dtype), .tolerance = half ? 2e-3 : 1e-2});
  }
}

TEST(OnednnLayerNorm, InvStdDevAndBFloat16StatisticsStayWithTheReference) {
  std::mt19937 rng(65);
  const std::vector<Operand> operands{{random_tensor({4, 9}, rng)}, {random_tensor({9}, rng), true}};
  compare("LayerNormalization", {}, operands, CompareOptions{.provider = "reference", .num_outputs = 3});
  compare("LayerNormalization", {{"stash_type", 16}}, operands,
          CompareOptions{.provider = "reference", .num_outputs = 2});
}

}  // namespace
}  // namespace kiln::onednn
