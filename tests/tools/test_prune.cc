// Pruning (src/tools/prune): unstructured shares and thresholds against counts made here, channel
// pruning against the original graph with the chosen filters zeroed (run by the reference
// interpreter) on plain, residual, concat, depthwise and SiLU graphs, kept counts rounded to a
// channel multiple, the report against hand counts, bad arguments, and 30% channel pruning of a CNN trained
// by Kiln on the digits data.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>

#include "frontends/model_files.h"
#include "frontends/mxnet/import.h"
#include "frontends/onnx/export.h"
#include "graph/graph.h"
#include "kiln/error.hpp"
#include "kiln/kiln.hpp"
#include "kiln/nn/gluon.hpp"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "kiln/prune.hpp"
#include "runtime/runtime_test_util.h"
#include "test_support.h"
#include "tools/digits_cnn.h"

namespace kiln::pruning {
namespace {

using graph::Graph;
using graph::Node;
using graph::Value;
using ops::TensorInfo;
using runtime::testing::random_tensor;
using runtime::testing::reference_evaluate;

Value* out0(Node* n) {
  return n->outputs[0];
}

int64_t zeros_of(const Tensor& t) {
  const std::vector<float> v = t.to_vector<float>();
  return std::count(v.begin(), v.end(), 0.0f);
}

const Tensor& weight_of(const Graph& g, const std::string& node) {
  return g.find_node(node)->inputs[1]->constant;
}

// x (1, 3, 8, 8) -> Conv a (8, 3x3, pad 1, bias) [-> BatchNormalization] -> Relu -> MaxPool 2x2 ->
// Conv b (6, 3x3, pad 1, bias) -> Relu -> Flatten -> Gemm fc (10 x 96, transB).
Graph conv_net(bool batch_norm, std::mt19937& rng) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 3, 8, 8}});
  Value* h = out0(g.add_node("Conv",
                             {x, g.add_initializer("a/W", random_tensor({8, 3, 3, 3}, rng)),
                              g.add_initializer("a/B", random_tensor({8}, rng))},
                             {{"pads", {1, 1, 1, 1}}}, "a"));
  if (batch_norm) {
    h = out0(g.add_node("BatchNormalization",
                        {h, g.add_initializer("bn/scale", random_tensor({8}, rng, 0.5f, 1.5f)),
                         g.add_initializer("bn/bias", random_tensor({8}, rng)),
                         g.add_initializer("bn/mean", random_tensor({8}, rng)),
                         g.add_initializer("bn/var", random_tensor({8}, rng, 0.5f, 2.f))},
                        {}, "bn"));
  }
  h = out0(g.add_node("Relu", {h}, {}, "a/relu"));
  h = out0(g.add_node("MaxPool", {h}, {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, "pool"));
  h = out0(g.add_node("Conv",
                      {h, g.add_initializer("b/W", random_tensor({6, 8, 3, 3}, rng)),
                       g.add_initializer("b/B", random_tensor({6}, rng))},
                      {{"pads", {1, 1, 1, 1}}}, "b"));
  h = out0(g.add_node("Relu", {h}, {}, "b/relu"));
  h = out0(g.add_node("Flatten", {h}, {}, "flatten"));
  h = out0(g.add_node("Gemm",
                      {h, g.add_initializer("fc/W", random_tensor({10, 96}, rng)),
                       g.add_initializer("fc/B", random_tensor({10}, rng))},
                      {{"transB", 1}}, "fc"));
  g.set_outputs({h});
  g.infer_shapes();
  return g;
}

// The indices of the `count` rows of smallest L1 norm of a (M, ...) weight, each row scaled by
// scale[m] (BatchNormalization's gamma / sqrt(var + eps) as folding applies it; empty: 1).
std::vector<int64_t> smallest_filters(const Tensor& w, const std::vector<float>& scale, int64_t count) {
  const std::vector<float> v = w.to_vector<float>();
  const int64_t rows = w.shape()[0], size = w.numel() / rows;
  std::vector<double> norms(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t i = 0; i < size; ++i) s += std::fabs(v[static_cast<size_t>(r * size + i)]);
    norms[static_cast<size_t>(r)] = s * (scale.empty() ? 1.0 : std::fabs(scale[static_cast<size_t>(r)]));
  }
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return norms[static_cast<size_t>(a)] < norms[static_cast<size_t>(b)];
  });
  return std::vector<int64_t>(order.begin(), order.begin() + count);
}

// Sets rows `rows` along `axis` of a constant to `value`.
void fill_rows(Graph& g, const std::string& name, int axis, const std::vector<int64_t>& rows, float value) {
  Value* v = g.find_value(name);
  Tensor t = v->constant.clone();
  for (int64_t r : rows) {
    Tensor part = t.slice(axis, r, r + 1);
    part.copy_from(Tensor::full(part.shape(), value, DType::kFloat32));
  }
  v->constant = t;
}

