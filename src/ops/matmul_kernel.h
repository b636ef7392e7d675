// The reference GEMM every matrix-shaped op (MatMul, Gemm, Conv via im2col) builds on:
// op(A)[m x k] * op(B)[k x n], accumulating in compute_t (float for 16-bit floats) or, for
// integers, in the type itself. The product is computed in tiles of a few rows by a block of
// columns, split across the compute pool; gemm_tiles hands each finished tile row to the
// caller, so ops fuse their epilogue (scaling, bias, dtype conversion) into the one write.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "core/thread_pool.h"
#include "kiln/dtype.hpp"

namespace kiln::ops {

namespace gemm_detail {
// Rows of C that share each row of B while it is in L1.
inline constexpr int64_t kRowTile = 4;
// Columns of C per tile: the tile's accumulators (kRowTile x kColBlock) stay in L1.
inline constexpr int64_t kColBlock = 256;
// Multiply-adds per parallel task, so that scheduling costs stay small against the work.
inline constexpr int64_t kTaskWork = 1 << 15;

// The tiled product, with B given as k rows of n values (row stride ldb) that convert to Acc.
template <class Acc, class T, class BT, class Store>
void product_tiles(bool trans_a, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const BT* b,
                   int64_t ldb, Store& store) {
  const int64_t row_tiles = (m + kRowTile - 1) / kRowTile;
  const int64_t col_blocks = (n + kColBlock - 1) / kColBlock;
  const int64_t tile_work = kRowTile * std::min(n, kColBlock) * std::max<int64_t>(k, 1);
  auto run_tiles = [&](int64_t tile_begin, int64_t tile_end) {
    std::array<Acc, kRowTile * kColBlock> acc;
    for (int64_t tile = tile_begin; tile < tile_end; ++tile) {
      // Consecutive tiles walk down the rows of one column block, reusing its panel of B.
      const int64_t i0 = (tile % row_tiles) * kRowTile, j0 = (tile / row_tiles) * kColBlock;
      const int64_t rows = std::min(kRowTile, m - i0), len = std::min(kColBlock, n - j0);
      std::fill(acc.begin(), acc.end(), Acc(0));
      for (int64_t p = 0; p < k; ++p) {
        const BT* brow = b + p * ldb + j0;
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t i = i0 + r;
          const Acc av = static_cast<Acc>(trans_a ? a[p * lda + i] : a[i * lda + p]);
          Acc* acc_row = acc.data() + r * kColBlock;
          for (int64_t j = 0; j < len; ++j) acc_row[j] += av * static_cast<Acc>(brow[j]);
        }
      }
      for (int64_t r = 0; r < rows; ++r)
        store(i0 + r, j0, len, static_cast<const Acc*>(acc.data() + r * kColBlock));
    }
  };
  parallel_for(0, row_tiles * col_blocks, std::max<int64_t>(1, kTaskWork / tile_work), run_tiles);
}

}  // namespace gemm_detail

// Calls store(i, j0, len, acc) once for every row i of the product and block of columns
// [j0, j0 + len), where acc[j] holds the accumulated (op(A) * op(B))[i, j0 + j] in compute_t<T>.
// Different calls may run concurrently on different threads; each (i, j) is stored once.
template <class T, class Store>
void gemm_tiles(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                const T* b, int64_t ldb, Store&& store) {
  using Acc = compute_t<T>;
  if (m <= 0 || n <= 0) return;
  if (std::is_same_v<T, Acc> && !trans_b) {
    gemm_detail::product_tiles<Acc>(trans_a, m, n, k, a, lda, b, ldb, store);
    return;
  }
  // B is packed once into k rows of n Acc values when it is transposed (the innermost loop
  // would read it down its columns) or 16-bit (each row tile would convert it again): k * n
  // copies against the m * n * k multiply-adds.
  std::vector<Acc> packed(static_cast<size_t>(k * n));
  const int64_t pack_grain = std::max<int64_t>(1, gemm_detail::kTaskWork / std::max<int64_t>(1, k));
  if (trans_b) {
    constexpr int64_t kPackBlock = 64;  // rows of packed filled together, to reuse their cache lines
    parallel_for(0, n, pack_grain, [&](int64_t j_begin, int64_t j_end) {
      for (int64_t p0 = 0; p0 < k; p0 += kPackBlock) {
        const int64_t p1 = std::min(k, p0 + kPackBlock);
        for (int64_t j = j_begin; j < j_end; ++j)
          for (int64_t p = p0; p < p1; ++p)
            packed[static_cast<size_t>(p * n + j)] = static_cast<Acc>(b[j * ldb + p]);
      }
    });
  } else {
    parallel_for(0, k, std::max<int64_t>(1, gemm_detail::kTaskWork / n), [&](int64_t p_begin, int64_t p_end) {
      for (int64_t p = p_begin; p < p_end; ++p)
        for (int64_t j = 0; j < n; ++j)
          packed[static_cast<size_t>(p * n + j)] = static_cast<Acc>(b[p * ldb + j]);
    });
  }
  gemm_detail::product_tiles<Acc>(trans_a, m, n, k, a, lda, packed.data(), n, store);
}

// C[m x n] (row stride ldc) = op(A) * op(B), converted to T.
template <class T>
void gemm_reference(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
                    const T* b, int64_t ldb, T* c, int64_t ldc) {
  gemm_tiles<T>(trans_a, trans_b, m, n, k, a, lda, b, ldb,
                [&](int64_t i, int64_t j0, int64_t len, const compute_t<T>* acc) {
                  T* crow = c + i * ldc + j0;
                  for (int64_t j = 0; j < len; ++j) crow[j] = convert_value<T>(acc[j]);
                });
}

}  // namespace kiln::ops
