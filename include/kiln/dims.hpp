// Dims: a list of int64 extents or strides that keeps up to kInline values inside the object.
// Shapes and strides are copied on every NDArray call (into op calls, views, inferred types);
// with std::vector each copy was a heap allocation, and for a small op those allocations cost
// more than the arithmetic. Converts to and from std::vector<int64_t> so callers can keep using
// vectors.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

class Dims {
 public:
  // Tensors rarely have more than 6 axes; longer lists live on the heap.
  static constexpr size_t kInline = 6;

  Dims() = default;
  Dims(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  Dims(const std::vector<int64_t>& values) {
    assign(values.data(), values.data() + values.size());
  }  // NOLINT
  Dims(size_t count, int64_t value) { resize(count, value); }
  Dims(const Dims&) = default;
  Dims& operator=(const Dims&) = default;
  // A moved-from Dims is empty (its heap values, if any, went to the new one).
  Dims(Dims&& other) noexcept : size_(other.size_), heap_(std::move(other.heap_)) {
    std::copy(other.inline_, other.inline_ + kInline, inline_);
    other.clear();
  }
  Dims& operator=(Dims&& other) noexcept {
    if (this != &other) {
      std::copy(other.inline_, other.inline_ + kInline, inline_);
      size_ = other.size_;
      heap_ = std::move(other.heap_);
      other.clear();
    }
    return *this;
  }
  template <typename It>
  requires(!std::is_integral_v<It>) Dims(It first, It last) {
    for (; first != last; ++first) push_back(static_cast<int64_t>(*first));
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const int64_t* data() const { return size_ <= kInline ? inline_ : heap_.data(); }
  int64_t* data() { return size_ <= kInline ? inline_ : heap_.data(); }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t front() const { return data()[0]; }
  int64_t back() const { return data()[size_ - 1]; }

  void push_back(int64_t value) {
    if (size_ < kInline) {
      inline_[size_++] = value;
      return;
    }
    if (size_ == kInline) heap_.assign(inline_, inline_ + kInline);
    heap_.push_back(value);
    ++size_;
  }
  void resize(size_t count, int64_t value = 0) {
    while (size_ > count) pop_back();
    while (size_ < count) push_back(value);
  }
  void pop_back() {
    if (size_ == kInline + 1) {
      std::copy(heap_.begin(), heap_.begin() + kInline, inline_);
      heap_.clear();
    } else if (size_ > kInline) {
      heap_.pop_back();
    }
    --size_;
  }
  void clear() {
    heap_.clear();
    size_ = 0;
  }

  operator std::vector<int64_t>() const { return std::vector<int64_t>(begin(), end()); }  // NOLINT
  std::vector<int64_t> to_vector() const { return std::vector<int64_t>(begin(), end()); }

  friend bool operator==(const Dims& a, const Dims& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }
  friend bool operator==(const Dims& a, const std::vector<int64_t>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  template <typename It>
  void assign(It first, It last) {
    for (; first != last; ++first) push_back(*first);
  }

  // Values are in inline_ while size_ <= kInline, otherwise all of them are in heap_.
  int64_t inline_[kInline] = {};
  size_t size_ = 0;
  std::vector<int64_t> heap_;
};

}  // namespace kiln
