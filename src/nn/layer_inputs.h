// Argument checks the Gluon layers share: exactly one input, and one value per spatial axis. Their
// messages name the block, so that an error in a deep network says which layer it came from.
#pragma once

#include <string>
#include <vector>

#include "kiln/error.hpp"
#include "kiln/ndarray.hpp"

namespace kiln::nn {

// The one defined input of `block`; throws kInvalidArgument otherwise.
inline const NDArray& single_input(const std::vector<NDArray>& inputs, const std::string& block) {
  KILN_CHECK(inputs.size() == 1 && inputs[0].defined(), ErrorCode::kInvalidArgument, "Block '", block,
             "': expected 1 input, got ", inputs.size());
  return inputs[0];
}

// One value per spatial axis from `values` (one per axis, or one for all).
inline std::vector<int64_t> per_axis(const std::vector<int64_t>& values, int spatial, const std::string& what,
                                     const std::string& block) {
  if (values.size() == 1) return std::vector<int64_t>(static_cast<size_t>(spatial), values[0]);
  KILN_CHECK(values.size() == static_cast<size_t>(spatial), ErrorCode::kInvalidArgument, "Block '", block,
             "': ", what, " needs 1 or ", spatial, " values, got ", values.size());
  return values;
}

}  // namespace kiln::nn
