// kiln._kiln: the extension module of the Python package. Each area binds itself (one file each);
// kiln::Error becomes kiln.KilnError, a RuntimeError carrying the C++ message.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <kiln/environment.hpp>
#include <kiln/error.hpp>
#include <kiln/version.hpp>

#include "bindings.h"

namespace kiln::python {

void bind_errors(py::module_& m) {
  static py::exception<Error> kiln_error(m, "KilnError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::set_error(kiln_error, e.what());
    }
  });
}

}  // namespace kiln::python

PYBIND11_MODULE(_kiln, m) {
  using namespace kiln::python;
  m.doc() =
      "Kiln's C++ core: NDArray, autograd, Gluon, Symbol, Predictor, profiler and quantization bindings";
  m.attr("__version__") = kiln::kVersion;
  m.def("features", &kiln::build_features,
        "What this build of Kiln has: {'onednn': True, 'cuda': False, 'java': False, 'server': False}");
  bind_errors(m);
  // A malformed KILN_* variable fails the import, naming it, before anything reads it.
  kiln::check_environment();
  bind_ndarray(m);
  bind_random(m);
  bind_autograd(m);
  bind_gluon(m);
  bind_symbol(m);
  bind_predictor(m);
  bind_profiler(m);
  bind_quantization(m);
}
