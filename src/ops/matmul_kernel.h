// The reference GEMM every matrix-shaped op (MatMul, Gemm, Conv via im2col) builds on:
// C[m x n] = op(A)[m x k] * op(B)[k x n], accumulating in compute_t (float for 16-bit floats)
// or, for integers, in the type itself. Blocked for cache and split across the compute pool
// by rows of C.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/thread_pool.h"
#include "kiln/dtype.hpp"

namespace kiln::ops {

template <class T>
void gemm_reference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T* c, int64_t ldc) {
  using Acc = compute_t<T>;
  constexpr int64_t kBlockK = 256;
  const int64_t grain = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(1, n * std::min(k, kBlockK)));
  parallel_for(0, m, grain, [&](int64_t row_begin, int64_t row_end) {
    std::vector<Acc> acc(static_cast<size_t>(n));
    for (int64_t i = row_begin; i < row_end; ++i) {
      std::fill(acc.begin(), acc.end(), Acc(0));
      // i-k-j order: the innermost loop walks a row of B and a row of C contiguously.
      for (int64_t p0 = 0; p0 < k; p0 += kBlockK) {
        const int64_t p1 = std::min(k, p0 + kBlockK);
        for (int64_t p = p0; p < p1; ++p) {
          const Acc av = static_cast<Acc>(trans_a ? a[p * lda + i] : a[i * lda + p]);
          if (!trans_b) {
            const T* brow = b + p * ldb;
            for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * static_cast<Acc>(brow[j]);
          } else {
            for (int64_t j = 0; j < n; ++j) acc[static_cast<size_t>(j)] += av * static_cast<Acc>(b[j * ldb + p]);
          }
        }
      }
      T* crow = c + i * ldc;
      for (int64_t j = 0; j < n; ++j) crow[j] = convert_value<T>(acc[static_cast<size_t>(j)]);
    }
  });
}

}  // namespace kiln::ops
