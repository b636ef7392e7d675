// Dims (inline storage for shapes and strides) against std::vector doing the same operations,
// across the switch between inline and heap storage.
#include <random>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "kiln/dims.hpp"
#include "kiln/tensor.hpp"

namespace kiln {
namespace {

void expect_same(const Dims& dims, const std::vector<int64_t>& reference) {
  ASSERT_EQ(dims.size(), reference.size());
  EXPECT_EQ(dims.to_vector(), reference);
  EXPECT_TRUE(dims == reference);
}

TEST(Dims, FollowsAVectorThroughPushesPopsResizesCopiesAndMoves) {
  std::mt19937 rng(7);
  Dims dims;
  std::vector<int64_t> reference;
  for (int step = 0; step < 2000; ++step) {
    const int action = static_cast<int>(rng() % 6);
    const int64_t value = static_cast<int64_t>(rng() % 1000) - 500;
    if (action <= 1) {
      dims.push_back(value);
      reference.push_back(value);
    } else if (action == 2 && !reference.empty()) {
      dims.pop_back();
      reference.pop_back();
    } else if (action == 3) {
      const size_t n = rng() % (2 * Dims::kInline + 3);
      dims.resize(n, value);
      reference.resize(n, value);
    } else if (action == 4) {
      Dims copy = dims;
      expect_same(copy, reference);
      Dims moved = std::move(copy);
      EXPECT_TRUE(copy.empty());  // NOLINT(bugprone-use-after-move): a moved-from Dims is empty
      dims = std::move(moved);
    } else if (!reference.empty()) {
      const size_t i = rng() % reference.size();
      dims[i] = value;
      reference[i] = value;
    }
    expect_same(dims, reference);
  }
}

TEST(Dims, ConvertsFromAndToVectors) {
  const std::vector<int64_t> long_list{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const Dims from_vector = long_list;
  expect_same(from_vector, long_list);
  const std::vector<int64_t> back = from_vector;
  EXPECT_EQ(back, long_list);
  expect_same(Dims(long_list.begin() + 2, long_list.end()), {3, 4, 5, 6, 7, 8, 9});
  expect_same(Dims(3, -1), {-1, -1, -1});
  EXPECT_FALSE(Dims({1, 2}) == Dims({1, 2, 3}));
}

TEST(Dims, TensorsOfMoreAxesThanFitInlineKeepTheirViews) {
  // 8 axes: shape and strides are on the heap. Transposing reverses the strides; slicing the
  // last axis of the transpose reads element 3 of the first axis of the source.
  const Shape shape({4, 1, 1, 1, 1, 1, 1, 2});
  std::vector<float> values(8);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i);
  const Tensor t = Tensor::from_vector(values, shape);
  expect_same(t.strides(), {2, 2, 2, 2, 2, 2, 2, 1});
  const Tensor transposed = t.transpose({7, 6, 5, 4, 3, 2, 1, 0});
  expect_same(transposed.strides(), {1, 2, 2, 2, 2, 2, 2, 2});
  const Tensor row = transposed.slice(7, 3, 4);
  EXPECT_EQ(row.contiguous().to_vector<float>(), (std::vector<float>{6, 7}));
}

}  // namespace
}  // namespace kiln
