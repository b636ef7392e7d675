// Byte-level strided copy loops: Tensor::copy_from (and so contiguous() and clone()) and the shape
// and data-movement ops (src/ops/shape_ops_util.h) copy through these. They never look at the
// dtype, only at the item size, so one instantiation serves float, bfloat16, bool and the integers
// alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/thread_pool.h"

namespace kiln {

// Elements per parallel task: large enough that scheduling is noise next to the memory traffic.
inline constexpr int64_t kCopyGrain = 1 << 15;

namespace copy_detail {

// One element moved with a fixed-size memcpy: the compiler turns it into a single load and store,
// without the aliasing questions a reinterpret_cast to an integer type would raise.
template <size_t N>
void copy_run_fixed(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n) {
  const int64_t ds = dst_stride * static_cast<int64_t>(N), ss = src_stride * static_cast<int64_t>(N);
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * ds, src + i * ss, N);
}

template <size_t N>
void fill_fixed(char* dst, const char* value, int64_t n) {
  for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(N), value, N);
}

// A rows x cols tile: dst[k][j] = src[j][k], dst rows `dst_row` elements apart and src rows
// (the tile's columns) `src_col` apart.
template <size_t N>
void copy_tile_fixed(char* dst, int64_t dst_row, const char* src, int64_t src_col, int64_t rows,
                     int64_t cols) {
  for (int64_t k = 0; k < rows; ++k) {
    char* d = dst + k * dst_row * static_cast<int64_t>(N);
    const char* s = src + k * static_cast<int64_t>(N);
    for (int64_t j = 0; j < cols; ++j)
      std::memcpy(d + j * static_cast<int64_t>(N), s + j * src_col * static_cast<int64_t>(N), N);
  }
}

inline void copy_tile(char* dst, int64_t dst_row, const char* src, int64_t src_col, int64_t rows,
                      int64_t cols, size_t itemsize) {
  switch (itemsize) {
    case 1:
      return copy_tile_fixed<1>(dst, dst_row, src, src_col, rows, cols);
    case 2:
      return copy_tile_fixed<2>(dst, dst_row, src, src_col, rows, cols);
    case 4:
      return copy_tile_fixed<4>(dst, dst_row, src, src_col, rows, cols);
    case 8:
      return copy_tile_fixed<8>(dst, dst_row, src, src_col, rows, cols);
    default: {
      const auto item = static_cast<int64_t>(itemsize);
      for (int64_t k = 0; k < rows; ++k)
        for (int64_t j = 0; j < cols; ++j)
          std::memcpy(dst + (k * dst_row + j) * item, src + (k + j * src_col) * item, itemsize);
    }
  }
}

}  // namespace copy_detail

// Writes the element `value` (itemsize bytes) n times, contiguously.
inline void fill_run(char* dst, const char* value, int64_t n, size_t itemsize) {
  if (n <= 0) return;
  switch (itemsize) {
    case 1:
      std::memset(dst, static_cast<unsigned char>(*value), static_cast<size_t>(n));
      return;
    case 2:
      return copy_detail::fill_fixed<2>(dst, value, n);
    case 4:
      return copy_detail::fill_fixed<4>(dst, value, n);
    case 8:
      return copy_detail::fill_fixed<8>(dst, value, n);
    default:
      for (int64_t i = 0; i < n; ++i) std::memcpy(dst + i * static_cast<int64_t>(itemsize), value, itemsize);
  }
}

// Copies n elements of `itemsize` bytes; strides are in elements and may be 0 or negative.
inline void copy_run(char* dst, int64_t dst_stride, const char* src, int64_t src_stride, int64_t n,
                     size_t itemsize) {
  if (n <= 0) return;
  if (dst_stride == 1 && src_stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * itemsize);
    return;
  }
  if (dst_stride == 1 && src_stride == 0) {
    fill_run(dst, src, n, itemsize);
    return;
  }
  switch (itemsize) {
    case 1:
      return copy_detail::copy_run_fixed<1>(dst, dst_stride, src, src_stride, n);
    case 2:
      return copy_detail::copy_run_fixed<2>(dst, dst_stride, src, src_stride, n);
    case 4:
      return copy_detail::copy_run_fixed<4>(dst, dst_stride, src, src_stride, n);
    case 8:
      return copy_detail::copy_run_fixed<8>(dst, dst_stride, src, src_stride, n);
    default: {
      const auto item = static_cast<int64_t>(itemsize);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dst + i * dst_stride * item, src + i * src_stride * item, itemsize);
    }
  }
}

