// NDArray: the imperative, asynchronous array of Kiln's MXNet-style API.
//
// Every op on NDArrays is pushed to the dependency engine and returns at once; the result's
// shape and dtype are known immediately (inference runs at the call, so shape errors are thrown
// there), its values once the op has run. Reading values (to_vector, data, tensor, to_string)
// and wait_to_read() synchronize; an error raised inside an op is rethrown at that point.
//
// Views: reshape (of a contiguous array), slice and transpose return views sharing storage,
// and writes through a view are seen by every array sharing that storage. copy() and astype()
// make new storage.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/device.hpp"
#include "kiln/dtype.hpp"
#include "kiln/shape.hpp"
#include "kiln/tensor.hpp"

namespace kiln {

namespace detail {
struct Chunk;          // the storage's engine variable, shared by all views of one storage
struct AutogradEntry;  // the array's place in a graph recorded by autograd (src/autograd)
}  // namespace detail

// How backward() writes an array's gradient buffer: overwrite it, add to it, or leave it alone.
enum class GradReq { kNull, kWrite, kAdd };

class NDArray {
 public:
  NDArray() = default;  // undefined
  // Wraps a tensor whose values are ready now.
  explicit NDArray(Tensor tensor);

  bool defined() const { return chunk_ != nullptr; }
  const Shape& shape() const { return view_.shape(); }
  DType dtype() const { return view_.dtype(); }
  Device device() const { return view_.device(); }
  int ndim() const { return view_.ndim(); }
  int64_t size() const { return view_.numel(); }

  // Views (no copy). reshape accepts one -1 for the dimension to infer; it copies (async)
  // when the array is not contiguous.
  NDArray reshape(const Shape& shape) const;
  NDArray slice(int64_t axis, int64_t begin, int64_t end, int64_t step = 1) const;
  NDArray transpose(std::vector<int64_t> perm = {}) const;  // default: reverse the axes
  // (d0, d1, ..., dk) -> (d0, d1 * ... * dk), MXNet's Flatten (a 0-d array gives (1, 1)).
  // Recorded as Flatten (axis 1) rather than a Reshape to d0, so a traced graph keeps its first
  // dimension free.
  NDArray flatten() const;
  NDArray T() const { return transpose(); }
  NDArray at(int64_t index) const;  // index along axis 0, dropping that axis

  // Copies (async).
  NDArray copy() const;
  NDArray copyto(Device device) const;
  NDArray astype(DType dtype) const;

  // Synchronization.
  void wait_to_read() const;   // waits for pending writes; rethrows their error
  void wait_to_write() const;  // also waits for pending reads
  Tensor tensor() const;       // waits, then returns the (possibly strided) view
  template <class T>
  std::vector<T> to_vector() const {
    return tensor().to_vector<T>();
  }
  // Waits and returns a pointer to the first element; the array must be contiguous.
  template <class T>
  const T* data() const {
    return static_cast<const T*>(contiguous_data(dtype_of<T>));
  }
  std::string to_string() const;

  // In place: the result is written into this array's storage; no allocation.
  NDArray& operator+=(const NDArray& other);
  NDArray& operator-=(const NDArray& other);
  NDArray& operator*=(const NDArray& other);
  NDArray& operator/=(const NDArray& other);
  NDArray& operator+=(double scalar);
  NDArray& operator-=(double scalar);
  NDArray& operator*=(double scalar);
  NDArray& operator/=(double scalar);

  // Autograd (kiln/autograd.hpp): marks this array as a variable with a zeroed gradient buffer,
  // returns that buffer, and runs backward from this array (head_grad: ones when undefined).
  void attach_grad(GradReq req = GradReq::kWrite);
  NDArray grad() const;
  void backward(const NDArray& head_grad = NDArray(), bool retain_graph = false) const;

  // For the layers above (autograd, executors): the view and its dependency chunk.
  const Tensor& view() const { return view_; }
  const std::shared_ptr<detail::Chunk>& chunk() const { return chunk_; }
  NDArray(std::shared_ptr<detail::Chunk> chunk, Tensor view)
      : chunk_(std::move(chunk)), view_(std::move(view)) {}
  const std::shared_ptr<detail::AutogradEntry>& autograd_entry() const { return autograd_; }
  void set_autograd_entry(std::shared_ptr<detail::AutogradEntry> entry) { autograd_ = std::move(entry); }

