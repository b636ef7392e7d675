// Checks an op's gradient rule against central finite differences, in float64: with a random
// head gradient v for each floating output, autograd's J^T v for every checked input must match
// the numerical derivative of sum_k <v_k, output_k> element by element.
#pragma once

#include <string>
#include <vector>

#include "kiln/autograd.hpp"

namespace kiln::testing {

// A float64 array of `shape` with values drawn uniformly from [lo, hi).
NDArray random_array(const Shape& shape, double lo = -1, double hi = 1);
NDArray int64_array(const std::vector<int64_t>& values, const Shape& shape);
NDArray int64_values(const std::vector<int64_t>& values);  // 1-D

struct GradientCheck {
  std::string op;
  std::vector<NDArray> inputs;  // undefined for missing optional inputs
  AttrMap attrs = {};
  std::vector<int> wrt = {};  // inputs to check; empty: every float64 input
  int num_outputs = -1;
  double step = 1e-6;
  double tolerance = 1e-6;  // on |analytic - numeric| / max(1, |numeric|)
};

// Adds a GoogleTest failure for every element whose gradient disagrees.
void expect_gradient_matches(const GradientCheck& check);

}  // namespace kiln::testing
