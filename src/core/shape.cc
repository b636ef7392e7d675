#include "kiln/shape.hpp"

#include <algorithm>
#include <sstream>

#include "kiln/error.hpp"

namespace kiln {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : dims_) {
    if (d < 0) return kUnknown;
    if (d == 0) n = 0;
  }
  if (n == 0) return 0;
  for (int64_t d : dims_) {
    // Shapes come from files and callers: a product past int64 is an error, not a wrap-around.
    KILN_CHECK(!__builtin_mul_overflow(n, d, &n), ErrorCode::kOutOfRange, "shape ", to_string(),
               " has more elements than a 64-bit count can hold");
  }
  return n;
}

bool Shape::is_known() const {
  return std::all_of(dims_.begin(), dims_.end(), [](int64_t d) { return d >= 0; });
}

std::string Shape::to_string() const {
  std::ostringstream os;
  os << '(';
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) os << ", ";
    if (dims_[i] < 0) {
      os << '?';
    } else {
      os << dims_[i];
    }
  }
  if (dims_.size() == 1) os << ',';
  os << ')';
  return os.str();
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> strides(static_cast<size_t>(shape.ndim()));
  // Unsigned arithmetic: with a zero dimension elsewhere, the product of the other dimensions
  // may exceed int64 (the strides of an empty tensor are never used, but must not overflow).
  uint64_t s = 1;
  for (int i = shape.ndim() - 1; i >= 0; --i) {
    strides[static_cast<size_t>(i)] = static_cast<int64_t>(s);
    s *= static_cast<uint64_t>(std::max<int64_t>(shape[i], 1));
  }
  return strides;
}

int normalize_axis(int64_t axis, int ndim, const std::string& what) {
  const int64_t lo = -static_cast<int64_t>(ndim);
  KILN_CHECK(axis >= lo && axis < ndim, ErrorCode::kOutOfRange, what, ": axis ", axis,
             " is out of range for a tensor of rank ", ndim, " (expected ", lo, " <= axis < ", ndim, ")");
  return static_cast<int>(axis < 0 ? axis + ndim : axis);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const std::string& what) {
  const int n = std::max(a.ndim(), b.ndim());
  std::vector<int64_t> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const int ia = a.ndim() - n + i, ib = b.ndim() - n + i;
    const int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
    int64_t d;
    if (da == db || db == 1) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else if (da < 0 || db < 0) {
      d = da < 0 ? db : da;  // an unknown dimension must equal the known one (or be 1)
    } else {
      raise(ErrorCode::kShapeMismatch, what, ": shapes ", a, " and ", b,
            " cannot be broadcast together (dimension ", i, ": ", da, " vs ", db, ")");
    }
    out[static_cast<size_t>(i)] = d;
  }
  return Shape(std::move(out));
}

}  // namespace kiln
