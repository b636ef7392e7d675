// The caching allocator behind every tensor: one per device. Freed blocks go back to a pool
// keyed by size class and are handed out again, so steady-state loops stop calling the system.
#pragma once

#include <cstddef>

#include "kiln/device.hpp"

namespace kiln {

struct AllocatorStats {
  size_t bytes_in_use = 0;            // handed out and not yet freed (rounded to size classes)
  size_t peak_bytes_in_use = 0;       // the high-water mark of bytes_in_use since the last reset
  size_t bytes_cached = 0;            // freed blocks held in the pool for reuse
  size_t num_allocations = 0;         // every allocation request served
  size_t num_pool_hits = 0;           // requests served from the pool
  size_t num_system_allocations = 0;  // requests that went to the system allocator
  size_t num_system_frees = 0;        // blocks given back to the system
};

AllocatorStats allocator_stats(Device device = cpu());
// Gives every cached block of `device` back to the system.
void release_cached(Device device = cpu());
// The most bytes the pool may hold; freed blocks beyond it go straight back to the system.
// 0 turns pooling off. The default is 1 GiB, or KILN_POOL_LIMIT_MB from the environment.
void set_pool_limit(size_t bytes, Device device = cpu());
size_t pool_limit(Device device = cpu());
void reset_peak_stats(Device device = cpu());

}  // namespace kiln
