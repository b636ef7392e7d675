// ArrayDataset and DataLoader: batch contents, shuffling with a seed, last_batch modes.
#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "kiln/nn/data.hpp"
#include "nn/gluon_test_util.h"
#include "test_support.h"

namespace kiln::testing {
namespace {

// x row i is (2i, 2i + 1), y[i] = i.
nn::ArrayDataset dataset(int64_t n) {
  return nn::ArrayDataset({nd::arange(0, static_cast<double>(2 * n)).reshape({n, 2}),
                           nd::arange(0, static_cast<double>(n), 1, DType::kInt64)});
}

std::vector<std::vector<int64_t>> labels_of(nn::DataLoader& loader) {
  std::vector<std::vector<int64_t>> batches;
  for (const std::vector<NDArray>& batch : loader) {
    const std::vector<int64_t> y = batch[1].to_vector<int64_t>();
    const std::vector<double> x = values(batch[0]);
    for (size_t i = 0; i < y.size(); ++i) {
      EXPECT_EQ(x[2 * i], 2.0 * static_cast<double>(y[i]));  // rows stay paired
      EXPECT_EQ(x[2 * i + 1], 2.0 * static_cast<double>(y[i]) + 1);
    }
    batches.push_back(y);
  }
  return batches;
}

using Batches = std::vector<std::vector<int64_t>>;

TEST(GluonData, LastBatchModes) {
  nn::DataLoader keep(dataset(7), 3);
  EXPECT_EQ(keep.size(), 3);
  EXPECT_EQ(labels_of(keep), (Batches{{0, 1, 2}, {3, 4, 5}, {6}}));
  nn::DataLoader discard(dataset(7), 3, {.last_batch = nn::LastBatch::kDiscard});
  EXPECT_EQ(discard.size(), 2);
  EXPECT_EQ(labels_of(discard), (Batches{{0, 1, 2}, {3, 4, 5}}));
  nn::DataLoader rollover(dataset(7), 3, {.last_batch = nn::LastBatch::kRollover});
  EXPECT_EQ(labels_of(rollover), (Batches{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(labels_of(rollover), (Batches{{6, 0, 1}, {2, 3, 4}}));             // 6 carried over, 5 and 6 next
  EXPECT_EQ(labels_of(rollover), (Batches{{5, 6, 0}, {1, 2, 3}, {4, 5, 6}}));  // 9 samples
}

TEST(GluonData, ShuffleIsAPermutationFixedBySeed) {
  nn::DataLoader a(dataset(50), 8, {.shuffle = true, .seed = 3});
  nn::DataLoader b(dataset(50), 8, {.shuffle = true, .seed = 3});
  const Batches first = labels_of(a);
  EXPECT_EQ(first, labels_of(b));
  std::vector<int64_t> all;
  for (const auto& batch : first) all.insert(all.end(), batch.begin(), batch.end());
  EXPECT_EQ(std::set<int64_t>(all.begin(), all.end()).size(), 50u);
  EXPECT_FALSE(std::is_sorted(all.begin(), all.end()));
  EXPECT_NE(labels_of(a), first);  // the next epoch has another order
}

TEST(GluonData, TensorsAndErrors) {
  nn::ArrayDataset tensors(std::vector<Tensor>{Tensor::zeros({4, 3}, DType::kFloat32)});
  EXPECT_EQ(tensors.size(), 4);
  expect_error(
      [] {
        nn::ArrayDataset({nd::zeros({4, 2}), nd::zeros({5})});
      },
      ErrorCode::kShapeMismatch, {"array 1", "5 samples"});
  expect_error([] { nn::DataLoader(dataset(3), 0); }, ErrorCode::kInvalidArgument, {"batch_size"});
}

}  // namespace
}  // namespace kiln::testing
