// The caching allocator: size classes, reuse, the pool limit and statistics.
#include <gtest/gtest.h>

#include "core/caching_allocator.h"
#include "kiln/error.hpp"

namespace kiln {
namespace {

class CountingRaw final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override {
    ++allocs;
    return ::operator new(bytes);
  }
  void deallocate(void* p, size_t) override {
    ++frees;
    ::operator delete(p);
  }
  int allocs = 0, frees = 0;
};

TEST(CachingAllocator, SizeClassesWasteAtMostAQuarter) {
  EXPECT_EQ(CachingAllocator::size_class(1), 512u);
  EXPECT_EQ(CachingAllocator::size_class(512), 512u);
  EXPECT_EQ(CachingAllocator::size_class(513), 640u);
  EXPECT_EQ(CachingAllocator::size_class(1024), 1024u);
  EXPECT_EQ(CachingAllocator::size_class(1025), 1280u);
  for (size_t n : {1000u, 4097u, 100000u, 12345678u}) {
    const size_t c = CachingAllocator::size_class(n);
    EXPECT_GE(c, n);
    EXPECT_LE(c, n + n / 4 + 1);
  }
}

TEST(CachingAllocator, FreedBlocksAreReused) {
  auto raw = std::make_unique<CountingRaw>();
  CountingRaw* counts = raw.get();
  CachingAllocator alloc(cpu(), std::move(raw), 1 << 20);
  void* a = alloc.allocate(1000);
  alloc.deallocate(a, 1000);
  void* b = alloc.allocate(900);  // the same size class (1024)
  EXPECT_EQ(a, b);
  EXPECT_EQ(counts->allocs, 1);
  const AllocatorStats s = alloc.stats();
  EXPECT_EQ(s.num_allocations, 2u);
  EXPECT_EQ(s.num_pool_hits, 1u);
  EXPECT_EQ(s.bytes_in_use, 1024u);
  alloc.deallocate(b, 900);
  EXPECT_EQ(alloc.stats().bytes_cached, 1024u);
  alloc.release_cached();
  EXPECT_EQ(alloc.stats().bytes_cached, 0u);
  EXPECT_EQ(counts->frees, 1);
}

TEST(CachingAllocator, PoolLimitSendsBlocksBackToTheSystem) {
  auto raw = std::make_unique<CountingRaw>();
  CountingRaw* counts = raw.get();
  CachingAllocator alloc(cpu(), std::move(raw), 2048);
  void* a = alloc.allocate(2048);
  void* b = alloc.allocate(2048);
  alloc.deallocate(a, 2048);  // fits in the pool
  alloc.deallocate(b, 2048);  // would exceed it: freed
  EXPECT_EQ(counts->frees, 1);
  EXPECT_EQ(alloc.stats().bytes_cached, 2048u);
  alloc.set_pool_limit(0);  // pooling off: the cache is dropped
  EXPECT_EQ(alloc.stats().bytes_cached, 0u);
  EXPECT_EQ(counts->frees, 2);
}

TEST(CachingAllocator, PeakTracksTheHighWaterMark) {
  CachingAllocator alloc(cpu(), std::make_unique<CountingRaw>(), 1 << 20);
  void* a = alloc.allocate(4096);
  void* b = alloc.allocate(4096);
  alloc.deallocate(a, 4096);
  EXPECT_EQ(alloc.stats().peak_bytes_in_use, 8192u);
  alloc.reset_peak_stats();
  EXPECT_EQ(alloc.stats().peak_bytes_in_use, 4096u);
  alloc.deallocate(b, 4096);
}

TEST(CachingAllocator, GpuAllocatorNeedsTheCudaBackend) {
  EXPECT_THROW(allocator_for(gpu(0)), Error);
}

}  // namespace
}  // namespace kiln
