// Conversions between Python values and Kiln's dtypes, shapes and op attributes.
#include <pybind11/stl.h>

#include "bindings.h"

namespace kiln::python {

py::object numpy_type(DType dtype) {
  static py::object np_dtype = py::module_::import("numpy").attr("dtype");
  if (dtype == DType::kBFloat16) return py::str("bfloat16");  // numpy has no bfloat16
  if (is_string(dtype)) return np_dtype("str").attr("type");  // numpy.str_
  return np_dtype(dtype_name(dtype)).attr("type");
}

DType dtype_from_py(const py::handle& value) {
  if (value.is_none()) return DType::kFloat32;
  if (py::isinstance<py::str>(value)) return dtype_from_name(value.cast<std::string>());
  static py::object np_dtype = py::module_::import("numpy").attr("dtype");
  return dtype_from_name(np_dtype(value).attr("name").cast<std::string>());
}

Shape shape_from_py(const py::handle& value) {
  if (py::isinstance<py::int_>(value)) return Shape{value.cast<int64_t>()};
  std::vector<int64_t> dims;
  for (const py::handle d : value) dims.push_back(d.cast<int64_t>());
  return Shape(std::move(dims));
}

py::tuple shape_to_py(const Shape& shape) {
  py::tuple t(shape.ndim());
  for (int i = 0; i < shape.ndim(); ++i) t[static_cast<size_t>(i)] = py::int_(shape[i]);
  return t;
}

namespace {

AttrValue attr_from_py(const py::handle& v, const std::string& where) {
  if (py::isinstance<py::bool_>(v)) return AttrValue(v.cast<bool>());
  if (py::isinstance<py::int_>(v)) return AttrValue(v.cast<int64_t>());
  if (py::isinstance<py::float_>(v)) return AttrValue(v.cast<double>());
  if (py::isinstance<py::str>(v)) return AttrValue(v.cast<std::string>());
  if (py::isinstance<NDArray>(v)) return AttrValue(v.cast<NDArray>().tensor().contiguous());
  if (py::isinstance<py::sequence>(v)) {
    const auto seq = v.cast<py::sequence>();
    bool all_int = true, all_str = seq.size() > 0;
    for (const py::handle e : seq) {
      all_int &= py::isinstance<py::int_>(e);
      all_str &= py::isinstance<py::str>(e);
    }
    if (all_str) return AttrValue(seq.cast<std::vector<std::string>>());
    if (all_int) return AttrValue(seq.cast<std::vector<int64_t>>());
    return AttrValue(seq.cast<std::vector<double>>());
  }
  raise(ErrorCode::kInvalidArgument, where, ": cannot pass a value of Python type ",
        py::str(py::type::handle_of(v).attr("__name__")).cast<std::string>(), " as an attribute");
}

}  // namespace

AttrMap attrs_from_py(const py::dict& attrs, const std::string& op) {
  AttrMap out;
  for (const auto& [key, value] : attrs) {
    const std::string name = key.cast<std::string>();
    out.emplace(name, attr_from_py(value, op + ": attribute '" + name + "'"));
  }
  return out;
}

}  // namespace kiln::python
