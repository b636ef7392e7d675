// Size-class pooling allocator. Requests are rounded up to a size class (quarter steps between
// powers of two, so at most 25% is wasted); freed blocks wait in a free list for their class.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "kiln/allocator.hpp"

namespace kiln {

// Where memory really comes from (aligned host memory, cudaMalloc, ...).
class RawAllocator {
 public:
  virtual ~RawAllocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void deallocate(void* ptr, size_t bytes) = 0;
};

class CachingAllocator {
 public:
  static constexpr size_t kAlignment = 64;  // one cache line; enough for AVX-512 loads

  CachingAllocator(Device device, std::unique_ptr<RawAllocator> raw, size_t pool_limit);
  ~CachingAllocator();
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Returns a block of at least `bytes` bytes; pair it with deallocate(ptr, bytes).
  void* allocate(size_t bytes);
  void deallocate(void* ptr, size_t bytes);

  AllocatorStats stats() const;
  void release_cached();
  void set_pool_limit(size_t bytes);
  size_t pool_limit() const;
  void reset_peak_stats();
  Device device() const { return device_; }

  static size_t size_class(size_t bytes);

 private:
  void release_cached_locked();

  Device device_;
  std::unique_ptr<RawAllocator> raw_;
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // size class -> cached blocks
  size_t pool_limit_;
  AllocatorStats stats_;
};

// The process-wide allocator of a device, created on first use.
CachingAllocator& allocator_for(Device device);

}  // namespace kiln
