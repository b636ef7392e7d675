// engine::Work, the move-only callable of a push: small callables inline, large ones on the heap,
// captured objects destroyed exactly once whether the work ran or not.
#include <array>
#include <memory>
#include <utility>

#include <gtest/gtest.h>

#include "engine/work.h"

namespace kiln::engine {
namespace {

TEST(Work, RunsSmallAndLargeCallablesAfterMoves) {
  int calls = 0;
  Work small([&calls] { ++calls; });
  std::array<int, 16> big{};
  big[15] = 40;
  Work large([&calls, big] { calls += big[15]; });
  Work moved_small = std::move(small);
  Work moved_large = std::move(large);
  EXPECT_FALSE(small);
  EXPECT_FALSE(large);
  moved_small();
  moved_large();
  EXPECT_EQ(calls, 41);
}

TEST(Work, DestroysWhatItCapturedOnceWhenResetOrReplaced) {
  auto token = std::make_shared<int>(1);
  {
    Work work([held = std::unique_ptr<std::shared_ptr<int>>(new std::shared_ptr<int>(token))] { ++**held; });
    EXPECT_EQ(token.use_count(), 2);
    Work other = std::move(work);
    EXPECT_EQ(token.use_count(), 2);
    other();
    EXPECT_EQ(*token, 2);
    other.reset();
    EXPECT_EQ(token.use_count(), 1);
    other = Work([token] {});
    EXPECT_EQ(token.use_count(), 2);
  }
  EXPECT_EQ(token.use_count(), 1);
}

}  // namespace
}  // namespace kiln::engine
