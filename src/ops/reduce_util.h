// Helpers shared by the reduction family (reduce.cc, arg_reduce.cc, topk.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "attr_validators.h"
#include "core/thread_pool.h"
#include "op_schema.h"

namespace kiln::ops {

// Work (input elements) per parallel task: enough to outweigh the cost of scheduling it.
inline constexpr int64_t kReduceGrain = 1 << 15;

// The number of tasks of `work_per_task` elements each that make one grain.
inline int64_t reduce_grain(int64_t work_per_task) {
  return std::max<int64_t>(1, kReduceGrain / std::max<int64_t>(work_per_task, 1));
}

// A tensor viewed around one axis as (outer, axis, inner), row-major.
struct AxisSplit {
  int64_t outer = 1, axis = 1, inner = 1;
};

inline AxisSplit split_at_axis(const Shape& shape, int axis) {
  AxisSplit s;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (d < axis) s.outer *= shape[d];
    if (d == axis) s.axis = shape[d];
    if (d > axis) s.inner *= shape[d];
  }
  return s;
}

}  // namespace kiln::ops
