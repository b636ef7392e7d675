// oneDNN's eltwise kernels (activations and unary math) against the reference kernels, on values
// that include negatives, zeros and large magnitudes (where exponentials overflow and logs and
// square roots of negatives give NaN), in float32, bfloat16 and float16, and run in place.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

// Special values followed by random ones in [-4, 4), as a (331, 13) tensor of `dtype`: above the
// size below which the reference kernels keep these ops, and not a multiple of a vector's width.
Tensor test_values(std::mt19937& rng, DType dtype = DType::kFloat32) {
  std::vector<float> values{-1e4f, -100.f, -88.f, -30.f, -10.f, -3.f, -1e-3f, -0.f,  0.f,
                            1e-3f, 0.5f,   3.f,   10.f,  30.f,  88.f, 89.f,   100.f, 1e4f};
  std::uniform_real_distribution<float> dist(-4.f, 4.f);
  while (values.size() < 331 * 13) values.push_back(dist(rng));
  const Tensor t = Tensor::from_vector(values, {static_cast<int64_t>(values.size() / 13), 13});
  return dtype == DType::kFloat32 ? t : t.cast(dtype);
}

struct UnaryCase {
  std::string op;
  AttrMap attrs;
};

const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases{
      {"Relu", {}},
      {"LeakyRelu", {}},
      {"LeakyRelu", {{"alpha", 0.3}}},
      {"Elu", {}},
      {"Elu", {{"alpha", 0.7}}},
      {"Selu", {}},
      {"Selu", {{"alpha", 1.5}, {"gamma", 2.0}}},
      {"Sigmoid", {}},
      {"Tanh", {}},
      {"Gelu", {}},
      {"Gelu", {{"approximate", "tanh"}}},
      {"HardSigmoid", {}},
      {"HardSigmoid", {{"alpha", 0.4}, {"beta", 0.25}}},
      {"HardSwish", {}},
      {"Mish", {}},
      {"Exp", {}},
      {"Log", {}},
      {"Sqrt", {}},
      {"Abs", {}},
  };
  return cases;
}

TEST(OnednnEltwise, Float32MatchesTheReferenceOnNegativesZerosAndLargeValues) {
  std::mt19937 rng(11);
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.op);
    compare(c.op, c.attrs, {{test_values(rng)}}, CompareOptions{.tolerance = 1e-5, .per_element = true});
  }
}

TEST(OnednnEltwise, BFloat16WithALooserTolerance) {
  std::mt19937 rng(12);
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.op);
    compare(
        c.op, c.attrs, {{test_values(rng, DType::kBFloat16)}},
        CompareOptions{.provider = provider_for(DType::kBFloat16), .tolerance = 1e-2, .per_element = true});
  }
}

TEST(OnednnEltwise, Float16WhereTheCpuComputesIt) {
  std::mt19937 rng(13);
  const std::string provider = provider_for(DType::kFloat16);
  for (const UnaryCase& c : unary_cases()) {
    SCOPED_TRACE(c.op);
    compare(c.op, c.attrs, {{test_values(rng, DType::kFloat16)}},
            CompareOptions{.provider = provider, .tolerance = 2e-3, .per_element = true});
  }
}

TEST(OnednnEltwise, ClipWithConstantBounds) {
  std::mt19937 rng(14);
  const Tensor x = test_values(rng);
  auto scalar = [](float v) { return Operand{Tensor::from_vector(std::vector<float>{v}, Shape{}), true}; };
  const auto options = CompareOptions{.tolerance = 0, .per_element = true};
  compare("Clip", {}, {{x}, scalar(-0.5f), scalar(2.f)}, options);
  compare("Clip", {}, {{x}, scalar(-3.f)}, options);               // no max
  compare("Clip", {}, {{x}, Operand{}, scalar(1.f)}, options);     // no min
  compare("Clip", {}, {{x}}, options);                             // neither
  compare("Clip", {}, {{x}, scalar(2.f), scalar(-1.f)}, options);  // min > max: all max
  compare("Clip", {}, {{x}, {Tensor::from_vector(std::vector<float>{0.25f}, {1}), true}}, options);
}

TEST(OnednnEltwise, WhatOneDnnDoesNotCoverStaysWithTheReference) {
  std::mt19937 rng(15);
  const Tensor x = test_values(rng);
  // A bound computed at run time.
  compare("Clip", {}, {{x}, {Tensor::from_vector(std::vector<float>{0.f}, Shape{}), false}}, false);
  // Integers: oneDNN would compute them in float and saturate.
  std::vector<int32_t> integers(5000, -5);
  integers[1] = (1 << 30) + 1;
  compare("Relu", {}, {{Tensor::from_vector(integers, {5000})}}, false);
  // Softplus: oneDNN's soft_relu is 1% off on the tiny results of x < -8 (ONNX's test_mish_expanded).
  compare("Softplus", {}, {{x}}, false);
  // Small tensors, where a oneDNN call costs more than the reference kernel, and empty ones.
  compare("Sigmoid", {}, {{random_tensor({11, 13}, rng)}}, false);
  compare("Relu", {}, {{Tensor::zeros({0, 3}, DType::kFloat32)}}, false);
}

// x -> Neg -> op -> Neg: the executor gives op's output the buffer of its input (op is its last
// reader), and the result is still the reference's.
TEST(OnednnEltwise, RunsInPlace) {
  std::mt19937 rng(16);
  const Tensor x = test_values(rng);
  for (const char* op : {"Sigmoid", "Gelu", "Exp"}) {
    SCOPED_TRACE(op);
    graph::Graph g;
    graph::Value* in = g.add_input("x", ops::TensorInfo{x.dtype(), x.shape()});
    graph::Value* negated = g.add_node("Neg", {in})->outputs[0];
    graph::Value* activated = g.add_node(op, {negated}, {}, "under_test")->outputs[0];
    g.add_output(g.add_node("Neg", {activated})->outputs[0]);
    g.infer_shapes();
    const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
    ASSERT_EQ(fast->steps.at(1).provider, "onednn");
    const runtime::PlanValue& step_in = fast->values.at(static_cast<size_t>(fast->steps[1].inputs[0]));
    const runtime::PlanValue& step_out = fast->values.at(static_cast<size_t>(fast->steps[1].outputs[0]));
    ASSERT_EQ(step_in.kind, runtime::PlanValue::Kind::kArena);
    ASSERT_EQ(step_out.kind, runtime::PlanValue::Kind::kArena);
    ASSERT_EQ(step_in.offset, step_out.offset) << "the plan does not run the op in place";
    const auto got = runtime::Executor(fast).run({x}).at(0).to_vector<float>();
    const auto want = runtime::Executor(runtime::compile(g)).run({x}).at(0).to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << i;
      } else if (std::isinf(want[i])) {
        EXPECT_EQ(got[i], want[i]) << i;
      } else {
        EXPECT_NEAR(got[i], want[i], 2e-6 * (1 + std::fabs(want[i]))) << i;
      }
    }
  }
}

}  // namespace
}  // namespace kiln::onednn
