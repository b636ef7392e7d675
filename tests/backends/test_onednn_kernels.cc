// Every oneDNN kernel against the reference kernel of the same op, on random shapes that
// include odd sizes, strides, dilations, groups, padding and broadcasting. Each case also checks
// that oneDNN really ran the node (the plan names the provider), so a silent fallback to the
// reference kernels cannot pass for a working fast kernel.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

TEST(OnednnKernels, MatMulWithBatchesAndBroadcasting) {
  std::mt19937 rng(5);
  const std::vector<std::pair<Shape, Shape>> cases{
      {{1, 784}, {784, 256}},
      {{7, 13}, {13, 5}},
      {{2, 3, 4, 6}, {2, 3, 6, 5}},
      {{2, 3, 4, 6}, {6, 5}},
      {{5, 1, 4, 6}, {3, 6, 2}},
      {{3, 17, 33}, {1, 33, 9}},
      // A constant weight over 1 MiB, deeper than wide: read in place under 512 rows, packed from 512.
      {{1, 128, 1024}, {1024, 320}},
      {{4, 128, 1024}, {1024, 320}},
  };
  for (const auto& [a, b] : cases) {
    SCOPED_TRACE(a.to_string() + " x " + b.to_string());
    compare("MatMul", {}, {{random_tensor(a, rng)}, {random_tensor(b, rng), true}});
    compare("MatMul", {}, {{random_tensor(a, rng)}, {random_tensor(b, rng), false}});
  }
}

TEST(OnednnKernels, GemmTransposesBiasShapesAndAlpha) {
  std::mt19937 rng(6);
  struct Case {
    Shape a, b;
    std::optional<Shape> c;
    AttrMap attrs;
  };
  const std::vector<Case> cases{
      {{4, 6}, {5, 6}, Shape{5}, {{"transB", 1}}},
      {{6, 4}, {6, 5}, Shape{4, 5}, {{"transA", 1}}},
      {{6, 4}, {5, 6}, Shape{1, 5}, {{"transA", 1}, {"transB", 1}}},
      {{3, 7}, {7, 2}, Shape{3, 1}, {}},
      {{3, 7}, {7, 2}, std::nullopt, {{"alpha", 0.5}}},
      {{1, 9}, {9, 3}, Shape{}, {}},
      // Over 1 MiB and transposed (a classifier's head): packed, not read column-major in place.
      {{2, 600}, {500, 600}, Shape{500}, {{"transB", 1}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
    std::vector<Operand> operands{{random_tensor(c.a, rng)}, {random_tensor(c.b, rng), true}};
    if (c.c) operands.push_back({random_tensor(*c.c, rng), true});
    // A per-row C (M, 1) has only oneDNN's generic implementation, which is declined.
    const bool per_row = c.c && c.c->ndim() == 2 && (*c.c)[1] == 1 && c.b[1] != 1;
    compare("Gemm", c.attrs, operands, CompareOptions{.provider = per_row ? "reference" : "onednn"});
  }
  // beta other than 1 is left to the reference kernel.
  compare("Gemm", {{"beta", 0.5}},
          {{random_tensor({2, 3}, rng)}, {random_tensor({3, 4}, rng), true}, {random_tensor({4}, rng), true}},
          /*expect_onednn=*/false);
}

TEST(OnednnKernels, FusedOpsApplyResidualBiasAndEveryActivationAsPostOps) {
  std::mt19937 rng(7);
  const std::vector<std::pair<std::string, std::vector<double>>> activations{
      {"", {}},         {"Relu", {}},      {"LeakyRelu", {0.1}},
      {"Elu", {0.7}},   {"Sigmoid", {}},   {"Tanh", {}},
      {"Clip", {0, 6}}, {"HardSwish", {}}, {"HardSigmoid", {0.2, 0.5}},
      {"SiLU", {}},     {"Gelu", {}},      {"GeluTanh", {}}};
  for (const auto& [name, params] : activations) {
    SCOPED_TRACE("activation '" + name + "'");
    const AttrMap act{{"activation", name}, {"activation_params", params}};
    AttrMap conv = act;
    conv.emplace("pads", AttrValue({1, 1, 1, 1}));
    compare("FusedConv", conv,
            {{random_tensor({2, 5, 7, 6}, rng)},
             {random_tensor({6, 5, 3, 3}, rng), true},
             {random_tensor({6}, rng), true},
             {random_tensor({2, 6, 7, 6}, rng)}});
    // The residual added after the activation (YOLOv5's bottleneck): the sum post-op follows.
    AttrMap residual_last = conv;
    residual_last.emplace("residual_after_activation", AttrValue(int64_t{1}));
    compare("FusedConv", residual_last,
            {{random_tensor({2, 5, 7, 6}, rng)},
             {random_tensor({6, 5, 3, 3}, rng), true},
             {random_tensor({6}, rng), true},
             {random_tensor({2, 6, 7, 6}, rng)}});
    // Without bias and residual too: the activation alone must still be applied.
    compare("FusedConv", act, {{random_tensor({1, 4, 6, 6}, rng)}, {random_tensor({8, 4, 1, 1}, rng), true}});
    compare("FusedMatMul", act,
            {{random_tensor({3, 4, 9}, rng)},
             {random_tensor({9, 5}, rng), true},
             {random_tensor({5}, rng), true}});
    AttrMap gemm = act;
    gemm.emplace("transB", AttrValue(1));
    compare(
        "FusedGemm", gemm,
        {{random_tensor({4, 9}, rng)}, {random_tensor({5, 9}, rng), true}, {random_tensor({5}, rng), true}});
  }
}

// FusedMatMul as fuse_matmul_scale_add makes it: attention scores scaled and masked (the mask
// broadcast over heads and query rows), and a projection with a residual of its output's shape;
// in float32 within 1e-5 of the reference kernel.
TEST(OnednnKernels, FusedMatMulScalesAndAddsABroadcastAddend) {
  std::mt19937 rng(8);
  const AttrMap scaled{{"alpha", 0.125}, {"activation", std::string()}};
  compare("FusedMatMul", scaled,
          {{random_tensor({2, 3, 16, 8}, rng)},
           {random_tensor({2, 3, 8, 16}, rng)},
           {random_tensor({2, 1, 1, 16}, rng, -4.f, 0.f)}});
  compare("FusedMatMul", scaled, {{random_tensor({2, 3, 16, 8}, rng)}, {random_tensor({2, 3, 8, 16}, rng)}});
  compare("FusedMatMul", {{"activation", std::string()}},
          {{random_tensor({2, 16, 24}, rng)},
           {random_tensor({24, 32}, rng), true},
           {random_tensor({2, 16, 32}, rng)}});
}

}  // namespace
}  // namespace kiln::onednn
