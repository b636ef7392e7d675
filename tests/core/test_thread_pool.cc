// The compute pool: coverage of the range, exceptions, nesting and resizing.
#include <atomic>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "kiln/error.hpp"
#include "kiln/threading.hpp"

namespace kiln {
namespace {

TEST(ThreadPool, EveryIndexIsVisitedOnce) {
  std::vector<std::atomic<int>> hits(100003);
  parallel_for(0, static_cast<int64_t>(hits.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  EXPECT_THROW(parallel_for(0, 1 << 20, 1024,
                            [](int64_t b, int64_t) {
                              if (b > 0) throw std::runtime_error("chunk failed");
                            }),
               std::runtime_error);
  // The pool still works afterwards.
  std::atomic<int64_t> sum{0};
  parallel_for(0, 1 << 16, 1024, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 1 << 16);
}

TEST(ThreadPool, NestedRegionsRunSeriallyInsteadOfDeadlocking) {
  std::atomic<int64_t> count{0};
  parallel_for(0, 64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallel_for(0, 1000, 10, [&](int64_t ib, int64_t ie) { count += ie - ib; });
  });
  EXPECT_EQ(count.load(), 64 * 1000);
}

TEST(ThreadPool, ResizingKeepsWorking) {
  const int original = num_threads();
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  std::atomic<int64_t> sum{0};
  parallel_for(0, 100000, 100, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 100000);
  set_num_threads(original);
  EXPECT_THROW(set_num_threads(0), Error);
}

}  // namespace
}  // namespace kiln
