// Every oneDNN kernel against the reference kernel of the same op, on random shapes that
// include odd sizes, strides, dilations, groups, padding and broadcasting. Each case also checks
// that oneDNN really ran the node (the plan names the provider), so a silent fallback to the
// reference kernels cannot pass for a working fast kernel.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "runtime/executor.h"
#include "runtime/kernel_provider.h"
#include "runtime/plan.h"

namespace kiln::onednn {
namespace {

using graph::Graph;
using graph::Value;

const runtime::KernelProvider* onednn_provider() {
  for (const runtime::KernelProvider* p : runtime::registered_kernel_providers())
    if (p->name() == "onednn") return p;
  return nullptr;
}

Tensor random_tensor(const Shape& shape, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = dist(rng);
  return Tensor::from_vector(values, shape);
}

// One input of the node under test: fed at run time, or a constant (an initializer).
struct Operand {
  Tensor value;
  bool constant = false;
};

// Runs `op` once with the reference kernels and once with oneDNN's and compares the outputs
// (float32 sums may be reordered: relative tolerance). `expect_onednn`: oneDNN must take the node.
void compare(const std::string& op, const AttrMap& attrs, const std::vector<Operand>& operands,
             bool expect_onednn = true) {
  const runtime::KernelProvider* provider = onednn_provider();
  ASSERT_NE(provider, nullptr) << "the oneDNN provider is not registered";
  Graph g;
  std::vector<Value*> inputs;
  std::vector<Tensor> feed;
  for (size_t i = 0; i < operands.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    if (!operands[i].value.defined()) {
      inputs.push_back(nullptr);
    } else if (operands[i].constant) {
      inputs.push_back(g.add_initializer(name, operands[i].value));
    } else {
      inputs.push_back(
          g.add_input(name, ops::TensorInfo{operands[i].value.dtype(), operands[i].value.shape()}));
      feed.push_back(operands[i].value);
    }
  }
  g.add_output(g.add_node(op, inputs, attrs, "node")->outputs[0]);
  g.infer_shapes();
  const auto reference_plan = runtime::compile(g);
  const auto fast_plan = runtime::compile(g, {.providers = {provider}});
  ASSERT_EQ(fast_plan->steps.at(0).provider, expect_onednn ? "onednn" : "reference");
  const Tensor want = runtime::Executor(reference_plan).run(feed).at(0);
  const Tensor got = runtime::Executor(fast_plan).run(feed).at(0);
  ASSERT_EQ(got.shape(), want.shape());
  const auto a = got.to_vector<float>(), b = want.to_vector<float>();
  double scale = 1e-6;
  for (float v : b) scale = std::max(scale, static_cast<double>(std::fabs(v)));
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], 1e-5 * scale) << op << " element " << i << " of " << a.size();
}

TEST(OnednnKernels, ConvOverShapesStridesDilationsPadsAndGroups) {
  std::mt19937 rng(3);
  struct Case {
    Shape x, w;
    AttrMap attrs;
    bool bias;
  };
  const std::vector<Case> cases{
      {{1, 3, 7, 9}, {8, 3, 3, 3}, {}, true},
      {{2, 4, 11, 6}, {5, 4, 3, 2}, {{"strides", {2, 1}}, {"pads", {1, 0, 2, 1}}}, true},
      {{1, 6, 9, 9}, {6, 1, 3, 3}, {{"group", 6}, {"pads", {1, 1, 1, 1}}}, true},  // depthwise
      {{1, 8, 8, 7}, {4, 4, 1, 1}, {{"group", 2}}, false},                         // grouped 1x1
      {{1, 2, 13, 13}, {3, 2, 3, 3}, {{"dilations", {2, 3}}, {"auto_pad", "SAME_UPPER"}}, true},
      {{3, 5, 10, 10}, {7, 5, 5, 5}, {{"strides", {3, 3}}, {"auto_pad", "VALID"}}, false},
      {{2, 3, 17}, {4, 3, 4}, {{"strides", {2}}, {"auto_pad", "SAME_LOWER"}}, true},  // 1-D
      {{1, 2, 5, 6, 7}, {3, 2, 2, 3, 2}, {{"pads", {1, 0, 1, 0, 1, 1}}}, true},       // 3-D
      {{1, 33, 5, 5}, {17, 33, 3, 3}, {{"pads", {1, 1, 1, 1}}}, true},                // odd channels
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string());
    std::vector<Operand> operands{{random_tensor(c.x, rng)}, {random_tensor(c.w, rng), true}};
    if (c.bias) operands.push_back({random_tensor({c.w[0]}, rng), false});
    compare("Conv", c.attrs, operands);
  }
}

TEST(OnednnKernels, ConvWithComputedWeightsStaysWithTheReference) {
  std::mt19937 rng(4);
  compare("Conv", {}, {{random_tensor({1, 2, 5, 5}, rng)}, {random_tensor({3, 2, 3, 3}, rng)}},
          /*expect_onednn=*/false);
}

TEST(OnednnKernels, MatMulWithBatchesAndBroadcasting) {
  std::mt19937 rng(5);
  const std::vector<std::pair<Shape, Shape>> cases{
      {{1, 784}, {784, 256}}, {{7, 13}, {13, 5}},        {{2, 3, 4, 6}, {2, 3, 6, 5}},
      {{2, 3, 4, 6}, {6, 5}}, {{5, 1, 4, 6}, {3, 6, 2}}, {{3, 17, 33}, {1, 33, 9}},
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
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.a.to_string() + " x " + c.b.to_string());
    std::vector<Operand> operands{{random_tensor(c.a, rng)}, {random_tensor(c.b, rng), true}};
    if (c.c) operands.push_back({random_tensor(*c.c, rng), true});
    compare("Gemm", c.attrs, operands);
  }
  // beta other than 1 is left to the reference kernel.
  compare("Gemm", {{"beta", 0.5}},
          {{random_tensor({2, 3}, rng)}, {random_tensor({3, 4}, rng), true}, {random_tensor({4}, rng), true}},
          /*expect_onednn=*/false);
}

}  // namespace
}  // namespace kiln::onednn