void expect_close(const Tensor& got, const Tensor& want, float tolerance) {
  ASSERT_EQ(got.shape(), want.shape());
  const std::vector<float> a = got.to_vector<float>(), b = want.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], tolerance) << "element " << i;
}

TEST(PruneUnstructured, PerLayerRatioZeroesExactlyThatShareSmallestFirstWithTies) {
  std::mt19937 rng(1);
  Graph g = conv_net(false, rng);
  // Many equal magnitudes: values from {-2, -1, 0, 1, 2} / 4.
  std::uniform_int_distribution<int> level(-2, 2);
  std::vector<float> w(216);
  for (float& x : w) x = static_cast<float>(level(rng)) / 4.0f;
  g.find_value("a/W")->constant = Tensor::from_vector(w, Shape{8, 3, 3, 3});
  PruneReport report;
  const Graph pruned = prune_l1_unstructured(g.clone(), 0.3, {"a", "fc"}, &report);
  for (const auto& [name, n] : std::vector<std::pair<std::string, int64_t>>{{"a", 216}, {"fc", 960}}) {
    const std::vector<float> before = weight_of(g, name).to_vector<float>();
    const std::vector<float> after = weight_of(pruned, name).to_vector<float>();
    const auto expected = static_cast<int64_t>(std::llround(0.3 * static_cast<double>(n)));
    EXPECT_EQ(zeros_of(weight_of(pruned, name)), expected) << name;
    float largest_zeroed = 0, smallest_kept = 1e30f;
    for (size_t i = 0; i < before.size(); ++i) {
      if (after[i] == 0) {
        largest_zeroed = std::max(largest_zeroed, std::fabs(before[i]));
      } else {
        smallest_kept = std::min(smallest_kept, std::fabs(before[i]));
        EXPECT_EQ(after[i], before[i]);
      }
    }
    EXPECT_LE(largest_zeroed, smallest_kept) << name;
  }
  EXPECT_EQ(zeros_of(weight_of(pruned, "b")), 0);  // not named
  EXPECT_EQ(report.layers.size(), 3u);
  EXPECT_EQ(report.layers[0].zeros_after, 65);
  EXPECT_EQ(report.params_before, report.params_after);
}

TEST(PruneUnstructured, GlobalThresholdAndRatioOnKnownWeights) {
  std::mt19937 rng(2);
  Graph g = conv_net(false, rng);
  // a: 0.01 * (1..216), b: 0.01 * (1..432) negated, fc: 0.01 * (1..960).
  const auto ramp = [](int64_t n, float sign) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = sign * 0.01f * static_cast<float>(i + 1);
    return v;
  };
  g.find_value("a/W")->constant = Tensor::from_vector(ramp(216, 1), Shape{8, 3, 3, 3});
  g.find_value("b/W")->constant = Tensor::from_vector(ramp(432, -1), Shape{6, 8, 3, 3});
  g.find_value("fc/W")->constant = Tensor::from_vector(ramp(960, 1), Shape{10, 96});
  // |w| < 1.005: the first 100 of each layer.
  const Graph by_threshold = prune_global_threshold(g.clone(), 1.005f);
  EXPECT_EQ(zeros_of(weight_of(by_threshold, "a")), 100);
  EXPECT_EQ(zeros_of(weight_of(by_threshold, "b")), 100);
  EXPECT_EQ(zeros_of(weight_of(by_threshold, "fc")), 100);
  // 50% of 1608: 804 weights; magnitudes 0.01..2.16 appear three times (a, b, fc), 2.17..4.32 twice
  // (b, fc): 648 + 156 = 804 reaches through 0.01 * (216 + 78) = 2.94 in b and fc.
  PruneReport report;
  const Graph by_ratio = prune_global_magnitude(g.clone(), 0.5, &report);
  EXPECT_EQ(zeros_of(weight_of(by_ratio, "a")), 216);
  EXPECT_EQ(zeros_of(weight_of(by_ratio, "b")), 294);
  EXPECT_EQ(zeros_of(weight_of(by_ratio, "fc")), 294);
  EXPECT_DOUBLE_EQ(report.sparsity_after, 804.0 / 1608.0);
}

