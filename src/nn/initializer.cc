// Initializers: MXNet's name rules, fan computation, and the fills (values drawn on the host in
// float64 with numpy's legacy draws, rounded to the array's dtype and written in by one op).
#include "kiln/nn/initializer.hpp"

#include <charconv>
#include <cmath>
#include <mutex>

#include "kiln/random.hpp"
#include "nn/random.h"

namespace kiln::nn {

namespace {

struct DefaultGenerator {
  std::mutex mutex;
  std::mt19937 generator;
};

DefaultGenerator& default_generator() {
  static DefaultGenerator g;
  return g;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void check_defined(const std::string& name, const NDArray& array) {
  KILN_CHECK(array.defined(), ErrorCode::kInvalidArgument, "initializer: parameter '", name,
             "' is an undefined array");
}

// Fills `array` with next() for each element in row-major order.
template <class Next>
void fill(const NDArray& array, Next next) {
  Tensor values = Tensor::empty(array.shape(), array.dtype());
  dispatch_dtype(array.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* out = values.data<T>();
    for (int64_t i = 0; i < values.numel(); ++i) out[i] = convert_value<T>(next());
  });
  nd::invoke_into("Identity", {NDArray(values)}, {array});
}

void check_random_target(const char* initializer, const std::string& name, const NDArray& array) {
  check_defined(name, array);
  KILN_CHECK(is_floating(array.dtype()), ErrorCode::kTypeMismatch, initializer, ": parameter '", name,
             "' has dtype ", array.dtype(), "; random values need a float array");
}

void fill_uniform(const NDArray& array, double scale, std::mt19937& gen) {
  fill(array, [&] { return -scale + 2 * scale * legacy_uniform(gen); });
}

void fill_normal(const NDArray& array, double sigma, std::mt19937& gen) {
  LegacyGauss gauss;
  fill(array, [&] { return sigma * gauss(gen); });
}

// A number as Python's json writes it: the shortest text that reads back to the same double.
std::string json_number(double v) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, v);
  std::string out(text, end);
  if (out.find_first_of(".en") == std::string::npos) out += ".0";  // 3 -> 3.0, as Python prints a float
  return out;
}

const char* factor_name(FactorType type) {
  switch (type) {
    case FactorType::kAvg:
      return "avg";
    case FactorType::kIn:
      return "in";
    case FactorType::kOut:
      return "out";
  }
  return "avg";
}

}  // namespace

void seed(uint32_t value) {
  DefaultGenerator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  g.generator.seed(value);
  random::seed(value);  // and the masks of unseeded random ops (Dropout), as mx.random.seed does
}

void Initializer::operator()(const std::string& name, const NDArray& array, std::mt19937& generator) const {
  check_defined(name, array);
  if (ends_with(name, "weight")) {
    init_weight(name, array, generator);
  } else if (ends_with(name, "bias") || ends_with(name, "beta") || ends_with(name, "min")) {
    Zero().init_weight(name, array, generator);
  } else if (ends_with(name, "gamma") || ends_with(name, "max")) {
    One().init_weight(name, array, generator);
  } else {
    raise(ErrorCode::kInvalidArgument, "initializer: no rule for parameter '", name,
          "': names ending in weight, bias, gamma, beta, min or max have one; call init_weight to fill it "
          "with this initializer's values");
  }
}

void Initializer::operator()(const std::string& name, const NDArray& array) const {
  DefaultGenerator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  (*this)(name, array, g.generator);
}

void Initializer::init_weight(const std::string& name, const NDArray& array) const {
  DefaultGenerator& g = default_generator();
  std::lock_guard<std::mutex> lock(g.mutex);
  init_weight(name, array, g.generator);
}

void Constant::init_weight(const std::string& name, const NDArray& array, std::mt19937&) const {
  check_defined(name, array);
  fill(array, [&] { return value_; });
}

Uniform::Uniform(double scale) : scale_(scale) {
  KILN_CHECK(std::isfinite(scale) && scale >= 0, ErrorCode::kInvalidArgument,
             "Uniform initializer: scale must be finite and >= 0, got ", scale);
}

void Uniform::init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const {
  check_random_target("Uniform initializer", name, array);
  fill_uniform(array, scale_, generator);
}

Normal::Normal(double sigma) : sigma_(sigma) {
  KILN_CHECK(std::isfinite(sigma) && sigma >= 0, ErrorCode::kInvalidArgument,
             "Normal initializer: sigma must be finite and >= 0, got ", sigma);
}

void Normal::init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const {
  check_random_target("Normal initializer", name, array);
  fill_normal(array, sigma_, generator);
}

Fans compute_fans(const Shape& shape, const std::string& name) {
  KILN_CHECK(shape.ndim() >= 2, ErrorCode::kShapeMismatch, "initializer: parameter '", name, "' has shape ",
             shape, "; fan-in and fan-out need at least 2 dimensions (out, in, kernel...)");
  double receptive = 1;
  for (int i = 2; i < shape.ndim(); ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[1]) * receptive, static_cast<double>(shape[0]) * receptive};
}

Xavier::Xavier(RandomType rnd_type, FactorType factor_type, double magnitude)
    : rnd_type_(rnd_type), factor_type_(factor_type), magnitude_(magnitude) {
  KILN_CHECK(std::isfinite(magnitude) && magnitude >= 0, ErrorCode::kInvalidArgument,
             "Xavier initializer: magnitude must be finite and >= 0, got ", magnitude);
}

void Xavier::init_weight(const std::string& name, const NDArray& array, std::mt19937& generator) const {
  check_random_target("Xavier initializer", name, array);
  const Fans fans = compute_fans(array.shape(), name);
  const double factor = factor_type_ == FactorType::kAvg  ? (fans.in + fans.out) / 2
                        : factor_type_ == FactorType::kIn ? fans.in
                                                          : fans.out;
  KILN_CHECK(factor > 0, ErrorCode::kShapeMismatch, "Xavier initializer: parameter '", name, "' has shape ",
             array.shape(), ", whose fan is 0");
  const double scale = std::sqrt(magnitude_ / factor);
  if (rnd_type_ == RandomType::kUniform)
    fill_uniform(array, scale, generator);
  else
    fill_normal(array, scale, generator);
}

MSRAPrelu::MSRAPrelu(FactorType factor_type, double slope)
    : Xavier(RandomType::kGaussian, factor_type, 2.0 / (1 + slope * slope)), slope_(slope) {}

// The descriptions, as MXNet's Initializer.dumps() writes them: json.dumps([name, kwargs]).
std::string Constant::dumps() const {
  return R"(["constant", {"value": )" + json_number(value_) + "}]";
}

std::string Uniform::dumps() const {
  return R"(["uniform", {"scale": )" + json_number(scale_) + "}]";
}

std::string Normal::dumps() const {
  return R"(["normal", {"sigma": )" + json_number(sigma_) + "}]";
}

std::string Xavier::dumps() const {
  return std::string(R"(["xavier", {"rnd_type": ")") +
         (rnd_type_ == RandomType::kUniform ? "uniform" : "gaussian") + R"(", "factor_type": ")" +
         factor_name(factor_type_) + R"(", "magnitude": )" + json_number(magnitude_) + "}]";
}

std::string MSRAPrelu::dumps() const {
  return std::string(R"(["msraprelu", {"factor_type": ")") + factor_name(factor_type()) + R"(", "slope": )" +
         json_number(slope_) + "}]";
}

}  // namespace kiln::nn