 private:
  const void* contiguous_data(DType expected) const;

  std::shared_ptr<detail::Chunk> chunk_;
  Tensor view_;
  std::shared_ptr<detail::AutogradEntry> autograd_;  // null unless recorded or attach_grad()
};

std::ostream& operator<<(std::ostream& os, const NDArray& a);

namespace nd {

// Creation. Arrays are float32 unless a dtype is given.
NDArray empty(const Shape& shape, DType dtype = DType::kFloat32, Device device = cpu());
NDArray zeros(const Shape& shape, DType dtype = DType::kFloat32, Device device = cpu());
NDArray ones(const Shape& shape, Device device);
NDArray ones(const Shape& shape, DType dtype = DType::kFloat32, Device device = cpu());
NDArray full(const Shape& shape, double value, DType dtype = DType::kFloat32, Device device = cpu());
NDArray scalar(double value, DType dtype = DType::kFloat32);
NDArray arange(double start, double stop, double step = 1, DType dtype = DType::kFloat32);
template <class T>
NDArray array(const std::vector<T>& values, const Shape& shape) {
  return NDArray(Tensor::from_vector(values, shape));
}

// Runs any registered op: inputs may be undefined NDArrays for missing optional inputs.
std::vector<NDArray> invoke(const std::string& op, const std::vector<NDArray>& inputs,
                            const AttrMap& attrs = {}, int num_outputs = -1);
NDArray invoke1(const std::string& op, const std::vector<NDArray>& inputs, const AttrMap& attrs = {});
// Runs an op writing into existing arrays, whose shapes and dtypes must match the op's result.
void invoke_into(const std::string& op, const std::vector<NDArray>& inputs,
                 const std::vector<NDArray>& outputs, const AttrMap& attrs = {});

// Waits for every pushed op; rethrows the first error since the last call.
void waitall();

// Arithmetic with numpy broadcasting. Scalars take the array's dtype.
NDArray add(const NDArray& a, const NDArray& b);
NDArray subtract(const NDArray& a, const NDArray& b);
NDArray multiply(const NDArray& a, const NDArray& b);
NDArray divide(const NDArray& a, const NDArray& b);
NDArray power(const NDArray& a, const NDArray& b);
NDArray maximum(const NDArray& a, const NDArray& b);
NDArray minimum(const NDArray& a, const NDArray& b);
NDArray equal(const NDArray& a, const NDArray& b);
NDArray less(const NDArray& a, const NDArray& b);
NDArray greater(const NDArray& a, const NDArray& b);
NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y);

// Matrix product (MatMul semantics: batched and broadcasting for rank > 2).
NDArray dot(const NDArray& a, const NDArray& b);

// Unary math.
NDArray abs(const NDArray& x);
NDArray exp(const NDArray& x);
NDArray log(const NDArray& x);
NDArray sqrt(const NDArray& x);
NDArray relu(const NDArray& x);
NDArray sigmoid(const NDArray& x);
NDArray tanh(const NDArray& x);
NDArray softmax(const NDArray& x, int64_t axis = -1);

// Reductions over `axes` (all axes when empty).
NDArray sum(const NDArray& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
NDArray mean(const NDArray& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
NDArray max(const NDArray& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
NDArray min(const NDArray& x, const std::vector<int64_t>& axes = {}, bool keepdims = false);
NDArray argmax(const NDArray& x, int64_t axis = 0, bool keepdims = false);

// Shape manipulation (these produce new arrays; NDArray::reshape/slice/transpose are views).
NDArray concat(const std::vector<NDArray>& arrays, int64_t axis);
NDArray cast(const NDArray& x, DType dtype);

}  // namespace nd

NDArray operator+(const NDArray& a, const NDArray& b);
NDArray operator-(const NDArray& a, const NDArray& b);
NDArray operator*(const NDArray& a, const NDArray& b);
NDArray operator/(const NDArray& a, const NDArray& b);
NDArray operator+(const NDArray& a, double b);
NDArray operator-(const NDArray& a, double b);
NDArray operator*(const NDArray& a, double b);
NDArray operator/(const NDArray& a, double b);
NDArray operator+(double a, const NDArray& b);
NDArray operator-(double a, const NDArray& b);
NDArray operator*(double a, const NDArray& b);
NDArray operator/(double a, const NDArray& b);
NDArray operator-(const NDArray& a);

}  // namespace kiln
