// oneDNN's pooling kernels against the reference kernels: MaxPool and AveragePool over 1 to 3
// spatial axes with strides, pads, SAME and VALID padding, ceil_mode and count_include_pad,
// global pooling of any rank, bfloat16 and float16, the gradients MaxPoolGrad and AveragePoolGrad,
// small max poolings (the plain loops) in the blocked layout a convolution leaves, and the cases
// left to the reference kernel.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"
#include "graph/graph.h"

namespace kiln::onednn {
namespace {

using Ints = std::vector<int64_t>;

struct PoolCase {
  Shape x;
  AttrMap attrs;
};

const std::vector<PoolCase>& window_cases() {
  static const std::vector<PoolCase> cases{
      {{1, 3, 7, 9}, {{"kernel_shape", Ints{3, 3}}}},
      {{2, 5, 11, 6}, {{"kernel_shape", Ints{3, 2}}, {"strides", Ints{2, 1}}, {"pads", Ints{1, 0, 1, 1}}}},
      // Floor rounding drops the last row and column (negative trailing padding to oneDNN).
      {{1, 4, 7, 7}, {{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}},
      {{1, 4, 7, 8}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"ceil_mode", 1}}},
      {{1, 64, 28, 28}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
      {{2, 3, 13, 10}, {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 3}}, {"auto_pad", "SAME_UPPER"}}},
      {{2, 3, 13, 10}, {{"kernel_shape", Ints{4, 2}}, {"strides", Ints{3, 2}}, {"auto_pad", "SAME_LOWER"}}},
      {{1, 2, 9, 9}, {{"kernel_shape", Ints{3, 3}}, {"auto_pad", "VALID"}, {"strides", Ints{2, 2}}}},
      {{3, 6, 17}, {{"kernel_shape", Ints{4}}, {"strides", Ints{3}}, {"pads", Ints{1, 2}}}},  // 1-D
      {{1, 3, 6, 7, 8},
       {{"kernel_shape", Ints{2, 3, 2}}, {"strides", Ints{2, 2, 1}}, {"pads", Ints{1, 0, 1, 0, 1, 0}}}},
      {{1, 17, 10, 10}, {{"kernel_shape", Ints{5, 5}}, {"strides", Ints{3, 3}}, {"pads", Ints{2, 2, 2, 2}}}},
      // Large enough for two threads: the primitive rather than the plain loops of small ones.
      {{2, 32, 112, 112},
       {{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}}},
  };
  return cases;
}

// The shape of a pooling's output, as shape inference gives it.
Shape pooled_shape(const std::string& op, const PoolCase& c) {
  graph::Graph g;
  graph::Node* pool =
      g.add_node(op, {g.add_input("x", ops::TensorInfo{DType::kFloat32, c.x})}, c.attrs, "pool");
  g.add_output(pool->outputs[0]);
  g.infer_shapes();
  return pool->outputs[0]->info->shape;
}

TEST(OnednnPool, MaxPoolWindows) {
  std::mt19937 rng(31);
  for (const PoolCase& c : window_cases()) {
    SCOPED_TRACE(c.x.to_string());
    compare("MaxPool", c.attrs, {{random_tensor(c.x, rng)}}, CompareOptions{.tolerance = 0});
  }
}

// The gradients on the backward primitive: each window's dY at its maximum (overlapping windows
// add up), or shared over its taps.
TEST(OnednnPool, GradientsOfEveryWindow) {
  std::mt19937 rng(33);
  for (const PoolCase& c : window_cases()) {
    SCOPED_TRACE(c.x.to_string());
    compare("MaxPoolGrad", c.attrs,
            {{random_tensor(pooled_shape("MaxPool", c), rng)}, {random_tensor(c.x, rng)}},
            CompareOptions{.tolerance = 1e-6});
    for (int include_pad : {0, 1}) {
      AttrMap attrs = c.attrs;
      attrs.insert_or_assign("count_include_pad", include_pad);
      const bool beyond_pads = attrs.count("ceil_mode") != 0 && include_pad == 1;
      compare("AveragePoolGrad", attrs,
              {{random_tensor(pooled_shape("AveragePool", c), rng)}, {random_tensor(c.x, rng)}},
              CompareOptions{.provider = beyond_pads ? "reference" : "onednn", .tolerance = 1e-6});
    }
  }
}

TEST(OnednnPool, AveragePoolWindowsWithAndWithoutPaddingInTheCount) {
  std::mt19937 rng(32);
  for (const PoolCase& c : window_cases()) {
    for (int include_pad : {0, 1}) {
      SCOPED_TRACE(c.x.to_string() + " count_include_pad " + std::to_string(include_pad));
      AttrMap attrs = c.attrs;
      attrs.insert_or_assign("count_include_pad", include_pad);
      // ceil_mode's extra window reaches past the explicit pads: its divisor is ONNX's only
      // without count_include_pad.
      const bool beyond_pads = attrs.count("ceil_mode") != 0 && include_pad == 1;
      compare("AveragePool", attrs, {{random_tensor(c.x, rng)}},
              CompareOptions{.provider = beyond_pads ? "reference" : "onednn", .tolerance = 1e-6});
    }
  }
}