TEST(PruneUnstructured, BadArgumentsRaiseNamingThem) {
  std::mt19937 rng(3);
  const Graph g = conv_net(false, rng);
  for (double ratio : {1.0, -0.1, 1.5}) {
    try {
      prune_l1_unstructured(g.clone(), ratio);
      ADD_FAILURE() << "ratio " << ratio << " accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("ratio"), std::string::npos) << e.what();
    }
    EXPECT_THROW(prune_global_magnitude(g.clone(), ratio), Error);
    EXPECT_THROW(prune_channels(g.clone(), {.ratio = ratio}), Error);
  }
  try {
    prune_l1_unstructured(g.clone(), 0.5, {"a", "no_such_layer"});
    ADD_FAILURE() << "unknown layer accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_layer"), std::string::npos) << e.what();
  }
  EXPECT_THROW(prune_channels(g.clone(), {.layers = {"missing_conv"}}), Error);
  EXPECT_THROW(prune_channels(g.clone(), {.excluded_layers = {"missing_conv"}}), Error);
  EXPECT_THROW(prune_channels(g.clone(), {.norm = "l3"}), Error);
  EXPECT_THROW(prune_global_threshold(g.clone(), -1.0f), Error);
}

TEST(PruneChannels, SmallerGraphEqualsOriginalWithChosenFiltersZeroed) {
  std::mt19937 rng(4);
  const Graph g = conv_net(true, rng);
  const Graph pruned = prune_channels(g.clone(), {.ratio = 0.5});
  EXPECT_EQ(weight_of(pruned, "a").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "b").shape(), (Shape{3, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "fc").shape(), (Shape{10, 48}));
  for (const Node* n : pruned.nodes()) EXPECT_NE(n->op, "BatchNormalization");

  // The channels a's folded filters rank lowest: W[m] * gamma[m] / sqrt(var[m] + eps).
  const std::vector<float> gamma = g.find_value("bn/scale")->constant.to_vector<float>();
  const std::vector<float> var = g.find_value("bn/var")->constant.to_vector<float>();
  const std::vector<float> mean = g.find_value("bn/mean")->constant.to_vector<float>();
  std::vector<float> scale(8);
  for (size_t m = 0; m < 8; ++m) scale[m] = gamma[m] / std::sqrt(var[m] + 1e-5f);
  const std::vector<int64_t> a_removed = smallest_filters(weight_of(g, "a"), scale, 4);
  const std::vector<int64_t> b_removed = smallest_filters(weight_of(g, "b"), {}, 3);
  // In the original: a's removed filters zero, its bias equal to BatchNormalization's mean and
  // beta zero, so the channel is 0 after BatchNormalization; b's filters and bias zero.
  Graph zeroed = g.clone();
  fill_rows(zeroed, "a/W", 0, a_removed, 0.0f);
  fill_rows(zeroed, "bn/bias", 0, a_removed, 0.0f);
  Tensor a_bias = zeroed.find_value("a/B")->constant.clone();
  for (int64_t c : a_removed) a_bias.data<float>()[c] = mean[static_cast<size_t>(c)];
  zeroed.find_value("a/B")->constant = a_bias;
  fill_rows(zeroed, "b/W", 0, b_removed, 0.0f);
  fill_rows(zeroed, "b/B", 0, b_removed, 0.0f);

  const Tensor x = random_tensor({1, 3, 8, 8}, rng);
  const Tensor want = reference_evaluate(zeroed, {x})[0];
  expect_close(reference_evaluate(pruned, {x})[0], want, 1e-4f);
  expect_close(Predictor(pruned.clone()).predict({x})[0], want, 1e-4f);
  // And the zeroing matters: the original's own output differs.
  const std::vector<float> original = reference_evaluate(g, {x})[0].to_vector<float>();
  const std::vector<float> w = want.to_vector<float>();
  float difference = 0;
  for (size_t i = 0; i < w.size(); ++i) difference = std::max(difference, std::fabs(w[i] - original[i]));
  EXPECT_GT(difference, 1e-3f);
}

TEST(PruneChannels, ReportMatchesHandCounts) {
  std::mt19937 rng(5);
  PruneReport report;
  const Graph pruned = prune_channels(conv_net(false, rng), {.ratio = 0.5, .norm = "l2"}, &report);
  // Conv a: 8 x 8 x 8 outputs x 27 multiply-adds; Relu 512; Conv b: 6 x 4 x 4 x 72; Relu 96;
  // Gemm 10 x 96 (two FLOPs per multiply-add, one per Relu output).
  EXPECT_EQ(report.flops_before, 2 * 512 * 27 + 512 + 2 * 96 * 72 + 96 + 2 * 10 * 96);
  // After: a 4 channels, b 3 channels reading 4, fc 48 columns.
  EXPECT_EQ(report.flops_after, 2 * 256 * 27 + 256 + 2 * 48 * 36 + 48 + 2 * 10 * 48);
  EXPECT_EQ(report.params_before, 216 + 8 + 432 + 6 + 960 + 10);
  EXPECT_EQ(report.params_after, 108 + 4 + 108 + 3 + 480 + 10);
  ASSERT_EQ(report.layers.size(), 3u);
  EXPECT_EQ(report.layers[1].name, "b");
  EXPECT_EQ(report.layers[1].params_before, 438);
  EXPECT_EQ(report.layers[1].params_after, 111);
  EXPECT_EQ(report.layers[1].flops_before, 2 * 96 * 72);
  EXPECT_EQ(report.layers[1].flops_after, 2 * 48 * 36);
  EXPECT_NE(report.to_string().find("FLOPs"), std::string::npos);
}

