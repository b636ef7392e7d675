// Random tensors for the tests that feed models: uniform values drawn as float32 from a seeded
// generator, so that a test's inputs are the same on every run.
#pragma once

#include <random>
#include <vector>

#include "kiln/tensor.hpp"

namespace kiln::testing {

// Uniform values in [lo, hi) of `dtype` (drawn as float32, then converted).
inline Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1.f, float hi = 1.f,
                            DType dtype = DType::kFloat32) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = dist(rng);
  const Tensor t = Tensor::from_vector(values, shape);
  return dtype == DType::kFloat32 ? t : t.cast(dtype);
}

}  // namespace kiln::testing
