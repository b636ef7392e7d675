// kiln._kiln.quantization: post-training INT8 quantization of a Symbol with its parameters
// (kiln::quantization::quantize_symbol), the core of kiln.contrib.quantization. Calibration
// batches come from a Python iterator, read with the GIL held; all other work runs without it.
#include <pybind11/stl.h>

#include <kiln/quantize.hpp>

#include "bindings.h"

namespace kiln::python {

namespace {

// Each calibration batch from `batches`, an iterator of {input name: NDArray} dicts, which the
// caller keeps alive (and so owns the reference) while the batches are read.
quantization::CalibrationBatches python_batches(const py::object& batches) {
  return [&batches](std::map<std::string, Tensor>& batch) {
    py::gil_scoped_acquire acquire;
    py::object next = py::module_::import("builtins").attr("next")(batches, py::none());
    if (next.is_none()) return false;
    batch.clear();
    for (const auto& [name, array] : next.cast<py::dict>())
      batch[name.cast<std::string>()] = array.cast<NDArray>().tensor().contiguous();
    return true;
  };
}

}  // namespace

void bind_quantization(py::module_& m) {
  py::module_ q = m.def_submodule("quantization", "Post-training INT8 quantization (kiln/quantize.hpp)");
  q.def(
      "quantize_symbol",
      [](const Symbol& symbol, const std::map<std::string, NDArray>& arg_params,
         const std::map<std::string, NDArray>& aux_params, const py::object& batches,
         const std::string& calib_mode, double percentile, int num_calib_batches,
         const std::string& activation_dtype, const std::vector<std::string>& excluded_names,
         const std::vector<std::string>& excluded_op_types, const py::dict& input_shapes) {
        std::map<std::string, Shape> shapes;
        for (const auto& [name, shape] : input_shapes)
          shapes[name.cast<std::string>()] = shape_from_py(shape);
        quantization::QuantizedSymbol out;
        quantization::CalibrationResult calibration;
        {
          py::gil_scoped_release release;
          const quantization::QuantizeOptions options{.calib_mode = calib_mode,
                                                      .percentile = percentile,
                                                      .num_calib_batches = num_calib_batches,
                                                      .activation_dtype = activation_dtype,
                                                      .excluded_node_names = excluded_names,
                                                      .excluded_op_types = excluded_op_types};
          out = quantization::quantize_symbol(symbol, arg_params, aux_params,
                                              batches.is_none() ? nullptr : python_batches(batches), options,
                                              shapes, &calibration);
        }
        return py::make_tuple(out.symbol, out.arg_params, out.aux_params, calibration.thresholds);
      },
      py::arg("symbol"), py::arg("arg_params"), py::arg("aux_params"), py::arg("batches"),
      py::arg("calib_mode"), py::arg("percentile"), py::arg("num_calib_batches"), py::arg("activation_dtype"),
      py::arg("excluded_names"), py::arg("excluded_op_types"), py::arg("input_shapes"),
      "Quantizes `symbol` with the calibration batches (an iterator of {name: NDArray}), or dynamically "
      "when `batches` is None; `input_shapes` (name: shape, -1 a free dimension) as the C++ API takes them. "
      "Returns (symbol, arg_params, aux_params, thresholds).");
}

}  // namespace kiln::python
