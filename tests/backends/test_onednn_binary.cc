// oneDNN's binary kernels against the reference kernels: the six arithmetic ops with equal
// shapes and with either input broadcast (the first one by swapping the sources), Pow with a
// constant exponent, bfloat16 and float16, the cases left to the reference kernel (small tensors
// among them), and in-place runs over either input. Sizes are odd and above the ones below which
// the reference kernels keep these ops.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

const std::vector<std::string> kOps{"Add", "Sub", "Mul", "Div", "Max", "Min"};

// Values away from zero, so that Div stays well conditioned, of either sign.
Tensor signed_values(const Shape& shape, std::mt19937& rng, DType dtype = DType::kFloat32) {
  Tensor t = random_tensor(shape, rng, 0.5f, 4.f);
  std::vector<float> v = t.to_vector<float>();
  std::bernoulli_distribution negative(0.5);
  for (float& x : v) x = negative(rng) ? -x : x;
  const Tensor signed_t = Tensor::from_vector(v, shape);
  return dtype == DType::kFloat32 ? signed_t : signed_t.cast(dtype);
}

TEST(OnednnBinary, EqualShapesAndBroadcastSecondInput) {
  std::mt19937 rng(21);
  // Unit axes dropped and alike neighbours merged, each of these is one oneDNN covers with its
  // fast kernels (no broadcast, a scalar, per channel, per row).
  const std::vector<std::pair<Shape, Shape>> cases{
      {{512, 513}, {512, 513}},  {{2, 5, 37, 23}, {5, 1, 1}},
      {{2, 5, 37, 23}, {23}},    {{97, 89}, {}},
      {{97, 1, 89}, {97, 1, 1}}, {{8209}, {1}},
      {{2, 1, 4111}, {1, 1}},    {{3, 4, 5, 11, 13}, {1, 4, 1, 1, 1}},
  };
  for (const std::string& op : kOps) {
    for (const auto& [a, b] : cases) {
      SCOPED_TRACE(op + " " + a.to_string() + " with " + b.to_string());
      compare(op, {}, {{signed_values(a, rng)}, {signed_values(b, rng)}}, CompareOptions{.tolerance = 1e-6});
      compare(op, {}, {{signed_values(a, rng)}, {signed_values(b, rng), true}},
              CompareOptions{.tolerance = 1e-6});
    }
  }
}

TEST(OnednnBinary, BroadcastFirstInputSwapsTheSources) {
  std::mt19937 rng(22);
  const std::vector<std::pair<Shape, Shape>> cases{
      {{5, 1, 1}, {2, 5, 37, 23}}, {{}, {97, 89}}, {{1, 89}, {97, 89}}};
  for (const std::string& op : kOps) {
    for (const auto& [a, b] : cases) {
      SCOPED_TRACE(op + " " + a.to_string() + " with " + b.to_string());
      // Div cannot swap its sources exactly.
      const bool swappable = op != "Div";
      compare(op, {}, {{signed_values(a, rng)}, {signed_values(b, rng)}},
              CompareOptions{.provider = swappable ? "onednn" : "reference", .tolerance = 0});
    }
  }
}

TEST(OnednnBinary, WhatOneDnnDoesNotCoverStaysWithTheReference) {
  std::mt19937 rng(23);
  // Both inputs broadcast.
  compare("Add", {}, {{signed_values({97, 1}, rng)}, {signed_values({1, 89}, rng)}}, false);
  // Broadcast axes between kept ones: only oneDNN's generic (slow) implementation takes them.
  compare("Mul", {}, {{signed_values({8, 3, 20, 21}, rng)}, {signed_values({1, 3, 1, 21}, rng)}}, false);
  compare("Sub", {}, {{signed_values({2, 3, 4, 25, 21}, rng)}, {signed_values({4, 1, 21}, rng)}}, false);
  // Three inputs to Max: the variadic form.
  compare("Max", {},
          {{signed_values({97, 89}, rng)}, {signed_values({97, 89}, rng)}, {signed_values({89}, rng)}},
          false);
  // Small tensors, where a oneDNN call costs more than the reference kernel: with broadcasting,
  // and in float32 without (where the reference kernel keeps up with oneDNN until much larger).
  compare("Add", {}, {{signed_values({3, 17}, rng)}, {signed_values({17}, rng)}}, false);
  compare("Add", {}, {{signed_values({97, 89}, rng)}, {signed_values({97, 89}, rng)}}, false);
  // Integers: oneDNN would compute in float.
  const std::vector<int32_t> big(10000, (1 << 30) + 1), small(10000, 3);
  compare("Add", {}, {{Tensor::from_vector(big, {10000})}, {Tensor::from_vector(small, {10000})}}, false);
}

