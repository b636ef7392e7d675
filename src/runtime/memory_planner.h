// Static memory planning for a compiled graph: every intermediate value gets a byte offset in
// one arena, chosen so that values whose lifetimes overlap never share bytes while values that
// are never alive together reuse the same memory.
//
// The planner knows nothing about graphs: it takes one TensorLifetime per value (the step that
// writes it, the last step that reads it, its size) and returns offsets. compile() derives the
// lifetimes from the step order; the unit tests feed synthetic ones.
#pragma once

#include <cstddef>
#include <vector>

namespace kiln::runtime {

// Offsets and sizes in the arena are multiples of this: one cache line, and enough for any
// vector load a kernel may issue.
inline constexpr size_t kArenaAlignment = 64;

struct TensorLifetime {
  size_t bytes = 0;
  int first = 0;  // the step that writes the value
  int last = 0;   // the last step that reads it (== first when nothing reads it); inclusive
  // In-place: the index of an earlier lifetime whose buffer this value takes over. That value's
  // buffer must end at `first` (this value's producer is its last reader) and be at least as
  // large. -1: the value gets a buffer of its own.
  int reuse = -1;
};

struct MemoryPlanStats {
  size_t planned_bytes = 0;  // the arena size
  size_t naive_bytes = 0;    // one aligned buffer per value, nothing shared
  int num_values = 0;
  int num_buffers = 0;  // distinct buffers after in-place merging
  int num_inplace = 0;  // values that took over an input's buffer
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // per lifetime, in bytes from the start of the arena
  MemoryPlanStats stats;
};

// Rounds up to kArenaAlignment.
size_t align_arena(size_t bytes);

// Assigns offsets greedily by size: the largest buffers are placed first, each at the lowest
// best-fitting gap (the smallest gap that holds it) among the buffers already placed whose
// lifetimes overlap its own; with nothing to fit into it goes above them. With `share` false
// every buffer gets its own bytes (the naive layout, for debugging). Throws kiln::Error
// (kInternal) for an invalid `reuse`.
MemoryPlan plan_memory(const std::vector<TensorLifetime>& lifetimes, bool share = true);

}  // namespace kiln::runtime
