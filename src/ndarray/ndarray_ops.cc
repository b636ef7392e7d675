// The named NDArray functions and operators: thin calls of registered ops.
#include "kiln/ndarray.hpp"

namespace kiln {

namespace {
NDArray like(const NDArray& a, double value) {
  return nd::scalar(value, a.dtype());
}

NDArray reduce(const char* op, const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  std::vector<NDArray> inputs{x};
  if (!axes.empty()) inputs.push_back(nd::array(axes, Shape{static_cast<int64_t>(axes.size())}));
  return nd::invoke1(op, inputs, {{"keepdims", keepdims}});
}
}  // namespace

namespace nd {

NDArray add(const NDArray& a, const NDArray& b) {
  return invoke1("Add", {a, b});
}
NDArray subtract(const NDArray& a, const NDArray& b) {
  return invoke1("Sub", {a, b});
}
NDArray multiply(const NDArray& a, const NDArray& b) {
  return invoke1("Mul", {a, b});
}
NDArray divide(const NDArray& a, const NDArray& b) {
  return invoke1("Div", {a, b});
}
NDArray power(const NDArray& a, const NDArray& b) {
  return invoke1("Pow", {a, b});
}
NDArray maximum(const NDArray& a, const NDArray& b) {
  return invoke1("Max", {a, b});
}
NDArray minimum(const NDArray& a, const NDArray& b) {
  return invoke1("Min", {a, b});
}
NDArray equal(const NDArray& a, const NDArray& b) {
  return invoke1("Equal", {a, b});
}
NDArray less(const NDArray& a, const NDArray& b) {
  return invoke1("Less", {a, b});
}
NDArray greater(const NDArray& a, const NDArray& b) {
  return invoke1("Greater", {a, b});
}
NDArray where(const NDArray& condition, const NDArray& x, const NDArray& y) {
  return invoke1("Where", {condition, x, y});
}
NDArray dot(const NDArray& a, const NDArray& b) {
  return invoke1("MatMul", {a, b});
}

NDArray abs(const NDArray& x) {
  return invoke1("Abs", {x});
}
NDArray exp(const NDArray& x) {
  return invoke1("Exp", {x});
}
NDArray log(const NDArray& x) {
  return invoke1("Log", {x});
}
NDArray sqrt(const NDArray& x) {
  return invoke1("Sqrt", {x});
}
NDArray relu(const NDArray& x) {
  return invoke1("Relu", {x});
}
NDArray sigmoid(const NDArray& x) {
  return invoke1("Sigmoid", {x});
}
NDArray tanh(const NDArray& x) {
  return invoke1("Tanh", {x});
}
NDArray softmax(const NDArray& x, int64_t axis) {
  return invoke1("Softmax", {x}, {{"axis", axis}});
}

NDArray sum(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce("ReduceSum", x, axes, keepdims);
}
NDArray mean(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce("ReduceMean", x, axes, keepdims);
}
NDArray max(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce("ReduceMax", x, axes, keepdims);
}
NDArray min(const NDArray& x, const std::vector<int64_t>& axes, bool keepdims) {
  return reduce("ReduceMin", x, axes, keepdims);
}
NDArray argmax(const NDArray& x, int64_t axis, bool keepdims) {
  return invoke1("ArgMax", {x}, {{"axis", axis}, {"keepdims", keepdims}});
}

NDArray concat(const std::vector<NDArray>& arrays, int64_t axis) {
  return invoke1("Concat", arrays, {{"axis", axis}});
}
NDArray cast(const NDArray& x, DType dtype) {
  return invoke1("Cast", {x}, {{"to", static_cast<int64_t>(dtype_to_onnx(dtype))}});
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
  return nd::invoke1("Neg", {a});
}

NDArray& NDArray::operator+=(const NDArray& other) {
  nd::invoke_into("Add", {*this, other}, {*this});
  return *this;
}
NDArray& NDArray::operator-=(const NDArray& other) {
  nd::invoke_into("Sub", {*this, other}, {*this});
  return *this;
}
NDArray& NDArray::operator*=(const NDArray& other) {
  nd::invoke_into("Mul", {*this, other}, {*this});
  return *this;
}
NDArray& NDArray::operator/=(const NDArray& other) {
  nd::invoke_into("Div", {*this, other}, {*this});
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
