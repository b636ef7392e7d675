// SmallVector (inline storage for the engine's variable lists) against std::vector doing the same
// operations across the switch between inline and heap storage, and ObjectCache's reuse.
#include <memory>
#include <random>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "core/object_cache.h"
#include "core/small_vector.h"

namespace kiln {
namespace {

using List = SmallVector<std::shared_ptr<int>, 3>;

void expect_same(const List& list, const std::vector<std::shared_ptr<int>>& reference) {
  ASSERT_EQ(list.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(list[i], reference[i]) << "element " << i;
}

TEST(SmallVector, FollowsAVectorThroughPushesPopsCopiesAndMoves) {
  std::mt19937 rng(11);
  List list;
  std::vector<std::shared_ptr<int>> reference;
  for (int step = 0; step < 3000; ++step) {
    const int action = static_cast<int>(rng() % 6);
    if (action <= 2) {
      auto value = std::make_shared<int>(step);
      list.push_back(value);
      reference.push_back(value);
    } else if (action == 3 && !reference.empty()) {
      list.pop_back();
      reference.pop_back();
    } else if (action == 4) {
      const size_t keep = reference.empty() ? 0 : rng() % (reference.size() + 1);
      list.truncate(keep);
      reference.resize(keep);
    } else {
      List copy = list;
      List moved = std::move(copy);
      EXPECT_TRUE(copy.empty());
      list = std::move(moved);
    }
    expect_same(list, reference);
  }
}

TEST(SmallVector, ReleasesWhatItDropsAndKeepsValuesAcrossTheInlineLimit) {
  auto held = std::make_shared<int>(5);
  List list{held, held, held, held};  // one past the inline capacity: on the heap
  EXPECT_EQ(held.use_count(), 5);
  list.pop_back();  // back inline
  EXPECT_EQ(held.use_count(), 4);
  EXPECT_EQ(*list[2], 5);
  list.truncate(1);
  EXPECT_EQ(held.use_count(), 2);
  list.clear();
  EXPECT_EQ(held.use_count(), 1);
}

struct Counted {
  Counted() { ++alive; }
  ~Counted() { --alive; }
  static inline int alive = 0;
};

TEST(ObjectCache, ReusesReleasedObjectsOnTheSameThreadAndFreesTheRestAtThreadExit) {
  std::thread([] {
    Counted* first = ObjectCache<Counted>::acquire();
    ObjectCache<Counted>::release(first);
    EXPECT_EQ(ObjectCache<Counted>::acquire(), first);  // the cached object, not a new one
    std::vector<Counted*> many;
    for (size_t i = 0; i < ObjectCache<Counted>::kMaxCached + 10; ++i)
      many.push_back(ObjectCache<Counted>::acquire());
    for (Counted* c : many) ObjectCache<Counted>::release(c);
    ObjectCache<Counted>::release(first);
    EXPECT_EQ(Counted::alive, static_cast<int>(ObjectCache<Counted>::kMaxCached));  // the excess was deleted
  }).join();
  EXPECT_EQ(Counted::alive, 0);  // the thread's cache was freed when it ended
}

}  // namespace
}  // namespace kiln
