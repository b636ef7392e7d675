// Parameter initializers with MXNet's semantics (mx.init): Zero, One, Constant, Uniform, Normal,
// Xavier and MSRAPrelu (Kaiming), filling NDArrays of any float dtype in place.
//
// Random draws come from a std::mt19937 the caller passes, or from the default generator that
// seed() resets (MXNet's mx.random.seed; it starts from std::mt19937's default seed). Draws follow
// numpy's legacy RandomState, so with a fresh generator seeded s, Uniform(a) fills an array with
// what np.random.seed(s); np.random.uniform(-a, a, shape) gives, and Normal(sigma) with
// np.random.normal(0, sigma, shape) (in float64; rounded to the array's dtype).
#pragma once

#include <cstdint>
#include <random>
#include <string>

#include "kiln/ndarray.hpp"

namespace kiln::nn {

// Reseeds the default generator (thread-safe; initializers lock it while drawing) and
// kiln::random's seed sequence, which Dropout masks come from.
void seed(uint32_t value);

class Initializer {
 public:
  virtual ~Initializer() = default;

  // Initializes the parameter called `name` by MXNet's rules: a name ending in "weight" gets
  // init_weight; "bias", "beta" and "min" zeros; "gamma" and "max" ones; any other name is an
  // error naming it.
  void operator()(const std::string& name, const NDArray& array, std::mt19937& generator) const;
  void operator()(const std::string& name, const NDArray& array) const;

  // Fills `array` with this initializer's values whatever its name. `name` appears in errors.
  virtual void init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const = 0;
  void init_weight(const std::string& name, const NDArray& array) const;

  // MXNet's JSON description (Initializer.dumps()): ["normal", {"sigma": 0.01}]. A symbol's
  // variable made with init= keeps it as its __init__ attribute, as MXNet writes it.
  virtual std::string dumps() const = 0;
};

class Constant : public Initializer {
 public:
  explicit Constant(double value) : value_(value) {}
  void init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const override;
  using Initializer::init_weight;
  std::string dumps() const override;

 private:
  double value_;
};

class Zero : public Constant {
 public:
  Zero() : Constant(0) {}
  std::string dumps() const override { return R"(["zero", {}])"; }
};

class One : public Constant {
 public:
  One() : Constant(1) {}
  std::string dumps() const override { return R"(["one", {}])"; }
};

// Uniform in [-scale, scale).
class Uniform : public Initializer {
 public:
  explicit Uniform(double scale = 0.07);
  void init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const override;
  using Initializer::init_weight;
  std::string dumps() const override;

 private:
  double scale_;
};

// Normal with mean 0 and standard deviation sigma.
class Normal : public Initializer {
 public:
  explicit Normal(double sigma = 0.01);
  void init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const override;
  using Initializer::init_weight;
  std::string dumps() const override;

 private:
  double sigma_;
};

// MXNet's fan rules for a weight of at least 2 dimensions, (out, in, k...) as Dense's
// (units, in_units) and Conv's (filters, channels / groups, kh, kw): with r = prod(k...) (1 for
// a matrix), fan_in = in * r and fan_out = out * r. Throws kiln::Error naming `name` for fewer
// than 2 dimensions.
struct Fans {
  double in, out;
};
Fans compute_fans(const Shape& shape, const std::string& name);

enum class RandomType { kUniform, kGaussian };
enum class FactorType { kAvg, kIn, kOut };

// Xavier (Glorot): scale = sqrt(magnitude / factor) with factor (fan_in + fan_out) / 2, fan_in or
// fan_out; values uniform in [-scale, scale) or normal with standard deviation scale.
class Xavier : public Initializer {
 public:
  explicit Xavier(RandomType rnd_type = RandomType::kUniform, FactorType factor_type = FactorType::kAvg,
                  double magnitude = 3);
  void init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const override;
  using Initializer::init_weight;
  std::string dumps() const override;

 protected:
  FactorType factor_type() const { return factor_type_; }

 private:
  RandomType rnd_type_;
  FactorType factor_type_;
  double magnitude_;
};

// He / Kaiming initialization for PReLU nets (MXNet's MSRAPrelu): Xavier with gaussian draws and
// magnitude 2 / (1 + slope^2). slope 0 with FactorType::kIn is PyTorch's kaiming_normal_ for ReLU.
class MSRAPrelu : public Xavier {
 public:
  explicit MSRAPrelu(FactorType factor_type = FactorType::kAvg, double slope = 0.25);
  std::string dumps() const override;

 private:
  double slope_;
};
using Kaiming = MSRAPrelu;

}  // namespace kiln::nn
