// Random arrays (mx.nd.random / mx.random.seed) from the generator Gluon's initializers draw
// from, so one seed reproduces both.
#include <kiln/nn/initializer.hpp>

#include "bindings.h"

namespace kiln::python {

void bind_random(py::module_& m) {
  m.def("_random_seed", &nn::seed, py::arg("seed"));
  m.def(
      "_random_uniform",
      [](double low, double high, const py::object& shape, const py::object& dtype) {
        const Shape s = shape_from_py(shape);
        const DType t = dtype_from_py(dtype);
        py::gil_scoped_release release;
        NDArray draws = nd::empty(s, t);
        nn::Uniform(1.0).init_weight("random.uniform", draws);  // in [-1, 1)
        return draws * ((high - low) / 2) + (high + low) / 2;
      },
      py::arg("low"), py::arg("high"), py::arg("shape"), py::arg("dtype") = py::none());
  m.def(
      "_random_normal",
      [](double loc, double scale, const py::object& shape, const py::object& dtype) {
        const Shape s = shape_from_py(shape);
        const DType t = dtype_from_py(dtype);
        py::gil_scoped_release release;
        NDArray draws = nd::empty(s, t);
        nn::Normal(1.0).init_weight("random.normal", draws);
        return draws * scale + loc;
      },
      py::arg("loc"), py::arg("scale"), py::arg("shape"), py::arg("dtype") = py::none());
}

}  // namespace kiln::python