// Copies the N-d block `dims` between two strided layouts (strides in elements, any sign, 0 for a
// repeated source). Axes that step as one are merged first so the inner loop is as long as
// possible; when the destination is dense along its inner axis but the source is dense along
// another (a transposition), the copy walks 2-D tiles of those two axes so both sides stay in
// cache. The outer rows (or tiles) are split across the compute pool.
inline void copy_strided(char* dst, const std::vector<int64_t>& dst_strides, const char* src,
                         const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dims,
                         size_t itemsize) {
  std::vector<int64_t> d, ds, ss;
  for (size_t a = 0; a < dims.size(); ++a) {
    if (dims[a] == 0) return;
    if (dims[a] == 1) continue;
    if (!d.empty() && ds.back() == dst_strides[a] * dims[a] && ss.back() == src_strides[a] * dims[a]) {
      d.back() *= dims[a];
      ds.back() = dst_strides[a];
      ss.back() = src_strides[a];
      continue;
    }
    d.push_back(dims[a]);
    ds.push_back(dst_strides[a]);
    ss.push_back(src_strides[a]);
  }
  if (d.empty()) {
    std::memcpy(dst, src, itemsize);
    return;
  }
  const auto item = static_cast<int64_t>(itemsize);
  const int inner = static_cast<int>(d.size()) - 1;
  const auto at = [](const std::vector<int64_t>& v, int a) { return v[static_cast<size_t>(a)]; };

  int dense_src = -1;
  if (at(ds, inner) == 1 && at(ss, inner) != 1 && at(ss, inner) != 0)
    for (int a = 0; a < inner; ++a)
      if (at(ss, a) == 1) dense_src = a;
  constexpr int64_t kTile = 32;
  if (dense_src >= 0 && at(d, inner) >= kTile / 4 && at(d, dense_src) >= kTile / 4) {
    // Tiles of (dense_src, inner): each tile reads kTile short source columns and writes kTile
    // short destination rows, all of which stay in L1 while the tile is copied.
    const int64_t tiles_k = (at(d, dense_src) + kTile - 1) / kTile,
                  tiles_j = (at(d, inner) + kTile - 1) / kTile;
    int64_t outer = 1;
    for (int a = 0; a < inner; ++a)
      if (a != dense_src) outer *= at(d, a);
    parallel_for(0, outer * tiles_k * tiles_j, std::max<int64_t>(1, kCopyGrain / (kTile * kTile)),
                 [&](int64_t b, int64_t e) {
                   for (int64_t t = b; t < e; ++t) {
                     const int64_t tj = t % tiles_j, tk = (t / tiles_j) % tiles_k;
                     int64_t rest = t / (tiles_j * tiles_k), doff = 0, soff = 0;
                     for (int a = inner - 1; a >= 0; --a) {
                       if (a == dense_src) continue;
                       const int64_t i = rest % at(d, a);
                       rest /= at(d, a);
                       doff += i * at(ds, a);
                       soff += i * at(ss, a);
                     }
                     const int64_t k0 = tk * kTile, k1 = std::min(k0 + kTile, at(d, dense_src));
                     const int64_t j0 = tj * kTile, j1 = std::min(j0 + kTile, at(d, inner));
                     copy_detail::copy_tile(dst + (doff + k0 * at(ds, dense_src) + j0) * item,
                                            at(ds, dense_src), src + (soff + k0 + j0 * at(ss, inner)) * item,
                                            at(ss, inner), k1 - k0, j1 - j0, itemsize);
                   }
                 });
    return;
  }

  // Rows of the inner axis, each cut into pieces of at most kCopyGrain elements so that even a
  // single long row is shared across the pool.
  const int64_t len = at(d, inner);
  const int64_t piece = std::min(len, kCopyGrain);
  const int64_t pieces = (len + piece - 1) / piece;
  int64_t rows = 1;
  for (int a = 0; a < inner; ++a) rows *= at(d, a);
  parallel_for(0, rows * pieces, std::max<int64_t>(1, kCopyGrain / piece), [&](int64_t b, int64_t e) {
    std::vector<int64_t> idx(static_cast<size_t>(inner), 0);
    int64_t rest = b / pieces, doff = 0, soff = 0;
    for (int a = inner - 1; a >= 0; --a) {
      idx[static_cast<size_t>(a)] = rest % at(d, a);
      rest /= at(d, a);
      doff += idx[static_cast<size_t>(a)] * at(ds, a);
      soff += idx[static_cast<size_t>(a)] * at(ss, a);
    }
    for (int64_t t = b, p = b % pieces; t < e; ++t) {
      const int64_t j0 = p * piece, n = std::min(piece, len - j0);
      copy_run(dst + (doff + j0 * at(ds, inner)) * item, at(ds, inner),
               src + (soff + j0 * at(ss, inner)) * item, at(ss, inner), n, itemsize);
      if (++p < pieces) continue;
      p = 0;
      for (int a = inner - 1; a >= 0; --a) {
        auto& i = idx[static_cast<size_t>(a)];
        doff += at(ds, a);
        soff += at(ss, a);
        if (++i < at(d, a)) break;
        doff -= at(ds, a) * at(d, a);
        soff -= at(ss, a) * at(d, a);
        i = 0;
      }
    }
  });
}

// Copies `n` contiguous elements, split across the compute pool.
inline void copy_contiguous(char* dst, const char* src, int64_t n, size_t itemsize) {
  copy_strided(dst, {1}, src, {1}, {n}, itemsize);
}

}  // namespace kiln