// x (1, 4, 6, 6) -> c1 -> Relu -> c2 -> Add(x) -> Relu = h -> Concat(c3(h), h, c4(h)) -> c5 (output).
Graph residual_concat_net(std::mt19937& rng) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 4, 6, 6}});
  const auto conv = [&](Value* in, int64_t cin, int64_t cout, const std::string& name) {
    return out0(g.add_node("Conv",
                           {in, g.add_initializer(name + "/W", random_tensor({cout, cin, 3, 3}, rng)),
                            g.add_initializer(name + "/B", random_tensor({cout}, rng))},
                           {{"pads", {1, 1, 1, 1}}}, name));
  };
  Value* h = out0(g.add_node("Relu", {conv(x, 4, 8, "c1")}, {}, "r1"));
  h = out0(g.add_node("Add", {conv(h, 8, 4, "c2"), x}, {}, "residual"));
  h = out0(g.add_node("Relu", {h}, {}, "r2"));
  h = out0(g.add_node("Concat", {conv(h, 4, 6, "c3"), h, conv(h, 4, 6, "c4")}, {{"axis", 1}}, "concat"));
  g.set_outputs({conv(h, 16, 5, "c5")});
  g.infer_shapes();
  return g;
}

TEST(PruneChannels, ResidualWithAGraphInputStaysWholeConcatReadersLoseChannelsAtOffsets) {
  std::mt19937 rng(6);
  const Graph g = residual_concat_net(rng);
  const Graph pruned = prune_channels(g.clone(), {.ratio = 0.5});
  // c1 feeds c2 alone; c2 meets x in the residual Add (left whole); c3 and c4 reach c5 through the
  // Concat, at channels 0-5 and 10-15 (h, whole, is 6-9); c5 is the output.
  EXPECT_EQ(weight_of(pruned, "c1").shape(), (Shape{4, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c2").shape(), (Shape{4, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c3").shape(), (Shape{3, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c4").shape(), (Shape{3, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c5").shape(), (Shape{5, 10, 3, 3}));
  pruned.verify();

  Graph zeroed = g.clone();
  for (const auto& [name, count] :
       std::vector<std::pair<std::string, int64_t>>{{"c1", 4}, {"c3", 3}, {"c4", 3}}) {
    const std::vector<int64_t> removed = smallest_filters(weight_of(g, name), {}, count);
    fill_rows(zeroed, name + "/W", 0, removed, 0.0f);
    fill_rows(zeroed, name + "/B", 0, removed, 0.0f);
  }
  const Tensor x = random_tensor({1, 4, 6, 6}, rng);
  expect_close(Predictor(pruned.clone()).predict({x})[0], reference_evaluate(zeroed, {x})[0], 1e-4f);
  for (const char* tied : {"c2", "c5"}) {
    try {
      prune_channels(g.clone(), {.layers = {tied}});
      ADD_FAILURE() << tied << " pruned";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(tied), std::string::npos) << e.what();
    }
  }
}

// x (1, 3, 6, 6) -> s -> Relu = r; two residual blocks r + c2(Relu(c1(r))), then + c4(Relu(c3(.)));
// Relu -> GlobalAveragePool -> Flatten -> Gemm fc (output).
Graph residual_net(std::mt19937& rng) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 3, 6, 6}});
  const auto conv = [&](Value* in, int64_t cin, int64_t cout, const std::string& name) {
    return out0(g.add_node("Conv",
                           {in, g.add_initializer(name + "/W", random_tensor({cout, cin, 3, 3}, rng)),
                            g.add_initializer(name + "/B", random_tensor({cout}, rng))},
                           {{"pads", {1, 1, 1, 1}}}, name));
  };
  Value* r = out0(g.add_node("Relu", {conv(x, 3, 8, "s")}, {}, "s/relu"));
  Value* inner = out0(g.add_node("Relu", {conv(r, 8, 6, "c1")}, {}, "c1/relu"));
  r = out0(g.add_node("Relu", {out0(g.add_node("Add", {r, conv(inner, 6, 8, "c2")}, {}, "add1"))}, {}, "r1"));
  inner = out0(g.add_node("Relu", {conv(r, 8, 6, "c3")}, {}, "c3/relu"));
  r = out0(g.add_node("Relu", {out0(g.add_node("Add", {conv(inner, 6, 8, "c4"), r}, {}, "add2"))}, {}, "r2"));
  r = out0(g.add_node("Flatten", {out0(g.add_node("GlobalAveragePool", {r}, {}, "gap"))}, {}, "flatten"));
  g.set_outputs({out0(g.add_node("Gemm",
                                 {r, g.add_initializer("fc/W", random_tensor({5, 8}, rng)),
                                  g.add_initializer("fc/B", random_tensor({5}, rng))},
                                 {{"transB", 1}}, "fc"))});
  g.infer_shapes();
  return g;
}

