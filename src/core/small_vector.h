// SmallVector: a vector that keeps up to N elements inside the object. For the short lists built
// on every NDArray call (the engine's read and write variables): with std::vector each list was a
// heap allocation, which for a small op costs more than the list is ever used for.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <utility>
#include <vector>

namespace kiln {

// T must be default-constructible and movable; the inline slots past size() hold default values
// (so a list of shared_ptrs releases what it held when it shrinks).
template <class T, size_t N>
class SmallVector {
 public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> values) {
    for (const T& v : values) push_back(v);
  }
  SmallVector(const SmallVector&) = default;
  SmallVector& operator=(const SmallVector&) = default;
  // A moved-from SmallVector is empty. Only the elements in use move: the slots past size()
  // already hold default values on both sides.
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      clear();
      take(other);
    }
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* data() const { return size_ <= N ? inline_ : heap_.data(); }
  T* data() { return size_ <= N ? inline_ : heap_.data(); }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& operator[](size_t i) { return data()[i]; }

  void push_back(T value) {
    if (size_ < N) {
      inline_[size_++] = std::move(value);
      return;
    }
    if (size_ == N) {
      heap_.reserve(2 * N);
      for (T& v : inline_) heap_.push_back(std::exchange(v, T()));
    }
    heap_.push_back(std::move(value));
    ++size_;
  }
  void pop_back() {
    if (size_ == N + 1) {
      for (size_t i = 0; i < N; ++i) inline_[i] = std::move(heap_[i]);
      heap_.clear();
    } else if (size_ > N) {
      heap_.pop_back();
    } else {
      inline_[size_ - 1] = T();
    }
    --size_;
  }
  // Shrinks to `count` elements (growing is push_back's job).
  void truncate(size_t count) {
    while (size_ > count) pop_back();
  }
  void clear() { truncate(0); }

 private:
  // Moves `other`'s elements into this empty list and leaves `other` empty.
  void take(SmallVector& other) noexcept {
    if (other.size_ <= N) {
      for (size_t i = 0; i < other.size_; ++i) inline_[i] = std::exchange(other.inline_[i], T());
    } else {
      heap_ = std::move(other.heap_);
      other.heap_.clear();
    }
    size_ = std::exchange(other.size_, 0);
  }

  // Elements are in inline_ while size_ <= N, otherwise all of them are in heap_.
  T inline_[N] = {};
  size_t size_ = 0;
  std::vector<T> heap_;
};

}  // namespace kiln
