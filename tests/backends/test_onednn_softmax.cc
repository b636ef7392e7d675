// oneDNN's Softmax and LogSoftmax against the reference kernels along every axis (the last one
// directly, the others through a reordered layout), on large and widely spread values, in
// float32, bfloat16 and float16.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

TEST(OnednnSoftmax, EveryAxisOfOddShapes) {
  std::mt19937 rng(41);
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    for (const Shape& x : std::vector<Shape>{{7, 19}, {3, 5, 17}, {2, 3, 4, 33}, {1000}, {4, 1, 9}}) {
      for (int axis = -x.ndim(); axis < x.ndim(); ++axis) {
        SCOPED_TRACE(op + " " + x.to_string() + " axis " + std::to_string(axis));
        compare(op, {{"axis", axis}}, {{random_tensor(x, rng, -5.f, 5.f)}},
                CompareOptions{.tolerance = 1e-5, .per_element = true});
      }
    }
  }
}

// Values near 1e4 and spread over hundreds: exponentials that would overflow without the
// maximum subtracted, and probabilities that underflow to zero.
TEST(OnednnSoftmax, LargeAndSpreadValues) {
  std::mt19937 rng(42);
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    SCOPED_TRACE(op);
    compare(op, {{"axis", 1}}, {{random_tensor({6, 40, 3}, rng, 1e4f - 300.f, 1e4f)}},
            CompareOptions{.tolerance = 1e-5, .per_element = true});
    compare(op, {}, {{random_tensor({6, 40}, rng, -300.f, 300.f)}},
            CompareOptions{.tolerance = 1e-5, .per_element = true});
  }
}

TEST(OnednnSoftmax, LowPrecisionTypes) {
  std::mt19937 rng(43);
  const std::string f16 = provider_for(DType::kFloat16), bf16 = provider_for(DType::kBFloat16);
  for (const std::string op : {"Softmax", "LogSoftmax"}) {
    for (int axis : {-1, 1}) {
      SCOPED_TRACE(op + " axis " + std::to_string(axis));
      compare(op, {{"axis", axis}}, {{random_tensor({3, 20, 7}, rng, -4.f, 4.f, DType::kBFloat16)}},
              CompareOptions{.provider = bf16, .tolerance = 1e-2, .per_element = true});
      compare(op, {{"axis", axis}}, {{random_tensor({3, 20, 7}, rng, -4.f, 4.f, DType::kFloat16)}},
              CompareOptions{.provider = f16, .tolerance = 2e-3, .per_element = true});
    }
  }
}

}  // namespace
}  // namespace kiln::onednn