TEST(PruneChannels, ResidualGroupsArePrunedJointlyBySummedNorms) {
  std::mt19937 rng(7);
  const Graph g = residual_net(rng);
  const Graph pruned = prune_channels(g.clone(), {.ratio = 0.5});
  pruned.verify();
  // s, c2 and c4 share the residual channels: 4 of 8 kept in each, read by c1, c3 and fc.
  EXPECT_EQ(weight_of(pruned, "s").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c1").shape(), (Shape{3, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c2").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c3").shape(), (Shape{3, 4, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c4").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "fc").shape(), (Shape{5, 4}));

  // The residual channels removed: the 4 of smallest L1 norm summed over s, c2 and c4.
  std::vector<double> summed(8, 0.0);
  for (const char* name : {"s", "c2", "c4"}) {
    const std::vector<float> w = weight_of(g, name).to_vector<float>();
    const size_t size = w.size() / 8;
    for (size_t c = 0; c < 8; ++c)
      for (size_t i = 0; i < size; ++i) summed[c] += std::fabs(w[c * size + i]);
  }
  std::vector<int64_t> order(8);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return summed[static_cast<size_t>(a)] < summed[static_cast<size_t>(b)];
  });
  const std::vector<int64_t> removed(order.begin(), order.begin() + 4);
  Graph zeroed = g.clone();
  for (const char* name : {"s", "c2", "c4"}) {
    fill_rows(zeroed, std::string(name) + "/W", 0, removed, 0.0f);
    fill_rows(zeroed, std::string(name) + "/B", 0, removed, 0.0f);
  }
  for (const char* name : {"c1", "c3"}) {
    const std::vector<int64_t> own = smallest_filters(weight_of(g, name), {}, 3);
    fill_rows(zeroed, std::string(name) + "/W", 0, own, 0.0f);
    fill_rows(zeroed, std::string(name) + "/B", 0, own, 0.0f);
  }
  const Tensor x = random_tensor({1, 3, 6, 6}, rng);
  const Tensor want = reference_evaluate(zeroed, {x})[0];
  expect_close(reference_evaluate(pruned, {x})[0], want, 1e-4f);
  expect_close(Predictor(pruned.clone()).predict({x})[0], want, 1e-4f);
  // Excluding one Conv of the group leaves the whole group alone.
  const Graph without_c2 = prune_channels(g.clone(), {.ratio = 0.5, .excluded_layers = {"c2"}});
  EXPECT_EQ(weight_of(without_c2, "s").shape(), (Shape{8, 3, 3, 3}));
  EXPECT_EQ(weight_of(without_c2, "c4").shape(), (Shape{8, 3, 3, 3}));
  EXPECT_EQ(weight_of(without_c2, "c1").shape(), (Shape{3, 8, 3, 3}));
}

