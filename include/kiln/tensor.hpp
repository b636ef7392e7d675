// Tensor: a typed, shaped view (shape, strides, offset) of a Storage. Synchronous: it is what
// kernels read and write. Users normally hold NDArray, which adds asynchronous execution.
//
// Views share storage with their source: reshape (of a contiguous tensor), slice along an axis
// and transpose are all views; contiguous() copies only when the layout is not row-major.
//
// A Tensor may also hold a sequence (ONNX's sequence type): an ordered list of tensors of one
// element type whose shapes may differ, made by Tensor::sequence. It has no data of its own:
// dtype() is its elements' type, shape() is (0,), and elements() reads it. A sequence is
// immutable; the ops that change one make another that shares the untouched elements.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/shape.hpp"
#include "kiln/storage.hpp"

namespace kiln {

class Tensor {
 public:
  Tensor() = default;  // undefined: no storage (e.g. a missing optional input)
  Tensor(std::shared_ptr<Storage> storage, Shape shape, DType dtype, Dims strides = {}, int64_t offset = 0);

  static Tensor empty(const Shape& shape, DType dtype, Device device = cpu());
  static Tensor zeros(const Shape& shape, DType dtype, Device device = cpu());
  static Tensor full(const Shape& shape, double value, DType dtype, Device device = cpu());
  // A 0-d tensor holding `value` converted to `dtype`; its bytes live inside the Storage object.
  static Tensor scalar(double value, DType dtype);
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
  // A sequence of `elements` (tensors of `element_dtype`, none a sequence itself).
  static Tensor sequence(DType element_dtype, std::vector<Tensor> elements);

  bool defined() const { return storage_ != nullptr || elements_ != nullptr; }
  bool is_sequence() const { return elements_ != nullptr; }
  const std::vector<Tensor>& elements() const;  // a sequence's tensors; throws for a tensor
  const Shape& shape() const { return shape_; }
  int ndim() const { return shape_.ndim(); }
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device() : cpu(); }
  size_t itemsize() const { return dtype_size(dtype_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * itemsize(); }
  const Dims& strides() const { return strides_; }  // in elements
  int64_t offset() const { return offset_; }        // in elements
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;

  // Pointer to the first element. The typed form checks the dtype.
  void* raw_data() const;
  template <class T>
  T* data() const {
    check_dtype(dtype_of<T>, "Tensor::data");
    return static_cast<T*>(raw_data());
  }
  // Reads a single element of a tensor with one element (any rank), converted to double.
  double item() const;

  // Views sharing storage.
  Tensor reshape(const Shape& shape) const;  // must be contiguous and keep numel
  Tensor slice(int64_t axis, int64_t begin, int64_t end, int64_t step = 1) const;
  Tensor transpose(const std::vector<int64_t>& perm) const;
  Tensor as_strided(const Shape& shape, Dims strides, int64_t offset) const;

  // Copies.
  Tensor contiguous() const;  // itself when already contiguous
  Tensor clone() const;       // always a fresh contiguous copy
  // A copy converted to `dtype`; `options` matter when it is a storage float (dtype.hpp).
  Tensor cast(DType dtype, const CastOptions& options = {}) const;
  void copy_from(const Tensor& src);  // same shape and dtype; any strides on both sides

  template <class T>
  std::vector<T> to_vector() const;

  std::string to_string(int64_t max_elements = 1000) const;  // values (numpy style), shape, dtype
  void check_dtype(DType expected, const std::string& what) const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_;
  DType dtype_ = DType::kFloat32;
  Dims strides_;
  int64_t offset_ = 0;
  std::shared_ptr<const std::vector<Tensor>> elements_;  // set for a sequence only
};

template <class T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
  KILN_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), ErrorCode::kShapeMismatch,
             "Tensor::from_vector: ", values.size(), " values do not fill shape ", shape, " (", shape.numel(),
             " elements)");
  Tensor t = empty(shape, dtype_of<T>);
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <class T>
std::vector<T> Tensor::to_vector() const {
  check_dtype(dtype_of<T>, "Tensor::to_vector");
  const Tensor c = contiguous();
  const T* p = c.data<T>();
  return std::vector<T>(p, p + c.numel());
}

}  // namespace kiln