TEST(OnednnPool, CeilModeWithinTheExplicitPadsCountsThem) {
  std::mt19937 rng(33);
  // 9 + 2 pads, window 3, stride 2: ceil_mode adds no window beyond the pads here.
  compare("AveragePool",
          {{"kernel_shape", Ints{3, 3}},
           {"strides", Ints{2, 2}},
           {"pads", Ints{1, 1, 1, 1}},
           {"ceil_mode", 1},
           {"count_include_pad", 1}},
          {{random_tensor({1, 3, 9, 9}, rng)}}, CompareOptions{.tolerance = 1e-6});
}

TEST(OnednnPool, GlobalPoolingOfAnyRank) {
  std::mt19937 rng(34);
  for (const Shape& x :
       std::vector<Shape>{{1, 2048, 7, 7}, {2, 3, 5}, {2, 5, 3, 4, 6}, {1, 3, 2, 3, 2, 3}, {3, 7, 1, 1}}) {
    SCOPED_TRACE(x.to_string());
    compare("GlobalAveragePool", {}, {{random_tensor(x, rng)}}, CompareOptions{.tolerance = 1e-6});
    compare("GlobalMaxPool", {}, {{random_tensor(x, rng)}}, CompareOptions{.tolerance = 0});
  }
}

TEST(OnednnPool, LowPrecisionTypes) {
  std::mt19937 rng(35);
  const std::string f16 = provider_for(DType::kFloat16), bf16 = provider_for(DType::kBFloat16);
  const AttrMap attrs{{"kernel_shape", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"pads", Ints{1, 1, 1, 1}}};
  for (const std::string op : {"MaxPool", "AveragePool"}) {
    SCOPED_TRACE(op);
    compare(op, attrs, {{random_tensor({2, 16, 9, 10}, rng, -1.f, 1.f, DType::kBFloat16)}},
            CompareOptions{.provider = bf16, .tolerance = 1e-2});
    compare(op, attrs, {{random_tensor({2, 16, 9, 10}, rng, -1.f, 1.f, DType::kFloat16)}},
            CompareOptions{.provider = f16, .tolerance = 2e-3});
  }
  compare("GlobalAveragePool", {}, {{random_tensor({2, 32, 7, 7}, rng, -1.f, 1.f, DType::kBFloat16)}},
          CompareOptions{.provider = bf16, .tolerance = 1e-2});
}

// Conv (23 channels, which the blocked layout pads to 32) -> MaxPool -> Conv: the pooling reads and
// writes the channel-blocked layout in its plain loops, padding included, with pads and ceil_mode.
TEST(OnednnPool, SmallMaxPoolingsInTheBlockedLayoutOfAConvolution) {
  std::mt19937 rng(37);
  for (const AttrMap& window :
       {AttrMap{{"kernel_shape", Ints{2, 2}}, {"strides", Ints{2, 2}}}, AttrMap{{"kernel_shape", Ints{3, 3}},
                                                                                {"strides", Ints{2, 2}},
                                                                                {"pads", Ints{1, 1, 0, 0}},
                                                                                {"ceil_mode", 1}}}) {
    graph::Graph g;
    graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{1, 3, 7, 7}});
    graph::Value* c1 = g.add_node("Conv",
                                  {x, g.add_initializer("w1", random_tensor({23, 3, 3, 3}, rng)),
                                   g.add_initializer("b1", random_tensor({23}, rng))},
                                  {{"pads", Ints{1, 1, 1, 1}}}, "c1")
                           ->outputs[0];
    graph::Node* pool = g.add_node("MaxPool", {c1}, window, "pool");
    g.add_output(g.add_node("Conv",
                            {pool->outputs[0], g.add_initializer("w2", random_tensor({8, 23, 1, 1}, rng))},
                            {}, "c2")
                     ->outputs[0]);
    g.infer_shapes();
    const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
    ASSERT_EQ(fast->steps.size(), 3u) << "a conversion around the pooling";
    ASSERT_NE(fast->values.at(static_cast<size_t>(fast->steps[1].inputs[0])).layout, nullptr);
    const Tensor input = random_tensor({1, 3, 7, 7}, rng);
    const auto got = runtime::Executor(fast).run({input})[0].to_vector<float>();
    const auto want = runtime::Executor(runtime::compile(g)).run({input})[0].to_vector<float>();
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << "element " << i;
  }
}

TEST(OnednnPool, WhatOneDnnDoesNotCoverStaysWithTheReference) {
  std::mt19937 rng(36);
  // The Indices output.
  compare("MaxPool", {{"kernel_shape", Ints{2, 2}}}, {{random_tensor({1, 2, 4, 4}, rng)}},
          CompareOptions{.provider = "reference", .num_outputs = 2});
  // 8-bit integers: in this layout only oneDNN's generic implementation takes them.
  compare("MaxPool", {{"kernel_shape", Ints{2, 2}}},
          {{random_tensor({1, 16, 6, 6}, rng, -128.f, 127.f, DType::kInt8)}}, false);
  // Dilations: oneDNN 3.2 pools dilated windows only with its generic implementation, many times
  // slower than the reference kernel.
  compare("MaxPool", {{"kernel_shape", Ints{3, 2}}, {"dilations", Ints{2, 3}}, {"pads", Ints{2, 1, 2, 1}}},
          {{random_tensor({1, 5, 12, 11}, rng)}}, false);
}

}  // namespace
}  // namespace kiln::onednn
