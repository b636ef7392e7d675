// When a binding keeps the GIL: a call on small arrays never waits (the NDArray layer runs it at once
// or queues it behind pending writes), and releasing and retaking the GIL costs about as much as such
// an op. Larger calls release it so that other Python threads run while Kiln works.
#pragma once

#include <cstdint>

#include <kiln/ndarray.hpp>

namespace kiln::python {

// The most elements a call may read and write and still keep the GIL.
inline constexpr int64_t kSmallElements = 4096;

// Whether `a op b` reads and writes at most kSmallElements (broadcasting makes at most a.size() *
// b.size()).
inline bool is_small(const NDArray& a, const NDArray& b) {
  if (a.size() > kSmallElements || b.size() > kSmallElements) return false;
  const int64_t result = a.shape() == b.shape() ? a.size() : a.size() * b.size();
  return a.size() + b.size() + result <= kSmallElements;
}
inline bool is_small(const NDArray& a, double) {
  return a.size() <= kSmallElements && 2 * a.size() + 1 <= kSmallElements;
}

}  // namespace kiln::python
