// The memory planner on synthetic lifetimes: live buffers never share bytes, chains reuse two
// buffers, in-place takeovers merge buffers, and invalid takeovers are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "kiln/error.hpp"
#include "runtime/memory_planner.h"

namespace kiln::runtime {
namespace {

// Values that are alive at the same step (in-place pairs aside) must not share a byte.
void expect_no_conflicts(const std::vector<TensorLifetime>& lts, const MemoryPlan& plan) {
  ASSERT_EQ(plan.offsets.size(), lts.size());
  for (size_t i = 0; i < lts.size(); ++i) {
    EXPECT_EQ(plan.offsets[i] % kArenaAlignment, 0u) << "value " << i;
    EXPECT_LE(plan.offsets[i] + lts[i].bytes, plan.stats.planned_bytes) << "value " << i;
    for (size_t j = 0; j < i; ++j) {
      if (lts[i].bytes == 0 || lts[j].bytes == 0) continue;
      if (lts[i].reuse == static_cast<int>(j)) continue;  // the takeover itself
      const bool live_together = lts[i].first <= lts[j].last && lts[j].first <= lts[i].last;
      const bool share_bytes = plan.offsets[i] < plan.offsets[j] + lts[j].bytes &&
                               plan.offsets[j] < plan.offsets[i] + lts[i].bytes;
      EXPECT_FALSE(live_together && share_bytes)
          << "values " << j << " [" << lts[j].first << ", " << lts[j].last << "] and " << i << " ["
          << lts[i].first << ", " << lts[i].last << "] are alive together and share bytes";
    }
  }
}

// The most bytes alive at one step: no plan can do better.
size_t lower_bound(const std::vector<TensorLifetime>& lts) {
  int steps = 0;
  for (const auto& lt : lts) steps = std::max(steps, lt.last + 1);
  size_t best = 0;
  for (int s = 0; s < steps; ++s) {
    size_t live = 0;
    for (const auto& lt : lts)
      if (lt.first <= s && s <= lt.last) live += align_arena(lt.bytes);
    best = std::max(best, live);
  }
  return best;
}

TEST(MemoryPlanner, RandomLifetimesNeverShareLiveBytes) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int steps = 1 + static_cast<int>(rng() % 40);
    std::vector<TensorLifetime> lts;
    for (int s = 0; s < steps; ++s) {
      const int outputs = 1 + static_cast<int>(rng() % 2);
      for (int o = 0; o < outputs; ++o) {
        const int last = s + static_cast<int>(rng() % 6);
        lts.push_back({static_cast<size_t>(rng() % 5000), s, std::min(last, steps - 1), -1});
      }
    }
    const MemoryPlan plan = plan_memory(lts);
    expect_no_conflicts(lts, plan);
    EXPECT_LE(plan.stats.planned_bytes, plan.stats.naive_bytes);
    EXPECT_GE(plan.stats.planned_bytes, lower_bound(lts));
    if (HasFailure()) return;
  }
}

TEST(MemoryPlanner, AChainNeedsTwoBuffers) {
  constexpr int kSteps = 50;
  std::vector<TensorLifetime> lts;
  for (int s = 0; s < kSteps; ++s) lts.push_back({1000, s, std::min(s + 1, kSteps - 1), -1});
  const MemoryPlan plan = plan_memory(lts);
  expect_no_conflicts(lts, plan);
  EXPECT_EQ(plan.stats.planned_bytes, 2 * align_arena(1000));
  EXPECT_EQ(plan.stats.naive_bytes, kSteps * align_arena(1000));
  EXPECT_EQ(plan.stats.num_buffers, kSteps);
}

TEST(MemoryPlanner, SmallBuffersFillGapsBetweenLargeOnes) {
  // Two large values alive at different times, and a small one alive across both.
  const std::vector<TensorLifetime> lts = {{4096, 0, 1, -1}, {64, 0, 3, -1}, {4096, 2, 3, -1}};
  const MemoryPlan plan = plan_memory(lts);
  expect_no_conflicts(lts, plan);
  EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
  EXPECT_EQ(plan.stats.planned_bytes, 4096u + 64u);
}

TEST(MemoryPlanner, InPlaceChainUsesOneBuffer) {
  constexpr int kSteps = 10;
  std::vector<TensorLifetime> lts;
  for (int s = 0; s < kSteps; ++s) lts.push_back({256, s, std::min(s + 1, kSteps - 1), s == 0 ? -1 : s - 1});
  const MemoryPlan plan = plan_memory(lts);
  expect_no_conflicts(lts, plan);
  EXPECT_EQ(plan.stats.planned_bytes, 256u);
  EXPECT_EQ(plan.stats.num_buffers, 1);
  EXPECT_EQ(plan.stats.num_inplace, kSteps - 1);
  for (size_t offset : plan.offsets) EXPECT_EQ(offset, 0u);
}

TEST(MemoryPlanner, InPlaceExtendsTheBufferLifetime) {
  // 0 is taken over by 1 at step 1; 1 lives to step 5, so 2 (steps 2..3) may not reuse it.
  const std::vector<TensorLifetime> lts = {{128, 0, 1, -1}, {128, 1, 5, 0}, {128, 2, 3, -1}};
  const MemoryPlan plan = plan_memory(lts);
  expect_no_conflicts(lts, plan);
  EXPECT_EQ(plan.offsets[0], plan.offsets[1]);
  EXPECT_NE(plan.offsets[2], plan.offsets[1]);
  EXPECT_EQ(plan.stats.planned_bytes, 256u);
}

TEST(MemoryPlanner, RefusesInvalidTakeovers) {
  const auto code_of = [](const std::vector<TensorLifetime>& lts) {
    try {
      plan_memory(lts);
    } catch (const Error& e) {
      return e.code();
    }
    return ErrorCode::kRuntime;  // not thrown
  };
  // Value 0 is still read at step 3, after value 1 is written over it at step 1.
  EXPECT_EQ(code_of({{128, 0, 3, -1}, {128, 1, 2, 0}}), ErrorCode::kInternal);
  // Taken over twice at the same step.
  EXPECT_EQ(code_of({{128, 0, 1, -1}, {128, 1, 1, 0}, {128, 1, 2, 0}}), ErrorCode::kInternal);
  // Larger than the buffer it takes over.
  EXPECT_EQ(code_of({{128, 0, 1, -1}, {512, 1, 2, 0}}), ErrorCode::kInternal);
  // A later value.
  EXPECT_EQ(code_of({{128, 0, 1, 1}, {128, 1, 2, -1}}), ErrorCode::kInternal);
}

TEST(MemoryPlanner, WithoutSharingEveryValueHasItsOwnBytes) {
  std::vector<TensorLifetime> lts;
  for (int s = 0; s < 8; ++s) lts.push_back({100, s, s + 1, -1});
  const MemoryPlan plan = plan_memory(lts, /*share=*/false);
  EXPECT_EQ(plan.stats.planned_bytes, plan.stats.naive_bytes);
  EXPECT_EQ(plan.stats.planned_bytes, 8 * align_arena(100));
}

TEST(MemoryPlanner, EmptyAndZeroSizedValues) {
  EXPECT_EQ(plan_memory({}).stats.planned_bytes, 0u);
  const std::vector<TensorLifetime> lts = {{0, 0, 2, -1}, {64, 0, 2, -1}, {0, 1, 1, -1}};
  const MemoryPlan plan = plan_memory(lts);
  expect_no_conflicts(lts, plan);
  EXPECT_EQ(plan.stats.planned_bytes, 64u);
}

}  // namespace
}  // namespace kiln::runtime
