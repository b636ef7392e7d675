// Helpers for the optimizer tests: float64 arrays from vectors and back, and a deterministic
// gradient sequence.
#pragma once

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/ndarray.hpp"

namespace kiln::testing {

using Vec = std::vector<double>;

inline NDArray array_of(const Vec& values, const Shape& shape, DType dtype = DType::kFloat64) {
  return nd::array(values, shape).astype(dtype);
}

inline Vec values_of(const NDArray& a) {
  return a.astype(DType::kFloat64).to_vector<double>();
}

// The gradient of step `step` (from 1): smooth, both signs, some entries beyond the clipping
// bound the tests use.
inline Vec gradient_at(int step, size_t size) {
  Vec g(size);
  for (size_t i = 0; i < size; ++i)
    g[i] = std::sin(1.3 * static_cast<double>(i) + 0.7 * step) * (1 + 0.25 * step);
  return g;
}

inline void expect_all_near(const Vec& actual, const Vec& expected, double tol, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    EXPECT_NEAR(actual[i], expected[i], tol * (1 + std::abs(expected[i]))) << what << ", element " << i;
}

}  // namespace kiln::testing
