// What the normalization families (normalization.cc, group_rms_normalization.cc) share: the
// work split of their per-row loops, the epsilon check and reading parameters as doubles.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/error.hpp"
#include "kiln/tensor.hpp"

namespace kiln::ops {

// Elements per task: large enough that scheduling is noise next to the work.
inline constexpr int64_t kNormGrain = 1 << 15;

// Items per parallel_for task when each item (a row, a group) costs `work_per_item` elements.
inline int64_t norm_grain_for(int64_t work_per_item) {
  return std::max<int64_t>(1, kNormGrain / std::max<int64_t>(work_per_item, 1));
}

inline void validate_epsilon(const AttrValue& value, const std::string& what) {
  const double v = std::get<double>(value.variant());
  KILN_CHECK(std::isfinite(v) && v >= 0, ErrorCode::kInvalidArgument, what,
             ": expected a finite value >= 0, got ", v);
}

// A small parameter tensor (scale, bias, statistics) of any float dtype, as doubles. Read in
// place, not through Tensor::cast: kernels call it on every run, and a run allocates no tensors.
inline std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<double>(static_cast<compute_t<T>>(p[i]));
  });
  return out;
}

}  // namespace kiln::ops
