#include "caching_allocator.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/environment.h"
#include "kiln/error.hpp"

namespace kiln {

namespace {

class HostRawAllocator final : public RawAllocator {
 public:
  void* allocate(size_t bytes) override {
    void* p = std::aligned_alloc(CachingAllocator::kAlignment, bytes);
    KILN_CHECK(p != nullptr, ErrorCode::kRuntime, "cpu allocator: out of memory allocating ", bytes,
               " bytes");
    return p;
  }
  void deallocate(void* ptr, size_t) override { std::free(ptr); }
};

size_t default_pool_limit() {
  if (const auto mb = env::pool_limit_mb()) return static_cast<size_t>(*mb) << 20;
  return size_t{1} << 30;
}

}  // namespace

CachingAllocator::CachingAllocator(Device device, std::unique_ptr<RawAllocator> raw, size_t pool_limit)
    : device_(device), raw_(std::move(raw)), pool_limit_(pool_limit) {}

CachingAllocator::~CachingAllocator() {
  release_cached_locked();
}

size_t CachingAllocator::size_class(size_t bytes) {
  constexpr size_t kMinimum = 512;
  if (bytes <= kMinimum) return kMinimum;
  // Quarter steps between powers of two: 2^k, 1.25*2^k, 1.5*2^k, 1.75*2^k.
  size_t power = kMinimum;
  while (power * 2 < bytes) power *= 2;
  const size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(size_t bytes) {
  const size_t cls = size_class(bytes);
  std::unique_lock<std::mutex> lock(mutex_);
  ++stats_.num_allocations;
  stats_.bytes_in_use += cls;
  stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
  auto it = free_blocks_.find(cls);
  if (it != free_blocks_.end() && !it->second.empty()) {
    void* p = it->second.back();
    it->second.pop_back();
    stats_.bytes_cached -= cls;
    ++stats_.num_pool_hits;
    return p;
  }
  ++stats_.num_system_allocations;
  lock.unlock();
  try {
    return raw_->allocate(cls);
  } catch (...) {
    // The system is out of memory: give back what the pool holds and try once more.
    lock.lock();
    release_cached_locked();
    lock.unlock();
    try {
      return raw_->allocate(cls);
    } catch (...) {
      lock.lock();
      stats_.bytes_in_use -= cls;
      throw;
    }
  }
}

void CachingAllocator::deallocate(void* ptr, size_t bytes) {
  if (!ptr) return;
  const size_t cls = size_class(bytes);
  std::unique_lock<std::mutex> lock(mutex_);
  stats_.bytes_in_use -= cls;
  if (stats_.bytes_cached + cls <= pool_limit_) {
    free_blocks_[cls].push_back(ptr);
    stats_.bytes_cached += cls;
    return;
  }
  ++stats_.num_system_frees;
  lock.unlock();
  raw_->deallocate(ptr, cls);
}

AllocatorStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (auto& [cls, blocks] : free_blocks_) {
    for (void* p : blocks) raw_->deallocate(p, cls);
    stats_.num_system_frees += blocks.size();
  }
  free_blocks_.clear();
  stats_.bytes_cached = 0;
}

void CachingAllocator::set_pool_limit(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  pool_limit_ = bytes;
  if (stats_.bytes_cached > pool_limit_) release_cached_locked();
}

size_t CachingAllocator::pool_limit() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pool_limit_;
}

void CachingAllocator::reset_peak_stats() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak_bytes_in_use = stats_.bytes_in_use;
}

CachingAllocator& allocator_for(Device device) {
  KILN_CHECK(device.is_cpu(), ErrorCode::kUnsupported, "allocator for ", device,
             ": this build of Kiln has no CUDA backend (num_gpus() = ", num_gpus(), ")");
  KILN_CHECK(device.index == 0, ErrorCode::kInvalidArgument, "allocator: there is only one cpu device, got ",
             device);
  // Never destroyed: tensors held by other static objects may be freed after main() returns,
  // and must still find their allocator.
  static CachingAllocator& host =
      *new CachingAllocator(cpu(), std::make_unique<HostRawAllocator>(), default_pool_limit());
  return host;
}

AllocatorStats allocator_stats(Device device) {
  return allocator_for(device).stats();
}
void release_cached(Device device) {
  allocator_for(device).release_cached();
}
void set_pool_limit(size_t bytes, Device device) {
  allocator_for(device).set_pool_limit(bytes);
}
size_t pool_limit(Device device) {
  return allocator_for(device).pool_limit();
}
void reset_peak_stats(Device device) {
  allocator_for(device).reset_peak_stats();
}

}  // namespace kiln
