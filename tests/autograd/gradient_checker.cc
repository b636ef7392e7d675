// The finite-difference gradient checker (gradient_checker.h).
#include "autograd/gradient_checker.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace kiln::testing {

namespace {

std::mt19937& generator() {
  static std::mt19937 gen(20240611);
  return gen;
}

bool is_output_checked(const NDArray& out) {
  return out.dtype() == DType::kFloat64;
}

// sum_k <v_k, f_k(inputs)>, computed without recording.
double projected_output(const GradientCheck& c, const std::vector<NDArray>& inputs,
                        const std::vector<std::vector<double>>& head) {
  auto paused = autograd::pause();
  const std::vector<NDArray> outs = nd::invoke(c.op, inputs, c.attrs, c.num_outputs);
  double total = 0;
  size_t k = 0;
  for (const NDArray& out : outs) {
    if (!is_output_checked(out)) continue;
    const std::vector<double> values = out.to_vector<double>();
    for (size_t j = 0; j < values.size(); ++j) total += head[k][j] * values[j];
    ++k;
  }
  return total;
}

}  // namespace

NDArray random_array(const Shape& shape, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> values(static_cast<size_t>(shape.numel()));
  for (double& v : values) v = dist(generator());
  return nd::array(values, shape);
}

NDArray int64_array(const std::vector<int64_t>& values, const Shape& shape) {
  return nd::array(values, shape);
}

NDArray int64_values(const std::vector<int64_t>& values) {
  return nd::array(values, Shape{static_cast<int64_t>(values.size())});
}

void expect_gradient_matches(const GradientCheck& c) {
  std::vector<int> wrt = c.wrt;
  if (wrt.empty())
    for (size_t i = 0; i < c.inputs.size(); ++i)
      if (c.inputs[i].defined() && c.inputs[i].dtype() == DType::kFloat64) wrt.push_back(static_cast<int>(i));

  // Analytic: record the op on copies marked as variables, then backward with random heads.
  std::vector<NDArray> inputs = c.inputs;
  for (int i : wrt) {
    inputs[static_cast<size_t>(i)] = c.inputs[static_cast<size_t>(i)].copy();
    inputs[static_cast<size_t>(i)].attach_grad();
  }
  std::vector<NDArray> heads, head_grads;
  std::vector<std::vector<double>> head_values;
  {
    auto recording = autograd::record();
    for (const NDArray& out : nd::invoke(c.op, inputs, c.attrs, c.num_outputs)) {
      if (!is_output_checked(out)) continue;
      NDArray v = random_array(out.shape());
      heads.push_back(out);
      head_grads.push_back(v);
      head_values.push_back(v.to_vector<double>());
    }
  }
  ASSERT_FALSE(heads.empty()) << c.op << ": no float64 output to check";
  autograd::backward(heads, head_grads);

  // Numeric: central differences of the projected output, one element at a time.
  for (int i : wrt) {
    const NDArray& original = c.inputs[static_cast<size_t>(i)];
    const std::vector<double> analytic = inputs[static_cast<size_t>(i)].grad().to_vector<double>();
    const std::vector<double> base = original.to_vector<double>();
    ASSERT_EQ(analytic.size(), base.size());
    std::vector<NDArray> probe = c.inputs;
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<double> shifted = base;
      shifted[j] = base[j] + c.step;
      probe[static_cast<size_t>(i)] = nd::array(shifted, original.shape());
      const double up = projected_output(c, probe, head_values);
      shifted[j] = base[j] - c.step;
      probe[static_cast<size_t>(i)] = nd::array(shifted, original.shape());
      const double down = projected_output(c, probe, head_values);
      const double numeric = (up - down) / (2 * c.step);
      const double error = std::abs(analytic[j] - numeric) / std::max(1.0, std::abs(numeric));
      EXPECT_LE(error, c.tolerance) << c.op << " input " << i << " element " << j << ": autograd gives "
                                    << analytic[j] << ", finite differences " << numeric;
    }
  }
}

}  // namespace kiln::testing
