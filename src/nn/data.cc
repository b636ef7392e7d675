// ArrayDataset and DataLoader: batches gathered along axis 0 with the Gather op; the epoch order
// comes from a seeded std::mt19937 (std::shuffle), so a seed fixes every epoch's batches.
#include "kiln/nn/data.hpp"

#include <algorithm>
#include <numeric>

namespace kiln::nn {

ArrayDataset::ArrayDataset(std::vector<NDArray> arrays) : arrays_(std::move(arrays)) {
  KILN_CHECK(!arrays_.empty(), ErrorCode::kInvalidArgument, "ArrayDataset: needs at least one array");
  for (size_t i = 0; i < arrays_.size(); ++i) {
    KILN_CHECK(arrays_[i].defined() && arrays_[i].ndim() >= 1, ErrorCode::kInvalidArgument,
               "ArrayDataset: array ", i, " must be defined with at least one axis");
    KILN_CHECK(arrays_[i].shape()[0] == arrays_[0].shape()[0], ErrorCode::kShapeMismatch,
               "ArrayDataset: array ", i, " has ", arrays_[i].shape()[0], " samples (shape ",
               arrays_[i].shape(), "), array 0 has ", arrays_[0].shape()[0]);
  }
  length_ = arrays_[0].shape()[0];
}

ArrayDataset::ArrayDataset(const std::vector<Tensor>& arrays)
    : ArrayDataset([&] {
        std::vector<NDArray> wrapped;
        for (const Tensor& t : arrays) wrapped.emplace_back(t);
        return wrapped;
      }()) {}

std::vector<NDArray> ArrayDataset::gather(const std::vector<int64_t>& indices) const {
  for (int64_t i : indices)
    KILN_CHECK(i >= 0 && i < length_, ErrorCode::kOutOfRange, "ArrayDataset: index ", i, " out of range [0, ",
               length_, ")");
  const NDArray index = nd::array(indices, Shape{static_cast<int64_t>(indices.size())});
  std::vector<NDArray> batch;
  for (const NDArray& a : arrays_) batch.push_back(nd::invoke1("Gather", {a, index}, {{"axis", 0}}));
  return batch;
}

DataLoader::DataLoader(ArrayDataset dataset, int64_t batch_size, DataLoaderOptions options)
    : dataset_(std::move(dataset)), batch_size_(batch_size), options_(options), generator_(options.seed) {
  KILN_CHECK(batch_size > 0, ErrorCode::kInvalidArgument, "DataLoader: batch_size must be > 0, got ",
             batch_size);
}

int64_t DataLoader::size() const {
  const int64_t n = dataset_.size();
  return options_.last_batch == LastBatch::kKeep ? (n + batch_size_ - 1) / batch_size_ : n / batch_size_;
}

std::vector<std::vector<int64_t>> DataLoader::next_epoch() {
  std::vector<int64_t> order(static_cast<size_t>(dataset_.size()));
  std::iota(order.begin(), order.end(), int64_t{0});
  if (options_.shuffle) std::shuffle(order.begin(), order.end(), generator_);
  order.insert(order.begin(), carry_.begin(), carry_.end());
  carry_.clear();
  std::vector<std::vector<int64_t>> batches;
  const auto batch = static_cast<size_t>(batch_size_);
  size_t start = 0;
  for (; start + batch <= order.size(); start += batch)
    batches.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                         order.begin() + static_cast<std::ptrdiff_t>(start + batch));
  if (start < order.size()) {
    std::vector<int64_t> rest(order.begin() + static_cast<std::ptrdiff_t>(start), order.end());
    if (options_.last_batch == LastBatch::kKeep) batches.push_back(std::move(rest));
    if (options_.last_batch == LastBatch::kRollover) carry_ = std::move(rest);
  }
  return batches;
}

DataLoader::Iterator DataLoader::begin() {
  return Iterator(this, next_epoch(), 0);
}

DataLoader::Iterator DataLoader::end() {
  return Iterator(this, {}, static_cast<size_t>(-1));
}

DataLoader::Iterator::Iterator(const DataLoader* loader, std::vector<std::vector<int64_t>> batches,
                               size_t position)
    : loader_(loader), batches_(std::move(batches)), position_(position) {
  if (position_ != static_cast<size_t>(-1)) load();
}

void DataLoader::Iterator::load() {
  if (position_ >= batches_.size()) {
    position_ = static_cast<size_t>(-1);
    batch_.clear();
    return;
  }
  batch_ = loader_->dataset_.gather(batches_[position_]);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++position_;
  load();
  return *this;
}

}  // namespace kiln::nn
