// The calls a Python loop over small arrays makes most (`a + b`, `x += 1`, `c.wait_to_read()`),
// bound straight to CPython. Through pybind11 each costs a slot lookup, a bound-method call, the
// overload dispatcher and argument loaders: about 2,500 instructions, a quarter of a small op. Here
// the type's own number slots and a METH_NOARGS method take the common operands (NDArray, Python
// float or int) directly; any other operand goes on to the pybind11 overloads bound in ndarray.cc,
// which stay the one general path (numpy scalars, bools, errors for unsupported operands).
#include <Python.h>

#include <optional>

#include <pybind11/detail/exception_translation.h>
#include <kiln/ndarray.hpp>

#include "bindings.h"
#include "ndarray/read_ready.h"
#include "small_calls.h"

namespace kiln::python {

namespace {

// The NDArray type, written once when the module is imported and only read afterwards.
PyTypeObject*& ndarray_type() {
  static PyTypeObject* type = nullptr;
  return type;
}

// Each operator, out of place (any mix of NDArray and double) and in place, with the names of its
// methods in the general path.
struct Add {
  static constexpr const char* kMethod = "__add__";
  static constexpr const char* kReflected = "__radd__";
  static constexpr const char* kInPlace = "__iadd__";
  static NDArray apply(const auto& a, const auto& b) { return a + b; }
  static void update(NDArray& a, const auto& b) { a += b; }
};
struct Subtract {
  static constexpr const char* kMethod = "__sub__";
  static constexpr const char* kReflected = "__rsub__";
  static constexpr const char* kInPlace = "__isub__";
  static NDArray apply(const auto& a, const auto& b) { return a - b; }
  static void update(NDArray& a, const auto& b) { a -= b; }
};
struct Multiply {
  static constexpr const char* kMethod = "__mul__";
  static constexpr const char* kReflected = "__rmul__";
  static constexpr const char* kInPlace = "__imul__";
  static NDArray apply(const auto& a, const auto& b) { return a * b; }
  static void update(NDArray& a, const auto& b) { a *= b; }
};
struct Divide {
  static constexpr const char* kMethod = "__truediv__";
  static constexpr const char* kReflected = "__rtruediv__";
  static constexpr const char* kInPlace = "__itruediv__";
  static NDArray apply(const auto& a, const auto& b) { return a / b; }
  static void update(NDArray& a, const auto& b) { a /= b; }
};

bool ndarray_of_type(PyObject* o) {
  return PyObject_TypeCheck(o, ndarray_type());
}

// The NDArray `o` holds, or nullptr when `o` is another kind of object or an instance whose
// __init__ never ran (the general path raises for that). Read from pybind11's instance record
// directly: NDArray is the type's only C++ part, so its value is the first one, and this skips the
// type caster's search, which costs as much as the rest of the slot.
NDArray* ndarray_of(PyObject* o) {
  if (!ndarray_of_type(o)) return nullptr;
  const auto value = reinterpret_cast<py::detail::instance*>(o)->get_value_and_holder();
  return value.holder_constructed() ? value.value_ptr<NDArray>() : nullptr;
}

// The value of a Python float or int. Anything else, and an int too large for a double, is left to
// the general path, which converts it or raises the error users already get from it.
std::optional<double> number_of(PyObject* o) {
  if (PyFloat_CheckExact(o)) return PyFloat_AS_DOUBLE(o);
  if (!PyLong_CheckExact(o)) return std::nullopt;
  const double value = PyLong_AsDouble(o);
  if (value == -1.0 && PyErr_Occurred()) {
    PyErr_Clear();
    return std::nullopt;
  }
  return value;
}

// Runs `work` and returns what it returns, giving up the GIL unless the call is small.
template <class Work>
auto run(bool small, Work&& work) {
  if (small) return work();
  py::gil_scoped_release release;
  return work();
}

PyObject* to_python(NDArray&& result) {
  return py::cast(std::move(result)).release().ptr();
}

// What CPython's own slot would do: v's method `method`, then, if it declines (NotImplemented) and w
// is an NDArray, w's reflected method. Called through the type, as Python looks up operators. The
// slot pybind11 installed cannot be reused: CPython's slot functions check that they are the
// type's slot, and answer NotImplemented once replaced.
PyObject* general_path(PyObject* v, const char* method, PyObject* w, const char* reflected) {
  const py::handle left(v), right(w);
  try {
    if (ndarray_of_type(v)) {
      py::object result = py::type::handle_of(left).attr(method)(left, right);
      if (!result.is(py::handle(Py_NotImplemented)) || !reflected || !ndarray_of_type(w))
        return result.release().ptr();
    }
    if (reflected && ndarray_of_type(w))
      return py::type::handle_of(right).attr(reflected)(right, left).release().ptr();
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  Py_RETURN_NOTIMPLEMENTED;
}

// v op w, for `NDArray op NDArray`, `NDArray op number` and `number op NDArray`.
template <class Op>
PyObject* binary_slot(PyObject* v, PyObject* w) {
  try {
    const NDArray* a = ndarray_of(v);
    const NDArray* b = ndarray_of(w);
    if (a && b) return to_python(run(is_small(*a, *b), [&] { return Op::apply(*a, *b); }));
    if (a) {
      if (const auto x = number_of(w))
        return to_python(run(is_small(*a, *x), [&] { return Op::apply(*a, *x); }));
    } else if (b) {
      if (const auto x = number_of(v))
        return to_python(run(is_small(*b, *x), [&] { return Op::apply(*x, *b); }));
    }
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  return general_path(v, Op::kMethod, w, Op::kReflected);
}

// v op= w: writes into v's storage and returns v itself, as MXNet does.
template <class Op>
PyObject* in_place_slot(PyObject* v, PyObject* w) {
  try {
    if (NDArray* a = ndarray_of(v)) {
      if (const NDArray* b = ndarray_of(w)) {
        run(is_small(*a, *b), [&] { Op::update(*a, *b); });
        Py_INCREF(v);
        return v;
      }
      if (const auto x = number_of(w)) {
        run(is_small(*a, *x), [&] { Op::update(*a, *x); });
        Py_INCREF(v);
        return v;
      }
    }
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  return general_path(v, Op::kInPlace, w, nullptr);
}

// The GIL is given up only when there is something to wait for.
PyObject* wait_to_read(PyObject* self, PyObject*) {
  try {
    const NDArray* a = ndarray_of(self);
    // An instance whose __init__ never ran: the type caster raises pybind11's usual error.
    if (!a) a = &py::handle(self).cast<const NDArray&>();
    if (!nd::try_wait_to_read(*a)) {
      py::gil_scoped_release release;
      a->wait_to_read();
    }
  } catch (...) {
    py::detail::try_translate_exceptions();
    return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef wait_to_read_method = {"wait_to_read", wait_to_read, METH_NOARGS,
                                   "Blocks until every pending write to this array has finished."};

}  // namespace

void bind_ndarray_fast_path(py::class_<NDArray>& cls) {
  auto* type = reinterpret_cast<PyTypeObject*>(cls.ptr());
  PyNumberMethods& number = *type->tp_as_number;
  ndarray_type() = type;
  number.nb_add = binary_slot<Add>;
  number.nb_subtract = binary_slot<Subtract>;
  number.nb_multiply = binary_slot<Multiply>;
  number.nb_true_divide = binary_slot<Divide>;
  number.nb_inplace_add = in_place_slot<Add>;
  number.nb_inplace_subtract = in_place_slot<Subtract>;
  number.nb_inplace_multiply = in_place_slot<Multiply>;
  number.nb_inplace_true_divide = in_place_slot<Divide>;
  PyType_Modified(type);
  py::setattr(cls, "wait_to_read",
              py::reinterpret_steal<py::object>(PyDescr_NewMethod(type, &wait_to_read_method)));
}

}  // namespace kiln::python