TEST(OnednnBinary, LowPrecisionTypes) {
  std::mt19937 rng(24);
  const std::string f16 = provider_for(DType::kFloat16), bf16 = provider_for(DType::kBFloat16);
  for (const std::string& op : kOps) {
    SCOPED_TRACE(op);
    compare(op, {},
            {{signed_values({8, 25, 41}, rng, DType::kBFloat16)},
             {signed_values({25, 1}, rng, DType::kBFloat16)}},
            CompareOptions{.provider = bf16, .tolerance = 1e-2});
    compare(
        op, {},
        {{signed_values({8, 25, 41}, rng, DType::kFloat16)}, {signed_values({25, 1}, rng, DType::kFloat16)}},
        CompareOptions{.provider = f16, .tolerance = 2e-3});
  }
}

TEST(OnednnBinary, PowWithAConstantExponent) {
  std::mt19937 rng(25);
  const Tensor x = signed_values({97, 89}, rng);
  for (float y : {2.f, 3.f, 0.5f, -1.f, -2.5f, 0.f, 1.f}) {
    SCOPED_TRACE(y);
    const Tensor exponent = Tensor::from_vector(std::vector<float>{y}, Shape{});
    compare("Pow", {}, {{x}, {exponent, true}}, CompareOptions{.tolerance = 1e-5, .per_element = true});
  }
  // An exponent fed at run time, or one that widens the output's rank.
  compare("Pow", {}, {{x}, {Tensor::from_vector(std::vector<float>{2.f}, Shape{}), false}}, false);
  compare("Pow", {}, {{x}, {Tensor::from_vector(std::vector<float>{2.f}, {1, 1, 1}), true}}, false);
}

// C = op(Neg(a), Neg(b)): the planner gives C the buffer of an input it is the last reader of.
// Reading Neg(a) again after C keeps that buffer alive, so C takes Neg(b)'s: oneDNN's second
// source. (Max and Min are variadic, never run in place.)
TEST(OnednnBinary, InPlaceOverEitherInput) {
  std::mt19937 rng(26);
  const Tensor a = signed_values({512, 513}, rng), b = signed_values({512, 513}, rng);
  for (const std::string op : {"Add", "Sub", "Mul", "Div"}) {
    for (bool over_second : {false, true}) {
      SCOPED_TRACE(op + (over_second ? " over its second input" : " over its first input"));
      graph::Graph g;
      graph::Value* va = g.add_input("a", ops::TensorInfo{a.dtype(), a.shape()});
      graph::Value* vb = g.add_input("b", ops::TensorInfo{b.dtype(), b.shape()});
      graph::Value* na = g.add_node("Neg", {va})->outputs[0];
      graph::Value* nb = g.add_node("Neg", {vb})->outputs[0];
      graph::Value* c = g.add_node(op, {na, nb}, {}, "under_test")->outputs[0];
      g.add_output(g.add_node("Add", {c, over_second ? na : c})->outputs[0]);
      g.infer_shapes();
      const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
      const runtime::PlanStep& step = fast->steps.at(2);
      ASSERT_EQ(step.provider, "onednn");
      const size_t shared = fast->values.at(static_cast<size_t>(step.inputs[over_second ? 1 : 0])).offset;
      ASSERT_EQ(fast->values.at(static_cast<size_t>(step.outputs[0])).offset, shared) << "not in place";
      const auto got = runtime::Executor(fast).run({a, b}).at(0).to_vector<float>();
      const auto want = runtime::Executor(runtime::compile(g)).run({a, b}).at(0).to_vector<float>();
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-6 * (1 + std::fabs(want[i]))) << i;
    }
  }
}

}  // namespace
}  // namespace kiln::onednn
