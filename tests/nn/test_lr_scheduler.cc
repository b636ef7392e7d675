// Learning-rate schedules against their closed forms (MXNet's mx.lr_scheduler, values worked out
// here by hand), warm-up composed with each, and bad arguments.
#include <cmath>
#include <numbers>

#include <gtest/gtest.h>

#include "kiln/nn/lr_scheduler.hpp"
#include "test_support.h"

namespace kiln::testing {
namespace {

using nn::CosineScheduler;
using nn::FactorScheduler;
using nn::MultiFactorScheduler;
using nn::PolyScheduler;
using nn::Warmup;
using nn::WarmupMode;

TEST(LRScheduler, FactorDecaysEveryStepUpdates) {
  const FactorScheduler s(3, 0.5, 1e-8, 1.0);
  // Updates 1-3 at 1, 4-6 at 0.5, 7-9 at 0.25 (MXNet: decay once num_update > count + step).
  const double expected[] = {1, 1, 1, 1, 0.5, 0.5, 0.5, 0.25, 0.25, 0.25, 0.125};
  for (int n = 0; n <= 10; ++n) EXPECT_DOUBLE_EQ(s(n), expected[n]) << "num_update " << n;
}

TEST(LRScheduler, FactorStopsAtStopFactorLr) {
  const FactorScheduler s(1, 0.1, 1e-3, 1.0);
  EXPECT_DOUBLE_EQ(s(2), 0.1);
  EXPECT_DOUBLE_EQ(s(3), 0.01);
  EXPECT_NEAR(s(4), 1e-3, 1e-18);
  EXPECT_DOUBLE_EQ(s(100), 1e-3);
}

TEST(LRScheduler, SchedulesDoNotDependOnCallOrder) {
  const FactorScheduler s(2, 0.5, 1e-8, 1.0);
  EXPECT_DOUBLE_EQ(s(9), 0.0625);
  EXPECT_DOUBLE_EQ(s(1), 1.0);  // MXNet's stateful schedule would still say 0.0625
}

TEST(LRScheduler, MultiFactorDecaysAfterEachStep) {
  const MultiFactorScheduler s({2, 5, 6}, 0.1, 1.0);
  const double expected[] = {1, 1, 1, 0.1, 0.1, 0.1, 0.01, 0.001, 0.001};
  for (int n = 0; n <= 8; ++n) EXPECT_NEAR(s(n), expected[n], 1e-15) << "num_update " << n;
}

TEST(LRScheduler, CosineFromBaseToFinal) {
  const CosineScheduler s(10, 1.0, 0.1);
  EXPECT_DOUBLE_EQ(s(0), 1.0);
  EXPECT_NEAR(s(5), 0.55, 1e-15);  // halfway: the mean
  EXPECT_NEAR(s(3), 0.1 + 0.9 * (1 + std::cos(std::numbers::pi * 0.3)) / 2, 1e-15);
  EXPECT_NEAR(s(10), 0.1, 1e-15);
  EXPECT_DOUBLE_EQ(s(11), 0.1);
}

TEST(LRScheduler, PolyFromBaseToFinal) {
  const PolyScheduler s(10, 1.0, 2, 0.0);
  EXPECT_DOUBLE_EQ(s(0), 1.0);
  EXPECT_NEAR(s(4), 0.36, 1e-15);  // (1 - 0.4)^2
  EXPECT_DOUBLE_EQ(s(10), 0.0);
  EXPECT_DOUBLE_EQ(s(20), 0.0);
}

TEST(LRScheduler, LinearWarmupThenSchedule) {
  const Warmup warmup{4, 0.2, WarmupMode::kLinear};
  const FactorScheduler factor(10, 0.5, 1e-8, 1.0, warmup);
  const double expected[] = {0.2, 0.4, 0.6, 0.8};
  for (int n = 0; n < 4; ++n) EXPECT_NEAR(factor(n), expected[n], 1e-15) << "num_update " << n;
  EXPECT_DOUBLE_EQ(factor(4), 1.0);
  EXPECT_DOUBLE_EQ(factor(11), 0.5);

  // The cosine decay starts where the warm-up ends and spans max_update - warm-up steps.
  const CosineScheduler cosine(12, 1.0, 0.0, warmup);
  EXPECT_NEAR(cosine(2), 0.6, 1e-15);
  EXPECT_DOUBLE_EQ(cosine(4), 1.0);
  EXPECT_NEAR(cosine(8), 0.5, 1e-15);
  EXPECT_NEAR(cosine(12), 0.0, 1e-15);

  const MultiFactorScheduler multi({6}, 0.1, 1.0, warmup);
  EXPECT_NEAR(multi(1), 0.4, 1e-15);
  EXPECT_DOUBLE_EQ(multi(6), 1.0);
  EXPECT_NEAR(multi(7), 0.1, 1e-15);
}

TEST(LRScheduler, ConstantWarmup) {
  const PolyScheduler s(10, 1.0, 1, 0.0, Warmup{3, 0.05, WarmupMode::kConstant});
  EXPECT_DOUBLE_EQ(s(0), 0.05);
  EXPECT_DOUBLE_EQ(s(2), 0.05);
  EXPECT_DOUBLE_EQ(s(3), 1.0);
  EXPECT_NEAR(s(10), 0.0, 1e-15);
}

TEST(LRScheduler, BadArguments) {
  expect_error([] { FactorScheduler(0); }, ErrorCode::kInvalidArgument, {"FactorScheduler", "step"});
  expect_error([] { FactorScheduler(2, 1.5); }, ErrorCode::kInvalidArgument, {"factor", "1.5"});
  expect_error([] { MultiFactorScheduler({}); }, ErrorCode::kInvalidArgument, {"at least one step"});
  expect_error(
      [] {
        MultiFactorScheduler({3, 3});
      },
      ErrorCode::kInvalidArgument, {"steps must increase", "step 1"});
  expect_error([] { CosineScheduler(0); }, ErrorCode::kInvalidArgument, {"max_update"});
  expect_error(
      [] {
        CosineScheduler(5, 1.0, 0.0, Warmup{5, 0.0});
      },
      ErrorCode::kInvalidArgument, {"max_update (5)", "warm-up steps (5)"});
  expect_error(
      [] {
        FactorScheduler(2, 0.5, 1e-8, 0.1, Warmup{3, 0.5});
      },
      ErrorCode::kInvalidArgument, {"begin_lr", "0.5"});
  expect_error([] { FactorScheduler(2, 0.5, 1e-8, -0.1); }, ErrorCode::kInvalidArgument, {"base_lr"});
  expect_error([] { PolyScheduler(10, 1.0, 0); }, ErrorCode::kInvalidArgument, {"power"});
}

}  // namespace
}  // namespace kiln::testing