// x (1, 3, 6, 6) -> c1 (8) -> Clip(0, 6) -> depthwise dw (8 groups, 3x3) -> Clip(0, 6) -> c2 (1x1, 5,
// the output): MobileNetV2's inverted residual without its residual.
TEST(PruneChannels, DepthwiseConvsLoseTheChannelsOfTheirInput) {
  std::mt19937 rng(8);
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 3, 6, 6}});
  Value* lo = g.add_initializer("lo", Tensor::scalar(0.0, DType::kFloat32));
  Value* hi = g.add_initializer("hi", Tensor::scalar(6.0, DType::kFloat32));
  const auto conv = [&](Value* in, Shape w, int64_t group, int64_t pad, const std::string& name) {
    const int64_t out = w[0];
    return out0(g.add_node("Conv",
                           {in, g.add_initializer(name + "/W", random_tensor(w, rng)),
                            g.add_initializer(name + "/B", random_tensor({out}, rng))},
                           {{"pads", std::vector<int64_t>{pad, pad, pad, pad}}, {"group", AttrValue(group)}},
                           name));
  };
  Value* h = out0(g.add_node("Clip", {conv(x, {8, 3, 3, 3}, 1, 1, "c1"), lo, hi}, {}, "clip1"));
  h = out0(g.add_node("Clip", {conv(h, {8, 1, 3, 3}, 8, 1, "dw"), lo, hi}, {}, "clip2"));
  g.set_outputs({conv(h, {5, 8, 1, 1}, 1, 0, "c2")});
  g.infer_shapes();

  const Graph pruned = prune_channels(g.clone(), {.ratio = 0.5});
  EXPECT_EQ(weight_of(pruned, "c1").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "dw").shape(), (Shape{4, 1, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c2").shape(), (Shape{5, 4, 1, 1}));
  Graph zeroed = g.clone();
  const std::vector<int64_t> removed = smallest_filters(weight_of(g, "c1"), {}, 4);
  for (const char* name : {"c1", "dw"}) {
    fill_rows(zeroed, std::string(name) + "/W", 0, removed, 0.0f);
    fill_rows(zeroed, std::string(name) + "/B", 0, removed, 0.0f);
  }
  const Tensor x_value = random_tensor({1, 3, 6, 6}, rng, -3.f, 3.f);
  const Tensor want = reference_evaluate(zeroed, {x_value})[0];
  expect_close(reference_evaluate(pruned, {x_value})[0], want, 1e-4f);
  expect_close(Predictor(pruned.clone()).predict({x_value})[0], want, 1e-4f);
  EXPECT_THROW(prune_channels(g.clone(), {.layers = {"dw"}}), Error);  // pruned with c1 only
}

// x (1, 3, 4, 4) -> c1 (8) -> x * Sigmoid(x) -> Resize (nearest, 2x) -> c2 (5, the output): SiLU and
// upsampling as YOLOv5 exports them.
TEST(PruneChannels, ThroughSiluAndSpatialResize) {
  std::mt19937 rng(9);
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 3, 4, 4}});
  const auto conv = [&](Value* in, int64_t cin, int64_t cout, const std::string& name) {
    return out0(g.add_node("Conv",
                           {in, g.add_initializer(name + "/W", random_tensor({cout, cin, 3, 3}, rng)),
                            g.add_initializer(name + "/B", random_tensor({cout}, rng))},
                           {{"pads", {1, 1, 1, 1}}}, name));
  };
  Value* h = conv(x, 3, 8, "c1");
  h = out0(g.add_node("Mul", {h, out0(g.add_node("Sigmoid", {h}, {}, "gate"))}, {}, "silu"));
  Value* scales = g.add_initializer("scales", Tensor::from_vector<float>({1, 1, 2, 2}, Shape{4}));
  h = out0(g.add_node("Resize", {h, nullptr, scales}, {{"mode", std::string("nearest")}}, "up"));
  g.set_outputs({conv(h, 8, 5, "c2")});
  g.infer_shapes();

  const Graph pruned = prune_channels(g.clone(), {.ratio = 0.5});
  EXPECT_EQ(weight_of(pruned, "c1").shape(), (Shape{4, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c2").shape(), (Shape{5, 4, 3, 3}));
  Graph zeroed = g.clone();
  const std::vector<int64_t> removed = smallest_filters(weight_of(g, "c1"), {}, 4);
  fill_rows(zeroed, "c1/W", 0, removed, 0.0f);
  fill_rows(zeroed, "c1/B", 0, removed, 0.0f);
  const Tensor x_value = random_tensor({1, 3, 4, 4}, rng);
  const Tensor want = reference_evaluate(zeroed, {x_value})[0];
  expect_close(reference_evaluate(pruned, {x_value})[0], want, 1e-4f);
  expect_close(Predictor(pruned.clone()).predict({x_value})[0], want, 1e-4f);
}

// x (1, 3, 6, 6) -> s (24) -> Relu = r; r + c2(Relu(c1(r))) (c1: 12, c2: 24) -> Relu = h;
// Concat(c3(h) (20), c4(h) (12)) -> Relu -> c5 (6, the output). All Convs 3x3, pad 1, weights in
// [-0.2, 0.2] so that the outputs stay near 1.
Graph multiple_net(std::mt19937& rng) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 3, 6, 6}});
  const auto conv = [&](Value* in, int64_t cin, int64_t cout, const std::string& name) {
    return out0(
        g.add_node("Conv",
                   {in, g.add_initializer(name + "/W", random_tensor({cout, cin, 3, 3}, rng, -0.2f, 0.2f)),
                    g.add_initializer(name + "/B", random_tensor({cout}, rng))},
                   {{"pads", {1, 1, 1, 1}}}, name));
  };
  Value* r = out0(g.add_node("Relu", {conv(x, 3, 24, "s")}, {}, "s/relu"));
  Value* inner = out0(g.add_node("Relu", {conv(r, 24, 12, "c1")}, {}, "c1/relu"));
  Value* h = out0(
      g.add_node("Relu", {out0(g.add_node("Add", {r, conv(inner, 12, 24, "c2")}, {}, "add"))}, {}, "r1"));
  h = out0(g.add_node("Concat", {conv(h, 24, 20, "c3"), conv(h, 24, 12, "c4")}, {{"axis", 1}}, "concat"));
  h = out0(g.add_node("Relu", {h}, {}, "concat/relu"));
  g.set_outputs({conv(h, 32, 6, "c5")});
  g.infer_shapes();
  return g;
}

