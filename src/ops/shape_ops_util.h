// Byte-level copy helpers shared by the shape and data-movement ops (Transpose, Slice, Expand,
// Tile, Concat, Split, Gather, Pad, DepthToSpace, ...), over the strided copy loops of
// core/strided_copy.h. They never look at the dtype, only at the item size, so one instantiation
// serves float, bfloat16, bool and the integers alike.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/strided_copy.h"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln::ops {

// Writes `src`, seen through `src_strides` (in elements, from `src_offset` elements past its
// first element), into the contiguous `dst` of the same number of dimensions.
inline void copy_view_to(Tensor& dst, const Tensor& src, const std::vector<int64_t>& src_strides,
                         int64_t src_offset = 0) {
  if (dst.numel() == 0) return;
  const auto* s =
      static_cast<const char*>(src.raw_data()) + src_offset * static_cast<int64_t>(src.itemsize());
  copy_strided(static_cast<char*>(dst.raw_data()), contiguous_strides(dst.shape()), s, src_strides,
               dst.shape().dims(), dst.itemsize());
}

// Copies one element of `itemsize` bytes.
inline void copy_element(char* dst, const char* src, size_t itemsize) {
  switch (itemsize) {
    case 1:
      *dst = *src;
      return;
    case 2:
      std::memcpy(dst, src, 2);
      return;
    case 4:
      std::memcpy(dst, src, 4);
      return;
    case 8:
      std::memcpy(dst, src, 8);
      return;
    default:
      std::memcpy(dst, src, itemsize);
  }
}

// Maps index i along axis `axis` (of size `dim`) into [0, dim), counting negatives from the back;
// throws kOutOfRange naming `what`, the index and the bound when it falls outside [-dim, dim).
inline int64_t checked_index(int64_t i, int64_t dim, const char* what, int axis) {
  if (i < -dim || i >= dim)
    raise(ErrorCode::kOutOfRange, what, ": index ", i, " is out of range for axis ", axis, " of size ", dim,
          " (expected ", -dim, " <= index < ", dim, ")");
  return i < 0 ? i + dim : i;
}

// Reads the elements of an int32 or int64 index tensor as int64.
class IndexReader {
 public:
  explicit IndexReader(const Tensor& indices)
      : i64_(indices.dtype() == DType::kInt64 ? indices.data<int64_t>() : nullptr),
        i32_(indices.dtype() == DType::kInt64 ? nullptr : indices.data<int32_t>()) {}
  int64_t operator[](int64_t k) const { return i64_ ? i64_[k] : static_cast<int64_t>(i32_[k]); }

 private:
  const int64_t* i64_;
  const int32_t* i32_;
};

}  // namespace kiln::ops
