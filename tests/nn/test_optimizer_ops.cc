// The update ops' own checks (their values are checked by tests/ops/cases/optimizer_update.py):
// every input of the weight's shape, states of the right dtype, the master copy only for 16-bit
// weights, and one output per written array.
#include <gtest/gtest.h>

#include "kiln/ndarray.hpp"
#include "test_support.h"

namespace kiln::testing {
namespace {

TEST(UpdateOps, InputsMustFitTheWeight) {
  const NDArray w = nd::ones(Shape{2, 3}), g = nd::ones(Shape{2, 3});
  const NDArray mean = nd::zeros(Shape{2, 3}), var = nd::zeros(Shape{3, 2});
  expect_error(
      [&] {
        nd::invoke_into("AdamUpdate", {w, g, mean, var}, {w, mean, var}, {{"lr", 0.1}});
      },
      ErrorCode::kShapeMismatch, {"AdamUpdate", "input 3 (var)", "(2, 3)", "(3, 2)"});
  const NDArray mom64 = nd::zeros(Shape{2, 3}, DType::kFloat64);
  expect_error(
      [&] {
        nd::invoke_into("SGDMomUpdate", {w, g, mom64}, {w, mom64}, {{"lr", 0.1}});
      },
      ErrorCode::kTypeMismatch, {"input 2 (mom)", "float32", "float64"});
  const NDArray g64 = nd::ones(Shape{2, 3}, DType::kFloat64);
  expect_error(
      [&] {
        nd::invoke_into("SGDUpdate", {w, g64}, {w}, {{"lr", 0.1}});
      },
      ErrorCode::kTypeMismatch, {"input 1 (grad)"});
  const NDArray wi = nd::ones(Shape{2}, DType::kInt32);
  expect_error(
      [&] {
        nd::invoke_into("SGDUpdate", {wi, wi}, {wi}, {{"lr", 0.1}});
      },
      ErrorCode::kTypeMismatch, {"input 0 (weight)", "int32"});
}

TEST(UpdateOps, MasterCopyIsForSixteenBitWeights) {
  const NDArray w = nd::ones(Shape{4}), g = nd::ones(Shape{4}), w32 = nd::ones(Shape{4});
  expect_error(
      [&] {
        nd::invoke_into("SGDUpdate", {w, g, w32}, {w, w32}, {{"lr", 0.1}});
      },
      ErrorCode::kTypeMismatch, {"input 2 (weight32)", "float16 or bfloat16"});
  const NDArray h = nd::ones(Shape{4}, DType::kFloat16), gh = nd::ones(Shape{4}, DType::kFloat16);
  const NDArray mom16 = nd::zeros(Shape{4}, DType::kFloat16);
  expect_error(
      [&] {
        nd::invoke_into("SGDMomUpdate", {h, gh, mom16, w32}, {h, mom16, w32}, {{"lr", 0.1}});
      },
      ErrorCode::kTypeMismatch, {"input 2 (mom)", "float32 with a float32 master weight"});
}

TEST(UpdateOps, EveryStateIsWrittenBack) {
  const NDArray w = nd::ones(Shape{4}), g = nd::ones(Shape{4}), mom = nd::zeros(Shape{4});
  expect_error(
      [&] {
        nd::invoke_into("SGDMomUpdate", {w, g, mom}, {w}, {{"lr", 0.1}});
      },
      ErrorCode::kInvalidArgument, {"expected 2 outputs", "its states", "got 1"});
  expect_error(
      [&] {
        nd::invoke_into("SGDMomUpdate", {w, g, mom}, {w, mom}, {});
      },
      ErrorCode::kInvalidArgument, {"required attribute 'lr'"});
  expect_error(
      [&] {
        nd::invoke_into("AdamUpdate", {w, g, mom, mom}, {w, mom, mom}, {{"lr", 0.1}, {"beta1", 1.0}});
      },
      ErrorCode::kInvalidArgument, {"beta1", "[0, 1)"});
}

TEST(UpdateOps, RunInPlace) {
  // The outputs are written into the input arrays, as sgd_mom_update(..., out=weight) in MXNet.
  const NDArray w = nd::ones(Shape{3}), g = nd::full(Shape{3}, 2), mom = nd::full(Shape{3}, 0.25);
  nd::invoke_into("SGDMomUpdate", {w, g, mom}, {w, mom}, {{"lr", 0.5}, {"momentum", 0.9}});
  // mom = 0.9 * 0.25 - 0.5 * 2 = -0.775; w = 1 + mom.
  for (float m : mom.to_vector<float>()) EXPECT_FLOAT_EQ(m, -0.775f);
  for (float v : w.to_vector<float>()) EXPECT_FLOAT_EQ(v, 0.225f);
}

}  // namespace
}  // namespace kiln::testing
