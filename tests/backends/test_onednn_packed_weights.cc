// A weight that oneDNN's kernels pack is held once: the Predictor lets the given tensor go once its
// plan packed it, computes as before (checked against products computed here in double), and
// rebuilds the weight bit for bit when it compiles another shape or shows its graph; a weight
// that a step reads as given stays, and so does one that graph() handed out.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "backends/onednn/onednn_common.h"
#include "backends/onednn_test_util.h"
#include "kiln/predictor.hpp"

namespace kiln::onednn {
namespace {

// Wider than deep, and too large at one row for the small-product loop: oneDNN packs it.
constexpr int64_t kIn = 128, kOut = 256;

// relu(x W) in double.
std::vector<double> relu_product(const Tensor& x, const std::vector<float>& w) {
  const int64_t rows = x.shape()[0];
  const std::vector<float> xv = x.to_vector<float>();
  std::vector<double> out(static_cast<size_t>(rows * kOut));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < kOut; ++c) {
      double sum = 0;
      for (int64_t k = 0; k < kIn; ++k) sum += double{xv[r * kIn + k]} * w[k * kOut + c];
      out[static_cast<size_t>(r * kOut + c)] = sum > 0 ? sum : 0;
    }
  return out;
}

void expect_relu_product(const Tensor& got, const Tensor& x, const std::vector<float>& w) {
  const std::vector<double> want = relu_product(x, w);
  const std::vector<float> values = got.to_vector<float>();
  ASSERT_EQ(values.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(values[i], want[i], 1e-5) << "at " << i;
}

// y = relu(x W), and with `also_summed` a second input z and output W + z, which reads W as given.
graph::Graph model(const Tensor& w, bool also_summed) {
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{-1, kIn}});
  graph::Value* weight = g.add_initializer("W", w);
  graph::Value* product = g.add_node("MatMul", {x, weight}, {}, "matmul")->outputs[0];
  graph::Value* y = g.add_node("Relu", {product}, {}, "relu")->outputs[0];
  if (!also_summed) {
    g.set_outputs({y});
  } else {
    graph::Value* z = g.add_input("z", ops::TensorInfo{DType::kFloat32, Shape{kIn, kOut}});
    g.set_outputs({y, g.add_node("Add", {weight, z}, {}, "sum")->outputs[0]});
  }
  return g;
}

// A Predictor over model(W, also_summed) for a random W that only the Predictor holds, with W's
// values and a watch on the storage it was given in.
struct PredictorOverWeight {
  std::vector<float> w_values;
  std::weak_ptr<Storage> given;
  Predictor predictor;
};
PredictorOverWeight predictor_over_random_weight(std::mt19937& rng, bool also_summed) {
  const Tensor w = random_tensor({kIn, kOut}, rng);
  return {w.to_vector<float>(), w.storage(), Predictor(model(w, also_summed))};
}

// Whether oneDNN's float32 matmul of `rows` rows prefers the weight in a layout of its own (packed)
// on this CPU: with AVX-512 it does; on AVX2 its gemm reads the row-major weight as it is.
bool onednn_packs_weight(int64_t rows) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dnnl::memory::desc a({rows, kIn}, dt::f32, tag::ab), b({kIn, kOut}, dt::f32, tag::any),
      c({rows, kOut}, dt::f32, tag::ab);
  const dnnl::matmul::primitive_desc pd(cpu_engine(), a, b, c);
  return pd.weights_desc() != dnnl::memory::desc({kIn, kOut}, dt::f32, tag::ab);
}

TEST(OnednnPackedWeights, APredictorLetsAPackedWeightGoAndRebuildsItExactly) {
  std::mt19937 rng(41);
  const auto [w_values, given, p] = predictor_over_random_weight(rng, false);
  ASSERT_FALSE(given.expired());  // the Predictor's graph holds it until a plan packs it

  const Tensor x1 = random_tensor({1, kIn}, rng);
  expect_relu_product(p.predict({x1})[0], x1, w_values);
  if (!onednn_packs_weight(1)) {
    // Nothing is packed: the plan reads the weight as given, which therefore stays.
    EXPECT_FALSE(given.expired()) << "a weight the plan reads in place was let go";
    return;
  }
  EXPECT_TRUE(given.expired()) << "the packed weight is still held as given too";

  // Another shape compiles from the rebuilt weight, which is let go again once packed.
  const Tensor x8 = random_tensor({8, kIn}, rng);
  expect_relu_product(p.predict({x8})[0], x8, w_values);
  expect_relu_product(p.predict({x1})[0], x1, w_values);
  std::weak_ptr<Storage> rebuilt;
  p.read_graph([&, &expected = w_values](const graph::Graph& g) {
    const graph::Value* v = g.find_value("W");
    ASSERT_TRUE(v->is_constant());
    EXPECT_EQ(v->constant.to_vector<float>(), expected);
    rebuilt = v->constant.storage();
  });
  EXPECT_TRUE(rebuilt.expired()) << "read_graph kept the rebuilt weight";

  // graph() hands the weight out for good: it stays through later compiles.
  const graph::Value* v = p.graph().find_value("W");
  ASSERT_TRUE(v->is_constant());
  EXPECT_EQ(v->constant.to_vector<float>(), w_values);
  const std::weak_ptr<Storage> handed_out = v->constant.storage();
  const Tensor x3 = random_tensor({3, kIn}, rng);
  expect_relu_product(p.predict({x3})[0], x3, w_values);
  EXPECT_FALSE(handed_out.expired());
  EXPECT_EQ(p.graph().find_value("W")->constant.to_vector<float>(), w_values);
}

TEST(OnednnPackedWeights, AWeightAnotherStepReadsAsGivenStays) {
  std::mt19937 rng(42);
  const auto [w_values, given, p] = predictor_over_random_weight(rng, true);
  const Tensor x = random_tensor({2, kIn}, rng);
  const Tensor z = random_tensor({kIn, kOut}, rng);
  const std::vector<Tensor> out = p.predict({x, z});
  expect_relu_product(out[0], x, w_values);
  const std::vector<float> sum = out[1].to_vector<float>(), zv = z.to_vector<float>();
  for (size_t i = 0; i < w_values.size(); ++i) ASSERT_EQ(sum[i], w_values[i] + zv[i]) << "at " << i;
  EXPECT_FALSE(given.expired());
}

}  // namespace
}  // namespace kiln::onednn
