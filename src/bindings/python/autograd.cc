// Autograd bindings: the per-thread recording and training switches (kiln.autograd builds the
// record() / pause() scopes on them), backward over several heads and grad (higher-order too).
#include <pybind11/stl.h>

#include <kiln/autograd.hpp>

#include "bindings.h"

namespace kiln::python {

void bind_autograd(py::module_& m) {
  py::module_ ag = m.def_submodule("autograd", "Kiln's imperative autograd (kiln/autograd.hpp)");
  ag.def("is_recording", &autograd::is_recording);
  ag.def("is_training", &autograd::is_training);
  ag.def("set_recording", &autograd::set_recording, py::arg("is_recording"));
  ag.def("set_training", &autograd::set_training, py::arg("train_mode"));
  ag.def(
      "backward",
      [](const std::vector<NDArray>& heads, const std::vector<std::optional<NDArray>>& head_grads,
         bool retain_graph, bool train_mode) {
        std::vector<NDArray> grads;
        for (const auto& g : head_grads) grads.push_back(g ? *g : NDArray());
        py::gil_scoped_release release;
        const bool was_training = autograd::set_training(train_mode);
        try {
          autograd::backward(heads, grads, retain_graph);
        } catch (...) {
          autograd::set_training(was_training);
          throw;
        }
        autograd::set_training(was_training);
      },
      py::arg("heads"), py::arg("head_grads") = std::vector<std::optional<NDArray>>{},
      py::arg("retain_graph") = false, py::arg("train_mode") = true);
  ag.def(
      "grad",
      [](const std::vector<NDArray>& heads, const std::vector<NDArray>& variables,
         const std::vector<std::optional<NDArray>>& head_grads, bool retain_graph, bool create_graph,
         bool train_mode) {
        std::vector<NDArray> grads;
        for (const auto& g : head_grads) grads.push_back(g ? *g : NDArray());
        py::gil_scoped_release release;
        const autograd::Scope training(autograd::is_recording(), train_mode);
        return autograd::grad(heads, variables, grads, retain_graph, create_graph);
      },
      py::arg("heads"), py::arg("variables"), py::arg("head_grads"), py::arg("retain_graph"),
      py::arg("create_graph"), py::arg("train_mode"));
}

}  // namespace kiln::python
