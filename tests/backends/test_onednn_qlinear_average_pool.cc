// FusedQLinearAveragePool on oneDNN's int8 pooling against the reference kernel (the QDQ graph's
// DequantizeLinear -> AveragePool -> QuantizeLinear in float): u8 and s8, odd sizes and channel
// counts, strides, pads, ceil_mode, count_include_pad, the global window, requantization to other
// parameters and to the other 8-bit type. The input comes channels-last from QuantizeLinear (the
// layout an int8 chain hands on), quantized exactly (values on the scale's grid), so only the
// pooling differs: oneDNN averages the 8-bit values, the reference the dequantized ones, and a
// mean within a float32 rounding error of a half may round to the other neighbouring step (the
// output scales are not simple multiples of the input's, so exact halves are rare). Mixed 8-bit
// types and count_include_pad over a non-zero zero point stay with the reference kernel.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

using Ints = std::vector<int64_t>;

struct Case {
  Shape x;
  AttrMap attrs;
  DType x_type = DType::kUInt8;
  int x_zero = 0;
  DType y_type = DType::kUInt8;
  int y_zero = 0;
  double y_scale = 0.0625;  // the input's: no requantization
  std::string provider = "onednn";
  bool global = false;  // 1x1 output planes, written as the graph output
};

void check(const Case& c, std::mt19937& rng) {
  const double x_scale = 0.0625;  // a power of two: the quantization of the fed floats is exact
  const bool is_signed = c.x_type == DType::kInt8;
  std::uniform_int_distribution<int> dist(is_signed ? -128 : 0, is_signed ? 127 : 255);
  std::vector<float> values(static_cast<size_t>(c.x.numel()));
  for (float& v : values) v = static_cast<float>((dist(rng) - c.x_zero) * x_scale);
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, c.x});
  graph::Value* xs = g.add_initializer("xs", Tensor::scalar(x_scale, DType::kFloat32));
  graph::Value* xz = g.add_initializer("xz", Tensor::scalar(c.x_zero, c.x_type));
  graph::Value* q = g.add_node("QuantizeLinear", {x, xs, xz})->outputs[0];
  graph::Node* pool =
      g.add_node("FusedQLinearAveragePool",
                 {q, xs, xz, g.add_initializer("ys", Tensor::scalar(c.y_scale, DType::kFloat32)),
                  g.add_initializer("yz", Tensor::scalar(c.y_zero, c.y_type))},
                 c.attrs, "pool");
  // A graph output is row-major; a reader that takes oneDNN layouts lets other windows keep the
  // input's (a 1x1 MaxPool copies the values).
  g.add_output(c.global
                   ? pool->outputs[0]
                   : g.add_node("MaxPool", {pool->outputs[0]}, {{"kernel_shape", Ints{1, 1}}})->outputs[0]);
  g.infer_shapes();
  const auto reference = runtime::compile(g);
  const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
  bool pooled = false;
  for (const auto& step : fast->steps) {
    if (step.label == "FusedQLinearAveragePool 'pool'") {
      EXPECT_EQ(step.provider, c.provider);
      pooled = true;
    }
    // The pooling reads the channels-last 8-bit values as QuantizeLinear wrote them.
    if (c.provider == "onednn" && !pooled) {
      EXPECT_NE(step.provider, "layout") << step.label;
    }
  }
  EXPECT_TRUE(pooled);
  const Tensor input = Tensor::from_vector(values, c.x);
  const Tensor want = runtime::Executor(reference).run({input})[0];
  const Tensor got = runtime::Executor(fast).run({input})[0];
  ASSERT_EQ(got.dtype(), c.y_type);
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<float> a = got.cast(DType::kFloat32).to_vector<float>(),
                           b = want.cast(DType::kFloat32).to_vector<float>();
  size_t off_by_one = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_NEAR(a[i], b[i], 1.0) << "element " << i << " of " << a.size();
    off_by_one += a[i] != b[i];
  }
  // Ties within a rounding error are rare: a step more than rarely is a wrong requantization.
  EXPECT_LE(off_by_one, a.size() / 50 + 1) << off_by_one << " of " << a.size() << " elements one step off";
}

TEST(OnednnQLinearAveragePool, AgreesWithTheReference) {
  std::mt19937 rng(21);
  const AttrMap window3{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  AttrMap include_pad = window3;
  include_pad.insert_or_assign("count_include_pad", AttrValue(int64_t{1}));
  const std::vector<Case> cases{
      {{2, 16, 13, 11}, window3},
      {{1, 3, 5, 9}, {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{1, 2}}}, DType::kInt8, 0, DType::kInt8},
      {{1, 24, 9, 9},
       {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"ceil_mode", int64_t{1}}},
       DType::kInt8,
       -3,
       DType::kInt8,
       5,
       0.0537},
      {{1, 40, 14, 14}, include_pad, DType::kUInt8, 0, DType::kUInt8, 10, 0.0311},
      {{1, 32, 7, 7},
       {{"kernel_shape", Ints{7, 7}}},
       DType::kUInt8,
       0,
       DType::kUInt8,
       0,
       0.0625,
       "onednn",
       true},
      {{2, 20, 7, 5},
       {{"kernel_shape", Ints{7, 5}}},
       DType::kInt8,
       7,
       DType::kInt8,
       -2,
       0.0213,
       "onednn",
       true},
      // oneDNN's int8 pooling keeps the input's 8-bit type.
      {{2, 20, 7, 5},
       {{"kernel_shape", Ints{7, 5}}},
       DType::kUInt8,
       128,
       DType::kInt8,
       -2,
       0.0213,
       "reference",
       true},
      {{1, 64, 6, 6}, window3, DType::kUInt8, 100, DType::kUInt8, 90, 0.0719},
      // oneDNN pads with 8-bit zeros where the QDQ graph pads with the zero point.
      {{1, 16, 6, 6}, include_pad, DType::kUInt8, 128, DType::kUInt8, 128, 0.0625, "reference"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    check(cases[i], rng);
  }
}

}  // namespace
}  // namespace kiln::onednn
