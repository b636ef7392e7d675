// Shape: the extent of each axis. A dimension of -1 is unknown (e.g. a free batch dimension
// while a graph is being typed); tensors that hold data always have known dimensions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/dims.hpp"

namespace kiln {

class Shape {
 public:
  static constexpr int64_t kUnknown = -1;

  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : dims_(dims) {}
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
  explicit Shape(Dims dims) : dims_(std::move(dims)) {}

  int ndim() const { return static_cast<int>(dims_.size()); }
  int64_t operator[](int axis) const { return dims_[static_cast<size_t>(axis)]; }
  int64_t& operator[](int axis) { return dims_[static_cast<size_t>(axis)]; }
  // Element count; -1 when any dimension is unknown. The empty shape (a scalar) has one element.
  int64_t numel() const;
  bool is_known() const;

  // A copy: the extents are stored inline (Dims), not in a vector. extents() reads them in place.
  std::vector<int64_t> dims() const { return dims_.to_vector(); }
  const Dims& extents() const { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  void push_back(int64_t d) { dims_.push_back(d); }

  std::string to_string() const;  // "(3, 4)", "()" for a scalar, "?" for unknown dims
  bool operator==(const Shape& o) const { return dims_ == o.dims_; }
  bool operator!=(const Shape& o) const { return dims_ != o.dims_; }

 private:
  Dims dims_;
};

inline std::ostream& operator<<(std::ostream& os, const Shape& s) {
  return os << s.to_string();
}

// Row-major strides, in elements.
std::vector<int64_t> contiguous_strides(const Shape& shape);

// Maps a possibly negative axis into [0, ndim); throws kiln::Error(kOutOfRange) naming `what`.
int normalize_axis(int64_t axis, int ndim, const std::string& what);

// numpy broadcasting of two shapes; throws kiln::Error(kShapeMismatch) naming `what`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what);

}  // namespace kiln
