// Shared pieces of the Python bindings (kiln._kiln): one bind_* function per area, and the
// conversions between Python values and Kiln's shapes, dtypes and attributes that they all use.
#pragma once

#include <pybind11/pybind11.h>

#include <kiln/attrs.hpp>
#include <kiln/dtype.hpp>
#include <kiln/ndarray.hpp>
#include <kiln/shape.hpp>

namespace kiln::python {

namespace py = pybind11;

void bind_errors(py::module_& m);
void bind_ndarray(py::module_& m);
// Called by bind_ndarray once the arithmetic operators are bound (ndarray_fast_path.cc).
void bind_ndarray_fast_path(py::class_<NDArray>& cls);
void bind_random(py::module_& m);
void bind_autograd(py::module_& m);
void bind_gluon(py::module_& m);
void bind_symbol(py::module_& m);
void bind_predictor(py::module_& m);
void bind_profiler(py::module_& m);
void bind_quantization(py::module_& m);

// numpy's scalar type for a dtype (numpy.float32, ...), as MXNet's NDArray.dtype answers.
py::object numpy_type(DType dtype);
// A dtype from a name ("float32"), a numpy dtype or scalar type, or None (float32).
DType dtype_from_py(const py::handle& value);
// A shape from an int or a sequence of ints.
Shape shape_from_py(const py::handle& value);
py::tuple shape_to_py(const Shape& shape);
// Op attributes from keyword arguments: bool and int -> int, float, str, sequences of those,
// NDArray -> its values as a tensor. `op` names the call in errors.
AttrMap attrs_from_py(const py::dict& attrs, const std::string& op);

}  // namespace kiln::python
