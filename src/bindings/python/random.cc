// mx.random.seed, which reseeds the generator Gluon's initializers draw from and the seeds of the
// random ops (mx.nd.random), so one seed reproduces both.
#include <kiln/nn/initializer.hpp>

#include "bindings.h"

namespace kiln::python {

void bind_random(py::module_& m) {
  m.def("_random_seed", &nn::seed, py::arg("seed"));
  // The ONNX code of a dtype, for the `dtype` attribute of ops called from Python.
  m.def("_onnx_dtype", [](const py::object& dtype) { return dtype_to_onnx(dtype_from_py(dtype)); });
}

}  // namespace kiln::python
