// Gluon's data utilities (mx.gluon.data): ArrayDataset (samples are rows along axis 0 of one or
// more arrays) and DataLoader (mini-batches of it, optionally shuffled).
//
//   nn::ArrayDataset data({x, y});                                   // x (N, 64), y (N)
//   nn::DataLoader loader(data, 64, {.shuffle = true, .seed = 1});
//   for (const std::vector<NDArray>& batch : loader) { ... batch[0] (64, 64), batch[1] (64) ... }
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "kiln/ndarray.hpp"

namespace kiln::nn {

class ArrayDataset {
 public:
  // Every array must have the same length along axis 0 (kiln::Error naming the array otherwise).
  explicit ArrayDataset(std::vector<NDArray> arrays);
  explicit ArrayDataset(const std::vector<Tensor>& arrays);

  int64_t size() const { return length_; }
  size_t num_arrays() const { return arrays_.size(); }
  const NDArray& array(size_t index) const { return arrays_.at(index); }
  // The samples at `indices`, one array per dataset array, each (indices.size(), ...).
  std::vector<NDArray> gather(const std::vector<int64_t>& indices) const;

 private:
  std::vector<NDArray> arrays_;
  int64_t length_ = 0;
};

// What happens to the last samples of an epoch that do not fill a batch: a smaller last batch
// (kKeep), dropped (kDiscard), or put in front of the next epoch (kRollover).
enum class LastBatch { kKeep, kDiscard, kRollover };

struct DataLoaderOptions {
  bool shuffle = false;
  uint32_t seed = 0;  // the shuffling generator's seed: the epochs' orders are reproducible
  LastBatch last_batch = LastBatch::kKeep;
};

class DataLoader {
 public:
  DataLoader(ArrayDataset dataset, int64_t batch_size, DataLoaderOptions options = {});

  // The sample indices of each batch of the next epoch; each call is one epoch (the shuffle
  // advances, and with kRollover the carried samples come first).
  std::vector<std::vector<int64_t>> next_epoch();
  // Batches of the next epoch as arrays (one epoch per call of begin()).
  class Iterator;
  Iterator begin();
  Iterator end();
  // Batches per epoch with an empty carry (kRollover epochs may have one more).
  int64_t size() const;
  const ArrayDataset& dataset() const { return dataset_; }

  class Iterator {
   public:
    const std::vector<NDArray>& operator*() const { return batch_; }
    const std::vector<NDArray>* operator->() const { return &batch_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return position_ == other.position_; }
    bool operator!=(const Iterator& other) const { return position_ != other.position_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, std::vector<std::vector<int64_t>> batches, size_t position);
    void load();
    const DataLoader* loader_;
    std::vector<std::vector<int64_t>> batches_;
    size_t position_;
    std::vector<NDArray> batch_;
  };

 private:
  ArrayDataset dataset_;
  int64_t batch_size_;
  DataLoaderOptions options_;
  std::mt19937 generator_;
  std::vector<int64_t> carry_;
};

}  // namespace kiln::nn
