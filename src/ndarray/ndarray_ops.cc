// The named NDArray functions and operators: thin calls of registered ops.
#include <array>
#include <span>

#include "kiln/ndarray.hpp"
#include "ndarray/op_call.h"

namespace kiln {

namespace {
NDArray like(const NDArray& a, double value) {
  return nd::scalar(value, a.dtype());
}

// Runs the registered op `Name` (looked up once) on `inputs`.
template <detail::OpName Name, class... Arrays>
NDArray call(const AttrMap& attrs, const Arrays&... inputs) {
  const std::array<const NDArray*, sizeof...(Arrays)> refs{&inputs...};
  return detail::call1(detail::schema_of<Name>(), refs, attrs);
}

// Runs the registered op `Name` on `a` and `b`, writing into `a`.
template <detail::OpName Name>
void call_in_place(NDArray& a, const NDArray& b) {
  const std::array<const NDArray*, 2> inputs{&a, &b};
  const NDArray* output = &a;
  detail::call_into(detail::schema_of<Name>(), inputs, std::span(&output, 1));
}

template <detail::OpName Name>
NDArray reduce(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  if (axes.empty()) return call<Name>({{"keepdims", keepdims}}, x);
  return call<Name>({{"keepdims", keepdims}}, x, nd::array(axes, Shape{static_cast<int64_t>(axes.size())}));
}
}  // namespace

namespace nd {

NDArray add(const NDArray& a, const NDArray& b) {
  return call<"Add">({}, a, b);
}
NDArray subtract(const NDArray& a, const NDArray& b) {
  return call<"Sub">({}, a, b);
}
NDArray multiply(const NDArray& a, const NDArray& b) {
  return call<"Mul">({}, a, b);
}
NDArray divide(const NDArray& a, const NDArray& b) {
  return call<"Div">({}, a, b);
}
NDArray power(const NDArray& a, const NDArray& b) {
  return call<"Pow">({}, a, b);
}
NDArray maximum(const NDArray& a, const NDArray& b) {
  return call<"Max">({}, a, b);
}
NDArray minimum(const NDArray& a, const NDArray& b) {
  return call<"Min">({}, a, b);
}
NDArray equal(const NDArray& a, const NDArray& b) {
  return call<"Equal">({}, a, b);
}
NDArray less(const NDArray& a, const NDArray& b) {
  return call<"Less">({}, a, b);
}
NDArray greater(const NDArray& a, const NDArray& b) {
  return call<"Greater">({}, a, b);
}
NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y) {
  return call<"Where">({}, condition, x, y);
}
NDArray dot(const NDArray& a, const NDArray& b) {
  return call<"MatMul">({}, a, b);
}

NDArray abs(const NDArray& x) {
  return call<"Abs">({}, x);
}
NDArray exp(const NDArray& x) {
  return call<"Exp">({}, x);
}
NDArray log(const NDArray& x) {
  return call<"Log">({}, x);
}
NDArray sqrt(const NDArray& x) {
  return call<"Sqrt">({}, x);
}
NDArray relu(const NDArray& x) {
  return call<"Relu">({}, x);
}
NDArray sigmoid(const NDArray& x) {
  return call<"Sigmoid">({}, x);
}
NDArray tanh(const NDArray& x) {
  return call<"Tanh">({}, x);
}
NDArray softmax(const NDArray& x, int64_t axis) {
  return call<"Softmax">({{"axis", axis}}, x);
}

NDArray sum(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce<"ReduceSum">(x, axes, keepdims);
}
NDArray mean(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce<"ReduceMean">(x, axes, keepdims);
}
NDArray max(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce<"ReduceMax">(x, axes, keepdims);
}
NDArray min(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce<"ReduceMin">(x, axes, keepdims);
}
NDArray argmax(const NDArray& x, int64_t axis, bool keepdims) {
  return call<"ArgMax">({{"axis", axis}, {"keepdims", keepdims}}, x);
}

NDArray concat(const std::vector<NDArray>& arrays, int64_t axis) {
  return invoke1("Concat", arrays, {{"axis", axis}});
}
NDArray cast(const NDArray& x, DType dtype) {
  return call<"Cast">({{"to", static_cast<int64_t>(dtype_to_onnx(dtype))}}, x);
}

}  // namespace nd

NDArray operator+(const NDArray& a, const NDArray& b) {
  return nd::add(a, b);
}
NDArray operator-(const NDArray& a, const NDArray& b) {
  return nd::subtract(a, b);
}
NDArray operator*(const NDArray& a, const NDArray& b) {
  return nd::multiply(a, b);
}
NDArray operator/(const NDArray& a, const NDArray& b) {
  return nd::divide(a, b);
}
NDArray operator+(const NDArray& a, double b) {
  return nd::add(a, like(a, b));
}
NDArray operator-(const NDArray& a, double b) {
  return nd::subtract(a, like(a, b));
}
NDArray operator*(const NDArray& a, double b) {
  return nd::multiply(a, like(a, b));
}
NDArray operator/(const NDArray& a, double b) {
  return nd::divide(a, like(a, b));
}
NDArray operator+(double a, const NDArray& b) {
  return nd::add(like(b, a), b);
}
NDArray operator-(double a, const NDArray& b) {
  return nd::subtract(like(b, a), b);
}
NDArray operator*(double a, const NDArray& b) {
  return nd::multiply(like(b, a), b);
}
NDArray operator/(double a, const NDArray& b) {
  return nd::divide(like(b, a), b);
}
NDArray operator-(const NDArray& a) {
  return call<"Neg">({}, a);
}

NDArray& NDArray::operator+=(const NDArray& other) {
  call_in_place<"Add">(*this, other);
  return *this;
}
NDArray& NDArray::operator-=(const NDArray& other) {
  call_in_place<"Sub">(*this, other);
  return *this;
}
NDArray& NDArray::operator*=(const NDArray& other) {
  call_in_place<"Mul">(*this, other);
  return *this;
}
NDArray& NDArray::operator/=(const NDArray& other) {
  call_in_place<"Div">(*this, other);
  return *this;
}
NDArray& NDArray::operator+=(double s) {
  return *this += like(*this, s);
}
NDArray& NDArray::operator-=(double s) {
  return *this -= like(*this, s);
}
NDArray& NDArray::operator*=(double s) {
  return *this *= like(*this, s);
}
NDArray& NDArray::operator/=(double s) {
  return *this /= like(*this, s);
}

}  // namespace kiln
