// quantize_symbol: a Symbol with MXNet-style parameters quantized, run through simple_bind at
// another batch size than calibration's, against the float symbol's outputs; excluded names, and
// errors for names that are no op of the symbol.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kiln/error.hpp"
#include "kiln/quantize.hpp"
#include "kiln/symbol.hpp"

namespace kiln::quantization {
namespace {

NDArray random_array(const Shape& shape, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& e : v) e = normal(rng);
  return nd::array<float>(v, shape);
}

// data (N, 2, 6, 6) -> conv0 (4 filters, 3x3) -> relu -> fc0 (3 outputs).
Symbol small_net() {
  const Symbol conv =
      sym::Convolution(Symbol::Variable("data"), {.kernel = {3, 3}, .num_filter = 4}, "conv0");
  return sym::FullyConnected(sym::Activation(conv, "relu", "relu0"), 3, false, true, "fc0");
}

struct Fixture {
  std::mt19937 rng{5};
  std::map<std::string, NDArray> params{{"conv0_weight", random_array({4, 2, 3, 3}, rng, 0.4f)},
                                        {"conv0_bias", random_array({4}, rng, 0.1f)},
                                        {"fc0_weight", random_array({3, 64}, rng, 0.3f)},
                                        {"fc0_bias", random_array({3}, rng, 0.1f)}};
  std::vector<NDArray> calibration{random_array({4, 2, 6, 6}, rng, 1.0f),
                                   random_array({4, 2, 6, 6}, rng, 1.0f)};

  CalibrationBatches batches() {
    return [this, i = size_t{0}](std::map<std::string, Tensor>& batch) mutable {
      if (i == calibration.size()) return false;
      batch = {{"data", calibration[i++].tensor()}};
      return true;
    };
  }
};

// The int8 weights (int8 parameters of rank 2 or more; zero points are 0-d or 1-d).
int int8_weights(const QuantizedSymbol& q) {
  int n = 0;
  for (const auto& [name, value] : q.arg_params)
    n += value.dtype() == DType::kInt8 && value.shape().ndim() >= 2;
  return n;
}

std::vector<float> run(const Symbol& net, const std::map<std::string, NDArray>& params, const NDArray& x) {
  Executor exe = net.simple_bind(cpu(), {{"data", x.shape()}}, "null");
  for (const auto& [name, value] : params) {
    EXPECT_EQ(exe.arg_dict().at(name).dtype(), value.dtype()) << name;
    exe.arg_dict()[name] = value;
  }
  exe.arg_dict()["data"] = x;
  exe.forward(false);
  return exe.outputs()[0].to_vector<float>();
}

TEST(QuantizeSymbol, RunsThroughSimpleBindCloseToFloat) {
  Fixture f;
  const QuantizedSymbol q = quantize_symbol(small_net(), f.params, {}, f.batches(), {.calib_mode = "naive"});
  EXPECT_NE(q.symbol.tojson().find("_kiln_QuantizeLinear"), std::string::npos);
  EXPECT_EQ(int8_weights(q), 2);
  // Batch 1, though calibration saw batches of 4: the batch dimension stays free.
  const NDArray x = random_array({1, 2, 6, 6}, f.rng, 1.0f);
  const std::vector<float> expected = run(small_net(), f.params, x);
  const std::vector<float> got = run(q.symbol, q.arg_params, x);
  float largest = 0, error = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    largest = std::max(largest, std::abs(expected[i]));
    error = std::max(error, std::abs(expected[i] - got[i]));
  }
  EXPECT_GT(error, 0.0f);             // quantized, not float
  EXPECT_LT(error, 0.04f * largest);  // within a few 8-bit steps
}

TEST(QuantizeSymbol, ExcludedNodesStayFloatAndUnknownNamesAreErrors) {
  Fixture f;
  const QuantizedSymbol q =
      quantize_symbol(small_net(), f.params, {}, f.batches(), {.excluded_node_names = {"fc0"}});
  EXPECT_EQ(int8_weights(q), 1);
  ASSERT_TRUE(q.arg_params.count("fc0_weight"));
  EXPECT_EQ(q.arg_params.at("fc0_weight").dtype(), DType::kFloat32);
  try {
    quantize_symbol(small_net(), f.params, {}, f.batches(), {.excluded_node_names = {"fc9"}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("fc9"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln::quantization
