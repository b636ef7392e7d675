// Helpers of the Gluon tests: arrays from and to plain vectors, elementwise comparison.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/ndarray.hpp"

namespace kiln::testing {

inline std::vector<double> values(const NDArray& a) {
  return a.astype(DType::kFloat64).to_vector<double>();
}

inline NDArray floats(const std::vector<double>& v, const Shape& shape) {
  return nd::array(std::vector<float>(v.begin(), v.end()), shape);
}

inline void expect_all_near(const std::vector<double>& got, const std::vector<double>& want, double tol,
                            const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
}

}  // namespace kiln::testing
