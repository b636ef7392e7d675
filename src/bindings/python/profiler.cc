// Profiler bindings: configuration, run/stop, pause/resume, dump and the aggregate table
// (kiln.profiler mirrors mx.profiler on them).
#include <kiln/profiler.hpp>

#include "bindings.h"

namespace kiln::python {

void bind_profiler(py::module_& m) {
  py::module_ p = m.def_submodule("profiler", "Kiln's profiler (kiln/profiler.hpp)");
  p.def(
      "set_config",
      [](const std::string& filename, bool aggregate_stats, bool continuous_dump, bool profile_memory) {
        profiler::set_config({.filename = filename,
                              .aggregate_stats = aggregate_stats,
                              .continuous_dump = continuous_dump,
                              .profile_memory = profile_memory});
      },
      py::arg("filename") = "profile.json", py::arg("aggregate_stats") = false,
      py::arg("continuous_dump") = false, py::arg("profile_memory") = false);
  p.def("set_state", [](const std::string& state) {
    KILN_CHECK(state == "run" || state == "stop", ErrorCode::kInvalidArgument,
               "profiler.set_state: state must be 'run' or 'stop', got '", state, "'");
    profiler::set_state(state == "run" ? profiler::State::kRun : profiler::State::kStop);
  });
  p.def("state", [] { return profiler::state() == profiler::State::kRun ? "run" : "stop"; });
  p.def("pause", &profiler::pause);
  p.def("resume", &profiler::resume);
  p.def("dump", &profiler::dump, py::arg("finished") = true, py::call_guard<py::gil_scoped_release>());
  p.def("dumps", &profiler::dumps, py::arg("reset") = false);
  p.def("mark", [](const std::string& name) { profiler::mark(name); });
}

}  // namespace kiln::python
