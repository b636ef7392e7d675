// Iterating inputs broadcast against an output (numpy rules). Adjacent axes that broadcast the
// same way are merged first, so the inner loop runs over the longest possible stretch with a
// stride of 1 (the input varies) or 0 (the input is repeated).
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "kiln/shape.hpp"

namespace kiln::ops {

template <int K>
class BroadcastPlan {
 public:
  BroadcastPlan(const Shape& out, const std::array<Shape, K>& inputs);

  int64_t rows() const { return rows_; }
  int64_t inner() const { return inner_; }
  // Element stride along the inner axis of input k: 1 or 0.
  int64_t inner_stride(int k) const { return inner_stride_[static_cast<size_t>(k)]; }
  // Element offsets of input k at the start of output row `row` (row * inner is the output offset).
  void row_offsets(int64_t row, std::array<int64_t, K>& offsets) const;

 private:
  std::vector<int64_t> outer_dims_;  // merged output axes, the inner one excluded
  std::array<std::vector<int64_t>, K> outer_strides_;
  std::array<int64_t, K> inner_stride_{};
  int64_t rows_ = 1, inner_ = 1;
};

template <int K>
BroadcastPlan<K>::BroadcastPlan(const Shape& out, const std::array<Shape, K>& inputs) {
  const int nd = out.ndim();
  // Per-axis strides of every input, aligned to the output's rank (0 where broadcast).
  std::vector<std::array<int64_t, K>> strides(static_cast<size_t>(nd));
  for (int k = 0; k < K; ++k) {
    const Shape& in = inputs[static_cast<size_t>(k)];
    int64_t s = 1;
    for (int a = nd - 1; a >= 0; --a) {
      const int ia = in.ndim() - nd + a;
      const int64_t d = ia >= 0 ? in[ia] : 1;
      strides[static_cast<size_t>(a)][static_cast<size_t>(k)] = (d == 1 && out[a] != 1) ? 0 : s;
      s *= d;
    }
  }
  // Merge axis a into the one after it when every input steps through both as one.
  std::vector<int64_t> dims;
  std::vector<std::array<int64_t, K>> merged;
  for (int a = 0; a < nd; ++a) {
    if (out[a] == 1) continue;
    const auto& st = strides[static_cast<size_t>(a)];
    if (!dims.empty()) {
      bool mergeable = true;
      for (int k = 0; k < K; ++k)
        mergeable &= merged.back()[static_cast<size_t>(k)] == st[static_cast<size_t>(k)] * out[a];
      if (mergeable) {
        dims.back() *= out[a];
        merged.back() = st;
        continue;
      }
    }
    dims.push_back(out[a]);
    merged.push_back(st);
  }
  if (dims.empty()) {
    inner_ = 1;
    for (int k = 0; k < K; ++k) inner_stride_[static_cast<size_t>(k)] = 0;
    rows_ = out.numel() == 0 ? 0 : 1;
    return;
  }
  inner_ = dims.back();
  for (int k = 0; k < K; ++k) inner_stride_[static_cast<size_t>(k)] = merged.back()[static_cast<size_t>(k)];
  dims.pop_back();
  merged.pop_back();
  outer_dims_ = dims;
  for (int k = 0; k < K; ++k)
    for (const auto& st : merged)
      outer_strides_[static_cast<size_t>(k)].push_back(st[static_cast<size_t>(k)]);
  rows_ = 1;
  for (int64_t d : dims) rows_ *= d;
  if (out.numel() == 0) rows_ = 0;
}

template <int K>
void BroadcastPlan<K>::row_offsets(int64_t row, std::array<int64_t, K>& offsets) const {
  offsets.fill(0);
  for (int a = static_cast<int>(outer_dims_.size()) - 1; a >= 0; --a) {
    const int64_t d = outer_dims_[static_cast<size_t>(a)];
    const int64_t i = row % d;
    row /= d;
    for (int k = 0; k < K; ++k)
      offsets[static_cast<size_t>(k)] += i * outer_strides_[static_cast<size_t>(k)][static_cast<size_t>(a)];
  }
}

}  // namespace kiln::ops
