// Draws as numpy's legacy RandomState makes them from an MT19937 stream, so that a generator
// seeded s reproduces np.random.seed(s) followed by np.random.uniform / np.random.normal.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>

namespace kiln::nn {

// random_sample: 53 random bits from two 32-bit draws, in [0, 1).
inline double legacy_uniform(std::mt19937& gen) {
  const uint32_t a = gen() >> 5, b = gen() >> 6;
  return (static_cast<double>(a) * 67108864.0 + static_cast<double>(b)) / 9007199254740992.0;
}

// Standard normal draws by the polar Box-Muller method; each accepted pair gives two values, the
// second kept for the next call (as RandomState's gauss cache).
class LegacyGauss {
 public:
  double operator()(std::mt19937& gen) {
    if (has_cached_) {
      has_cached_ = false;
      return cached_;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * legacy_uniform(gen) - 1.0;
      x2 = 2.0 * legacy_uniform(gen) - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    cached_ = f * x1;
    has_cached_ = true;
    return f * x2;
  }

 private:
  double cached_ = 0;
  bool has_cached_ = false;
};

}  // namespace kiln::nn
