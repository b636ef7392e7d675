// Greedy-by-size offset assignment (as in TFLite's arena planner): placing the largest buffers
// first leaves the small ones to fill the gaps between them, which comes close to the lower
// bound (the most bytes alive at any one step) on the chains and branches of inference graphs.
#include "runtime/memory_planner.h"

#include <algorithm>
#include <numeric>

#include "kiln/error.hpp"

namespace kiln::runtime {

size_t align_arena(size_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

namespace {

struct Buffer {
  size_t bytes = 0;  // aligned
  int first = 0;
  int last = 0;
  size_t offset = 0;
};

bool overlaps(const Buffer& a, const Buffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

// Merges in-place values into the buffer they take over; returns the buffer of each lifetime.
std::vector<int> merge_inplace(const std::vector<TensorLifetime>& lifetimes, std::vector<Buffer>& buffers,
                               int& num_inplace) {
  std::vector<int> buffer_of(lifetimes.size(), -1);
  std::vector<bool> taken(lifetimes.size(), false);
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    const TensorLifetime& lt = lifetimes[i];
    KILN_CHECK(lt.first <= lt.last, ErrorCode::kInternal, "memory planner: value ", i, " is read (step ",
               lt.last, ") before it is written (step ", lt.first, ")");
    if (lt.reuse < 0) {
      buffer_of[i] = static_cast<int>(buffers.size());
      buffers.push_back(Buffer{align_arena(lt.bytes), lt.first, lt.last, 0});
      continue;
    }
    const auto r = static_cast<size_t>(lt.reuse);
    KILN_CHECK(r < i, ErrorCode::kInternal, "memory planner: value ", i, " reuses value ", r,
               ", which does not come before it");
    KILN_CHECK(!taken[r], ErrorCode::kInternal, "memory planner: value ", r, "'s buffer is taken over twice");
    KILN_CHECK(lifetimes[r].last == lt.first, ErrorCode::kInternal, "memory planner: value ", i,
               " (written at step ", lt.first, ") takes over value ", r, ", which is still read at step ",
               lifetimes[r].last);
    Buffer& b = buffers[static_cast<size_t>(buffer_of[r])];
    KILN_CHECK(align_arena(lt.bytes) <= b.bytes, ErrorCode::kInternal, "memory planner: value ", i, " (",
               lt.bytes, " bytes) does not fit the ", b.bytes, "-byte buffer of value ", r);
    taken[r] = true;
    buffer_of[i] = buffer_of[r];
    b.last = std::max(b.last, lt.last);
    ++num_inplace;
  }
  return buffer_of;
}

void place_greedy_by_size(std::vector<Buffer>& buffers) {
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (buffers[a].bytes != buffers[b].bytes) return buffers[a].bytes > buffers[b].bytes;
    return buffers[a].first < buffers[b].first;
  });
  std::vector<const Buffer*> placed;
  std::vector<const Buffer*> live;
  for (size_t idx : order) {
    Buffer& buf = buffers[idx];
    live.clear();
    for (const Buffer* p : placed)
      if (p->bytes > 0 && overlaps(*p, buf)) live.push_back(p);
    std::sort(live.begin(), live.end(),
              [](const Buffer* a, const Buffer* b) { return a->offset < b->offset; });
    // Walk the gaps between the live buffers, lowest offset first; keep the tightest that fits.
    size_t best = 0, best_gap = 0, top = 0;
    bool found = false;
    for (const Buffer* p : live) {
      if (p->offset >= top) {
        const size_t gap = p->offset - top;
        if (gap >= buf.bytes && (!found || gap < best_gap)) {
          best = top;
          best_gap = gap;
          found = true;
        }
      }
      top = std::max(top, p->offset + p->bytes);
    }
    buf.offset = found ? best : top;
    placed.push_back(&buf);
  }
}

}  // namespace

MemoryPlan plan_memory(const std::vector<TensorLifetime>& lifetimes, bool share) {
  MemoryPlan plan;
  std::vector<Buffer> buffers;
  const std::vector<int> buffer_of = merge_inplace(lifetimes, buffers, plan.stats.num_inplace);
  if (share) {
    place_greedy_by_size(buffers);
  } else {
    size_t top = 0;
    for (Buffer& b : buffers) {
      b.offset = top;
      top += b.bytes;
    }
  }
  plan.offsets.resize(lifetimes.size());
  for (size_t i = 0; i < lifetimes.size(); ++i) {
    plan.offsets[i] = buffers[static_cast<size_t>(buffer_of[i])].offset;
    plan.stats.naive_bytes += align_arena(lifetimes[i].bytes);
  }
  for (const Buffer& b : buffers)
    plan.stats.planned_bytes = std::max(plan.stats.planned_bytes, b.offset + b.bytes);
  plan.stats.num_values = static_cast<int>(lifetimes.size());
  plan.stats.num_buffers = static_cast<int>(buffers.size());
  return plan;
}

}  // namespace kiln::runtime