// The `count` channels of smallest L1 filter norm summed over the Convs `names` of `g`.
std::vector<int64_t> smallest_summed(const Graph& g, const std::vector<std::string>& names, int64_t count) {
  const int64_t rows = weight_of(g, names[0]).shape()[0];
  std::vector<float> summed(static_cast<size_t>(rows), 0.0f);
  for (const std::string& name : names) {
    const std::vector<float> w = weight_of(g, name).to_vector<float>();
    const size_t size = w.size() / summed.size();
    for (size_t c = 0; c < summed.size(); ++c)
      for (size_t i = 0; i < size; ++i) summed[c] += std::fabs(w[c * size + i]);
  }
  // One column per channel: its L1 norm is the summed norm.
  return smallest_filters(Tensor::from_vector<float>(summed, Shape{rows, 1}), {}, count);
}

TEST(PruneChannels, ChannelMultipleRoundsKeptCountsThroughResidualAndConcatGroups) {
  std::mt19937 rng(10);
  const Graph g = multiple_net(rng);
  PruneReport report;
  const Graph pruned = prune_channels(g.clone(), {.ratio = 0.3, .channel_multiple = 8}, &report);
  pruned.verify();
  // 30% of 24 leaves 17, of 20 leaves 14, of 12 leaves 9: rounded to 16, 16 and 8. c5 (6 channels,
  // the output) stays whole and reads the Concat's 16 + 8.
  EXPECT_EQ(weight_of(pruned, "s").shape(), (Shape{16, 3, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c1").shape(), (Shape{8, 16, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c2").shape(), (Shape{16, 8, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c3").shape(), (Shape{16, 16, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c4").shape(), (Shape{8, 16, 3, 3}));
  EXPECT_EQ(weight_of(pruned, "c5").shape(), (Shape{6, 24, 3, 3}));
  // Without the multiple: 17, 9, 14 and 9 channels, c5 reading 23.
  const Graph exact = prune_channels(g.clone(), {.ratio = 0.3});
  EXPECT_EQ(weight_of(exact, "s").shape(), (Shape{17, 3, 3, 3}));
  EXPECT_EQ(weight_of(exact, "c5").shape(), (Shape{6, 23, 3, 3}));

  Graph zeroed = g.clone();
  const std::vector<int64_t> residual = smallest_summed(g, {"s", "c2"}, 8);
  for (const char* name : {"s", "c2"}) {
    fill_rows(zeroed, std::string(name) + "/W", 0, residual, 0.0f);
    fill_rows(zeroed, std::string(name) + "/B", 0, residual, 0.0f);
  }
  for (const auto& [name, count] :
       std::vector<std::pair<std::string, int64_t>>{{"c1", 4}, {"c3", 4}, {"c4", 4}}) {
    const std::vector<int64_t> removed = smallest_filters(weight_of(g, name), {}, count);
    fill_rows(zeroed, name + "/W", 0, removed, 0.0f);
    fill_rows(zeroed, name + "/B", 0, removed, 0.0f);
  }
  const Tensor x = random_tensor({1, 3, 6, 6}, rng);
  const Tensor want = reference_evaluate(zeroed, {x})[0];
  expect_close(reference_evaluate(pruned, {x})[0], want, 1e-4f);
  expect_close(Predictor(pruned.clone()).predict({x})[0], want, 1e-4f);

  // FLOPs on 36 positions: Convs 2 * out * 9 * in each, Relus and the Add one per output.
  const auto flops = [](int64_t s, int64_t c1, int64_t c3, int64_t c4) {
    const int64_t convs = s * 3 + c1 * s + s * c1 + c3 * s + c4 * s + 6 * (c3 + c4);
    return 36 * (2 * 9 * convs + 3 * s + c1 + c3 + c4);
  };
  EXPECT_EQ(report.flops_before, flops(24, 12, 20, 12));
  EXPECT_EQ(report.flops_after, flops(16, 8, 16, 8));

  // A layer of at most N channels stays whole; the multiple never exceeds the original.
  const Graph wide = prune_channels(g.clone(), {.ratio = 0.3, .channel_multiple = 16});
  EXPECT_EQ(weight_of(wide, "s").shape(), (Shape{16, 3, 3, 3}));  // 17 -> 16
  EXPECT_EQ(weight_of(wide, "c1").shape(), (Shape{12, 16, 3, 3}));
  EXPECT_EQ(weight_of(wide, "c3").shape(), (Shape{16, 16, 3, 3}));  // 14 -> 16, not above 20's 16
  EXPECT_THROW(prune_channels(g.clone(), {.channel_multiple = 0}), Error);
}

// The CNN of examples/cpp/train_cnn.cpp trained 10 epochs on the digits data (data/digits) and
// exported; the graph Kiln imports from the export.
using testing::digit_images;
using testing::kDigits;

Graph digits_cnn() {
  return testing::trained_digits_cnn("prune_digits_cnn");
}

double accuracy(const Graph& model) {
  return testing::digits_accuracy(model);
}

// 30% of the channels of both Convs: FLOPs down by more than a quarter. Both models are written
// as ONNX to the temporary folder (kiln_prune_digits_{fp32,pruned,pruned_stem_kept}.onnx) for
// `kiln bench`.
TEST(PruneChannels, DigitsCnnThirtyPercentCutsFlopsByMoreThanAQuarter) {
  const Graph model = digits_cnn();
  PruneReport report;
  const Graph pruned = prune_channels(model.clone(), {.ratio = 0.3}, &report);
  std::cout << report.to_string();
  ASSERT_EQ(report.layers.size(), 4u);  // two Convs, two Dense layers
  // Conv 1: 16 -> 12 channels, Conv 2: 32 -> 23 reading 12, Dense 1: 23 * 2 * 2 of 128 columns.
  EXPECT_EQ(report.layers[0].params_after, 12 * 9 + 12);
  EXPECT_EQ(report.layers[1].params_after, 23 * 12 * 9 + 23);
  EXPECT_EQ(report.layers[2].params_after, 64 * 92 + 64);
  EXPECT_LT(static_cast<double>(report.flops_after), 0.75 * static_cast<double>(report.flops_before));
  const double before = accuracy(model), after = accuracy(pruned);
  std::cout << "digits CNN test accuracy: " << before << ", pruned 30% of channels (no fine-tuning) " << after
            << "\n";
  EXPECT_GE(before, 0.97);
  EXPECT_GE(after, 0.5);  // far above chance (0.1): the kept channels still classify
  const auto dir = std::filesystem::temp_directory_path();
  onnx::export_model(model, (dir / "kiln_prune_digits_fp32.onnx").string());
  onnx::export_model(pruned, (dir / "kiln_prune_digits_pruned.onnx").string());

  // The stem left whole, as pruning often keeps the first layer: fewer FLOPs saved, more accuracy
  // kept before fine-tuning.
  PruneReport stem_kept;
  const Graph without_stem =
      prune_channels(model.clone(), {.ratio = 0.3, .excluded_layers = {report.layers[0].name}}, &stem_kept);
  std::cout << stem_kept.to_string();
  EXPECT_EQ(stem_kept.layers[0].params_after, 16 * 9 + 16);
  EXPECT_EQ(stem_kept.layers[1].params_after, 23 * 16 * 9 + 23);
  std::cout << "pruned 30% of the second Conv's channels (no fine-tuning): " << accuracy(without_stem)
            << "\n";
  onnx::export_model(without_stem, (dir / "kiln_prune_digits_pruned_stem_kept.onnx").string());
}

// Fine-tuning a pruned digits CNN with the Gluon Trainer: the pruned graph as a SymbolBlock (its
// weights the block's parameters) computes what the graph computes, trains on, and exports a
// model that keeps the pruned FLOPs. The target: within 1 point of the original.
TEST(PruneChannels, DigitsCnnFineTunedWithTheTrainerRecoversAccuracy) {
  const Graph model = digits_cnn();
  PruneReport report;
  const Graph pruned = prune_channels(model.clone(), {.ratio = 0.3}, &report);
  nn::seed(3);
  nn::SymbolBlock net(pruned.clone(), {"data"});
  EXPECT_EQ(net.collect_params().size(), 8u);  // two Convs and two Dense layers, weight and bias
  const NDArray test_x(digit_images(kDigits + "/test_x.npy"));
  const auto net_accuracy = [&] { return testing::digits_accuracy(net(test_x).tensor()); };
  const double original = accuracy(model), pruned_accuracy = accuracy(pruned);
  EXPECT_DOUBLE_EQ(net_accuracy(), pruned_accuracy);  // the same model, run by Gluon

  net.hybridize();
  testing::train_on_digits(net, 5, 0.001, 11);
  const double tuned = net_accuracy();
  std::cout << "digits CNN test accuracy: " << original << ", pruned 30% " << pruned_accuracy
            << ", fine-tuned 5 epochs " << tuned << "\n";
  EXPECT_GE(tuned, original - 0.01);

  testing::TempDir dir;
  const std::string prefix = (dir.path() / "tuned").string();
  net.export_model(prefix);
  const Graph exported = testing::import_digits_cnn(prefix, "tuned");
  EXPECT_DOUBLE_EQ(accuracy(exported), tuned);
  EXPECT_EQ(measure(model, exported).flops_after, report.flops_after);
}

}  // namespace
}  // namespace kiln::pruning
