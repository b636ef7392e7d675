// kiln.Predictor: the C++ Predictor for inference from Python. Inputs are NDArrays or numpy arrays
// (viewed without copying for the call), a list of them for a sequence input, None for an optional
// input left empty; outputs are NDArrays owning the result tensors, a list of them for a sequence,
// None for an empty optional.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <kiln/predictor.hpp>

#include "bindings.h"

namespace kiln::python {

namespace {

// A view of a numpy array or an NDArray's values. A numpy array stays referenced while the view
// lives (an output may alias an input).
Tensor input_tensor(const py::handle& value, const std::string& name, const TensorSpec* spec) {
  if (value.is_none()) return Tensor();  // an optional input left empty; the Predictor checks it may be
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::vector<Tensor> elements;
    size_t i = 0;
    for (const py::handle element : value) {
      Tensor t = input_tensor(element, name + "[" + std::to_string(i++) + "]", nullptr);
      KILN_CHECK(t.defined() && !t.is_sequence(), ErrorCode::kInvalidArgument, "Predictor.predict: input '",
                 name, "': a sequence holds arrays, not None or lists");
      elements.push_back(std::move(t));
    }
    const DType dtype = !elements.empty() ? elements.front().dtype() : spec ? spec->dtype : DType::kFloat32;
    return Tensor::sequence(dtype, std::move(elements));
  }
  if (py::isinstance<py::array>(value) &&
      std::string("UOS").find(value.cast<py::array>().dtype().kind()) != std::string::npos) {
    // Text (numpy str, object or bytes arrays): a string tensor holding each element as UTF-8.
    const auto array = value.cast<py::array>();
    std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
    Tensor t = Tensor::empty(Shape(std::move(dims)), DType::kString);
    const py::list items = array.attr("ravel")().attr("tolist")();
    for (size_t i = 0; i < items.size(); ++i) {
      const py::handle item = items[i];
      t.data<std::string>()[i] =
          py::isinstance<py::bytes>(item) ? item.cast<std::string>() : py::str(item).cast<std::string>();
    }
    return t;
  }
  if (py::isinstance<NDArray>(value)) {
    const NDArray a = value.cast<NDArray>();
    py::gil_scoped_release release;
    return a.tensor();
  }
  KILN_CHECK(py::isinstance<py::array>(value), ErrorCode::kInvalidArgument, "Predictor.predict: input '",
             name, "' must be an NDArray or a numpy array");
  // A strided view (a slice, a transpose) is copied into row-major order; a contiguous array is
  // read where it lies.
  const auto array = py::array::ensure(value, py::array::c_style);
  KILN_CHECK(array, ErrorCode::kInvalidArgument, "Predictor.predict: input '", name,
             "' could not be read as an array");
  const DType dtype = dtype_from_py(array.dtype());
  std::vector<int64_t> dims(array.shape(), array.shape() + array.ndim());
  auto* keep = new py::object(array);
  auto storage = Storage::wrap(const_cast<void*>(array.data()), static_cast<size_t>(array.nbytes()), cpu(),
                               [keep](void*) {
                                 py::gil_scoped_acquire acquire;
                                 delete keep;
                               });
  return Tensor(std::move(storage), Shape(std::move(dims)), dtype);
}

// The outputs as Python values: an NDArray per tensor, a list of them per sequence, None for an
// empty optional.
py::object to_python(const Tensor& t) {
  if (!t.defined()) return py::none();
  if (!t.is_sequence() && is_string(t.dtype())) {
    // Text comes back as a numpy array of Python str (dtype object), as ONNX Runtime gives it.
    py::list items;
    const Tensor c = t.contiguous();
    for (int64_t i = 0; i < c.numel(); ++i) items.append(py::str(c.data<std::string>()[i]));
    py::array out = py::module_::import("numpy").attr("array")(items, py::arg("dtype") = "object");
    return out.attr("reshape")(shape_to_py(t.shape()));
  }
  if (!t.is_sequence()) return py::cast(NDArray(t));
  py::list elements;
  for (const Tensor& e : t.elements()) elements.append(to_python(e));
  return elements;
}

py::list to_python(std::vector<Tensor> tensors) {
  py::list out;
  for (const Tensor& t : tensors) out.append(to_python(t));
  return out;
}

py::dict spec_dict(const TensorSpec& spec) {
  py::dict d;
  d["name"] = spec.name;
  d["dtype"] = numpy_type(spec.dtype);
  d["shape"] = spec.known && !spec.sequence ? py::object(shape_to_py(spec.shape)) : py::object(py::none());
  d["sequence"] = spec.sequence;
  d["optional"] = spec.optional;
  return d;
}

}  // namespace

void bind_predictor(py::module_& m) {
  py::class_<Predictor>(m, "Predictor")
      .def(py::init([](const std::string& path, const std::string& opt_level, const std::string& kernels,
                       const std::string& precision, int threads, int epoch, size_t max_cached_plans,
                       const std::map<std::string, std::vector<int64_t>>& input_shapes,
                       int64_t max_dynamic_elements, int64_t max_loop_iterations) {
             std::map<std::string, Shape> shapes;
             for (const auto& [name, dims] : input_shapes) shapes.emplace(name, Shape(dims));
             py::gil_scoped_release release;
             return Predictor::load(path, {.threads = threads,
                                           .opt_level = opt_level,
                                           .kernels = kernels,
                                           .precision = precision,
                                           .max_cached_plans = max_cached_plans,
                                           .epoch = epoch,
                                           .input_shapes = shapes,
                                           .max_dynamic_elements = max_dynamic_elements,
                                           .max_loop_iterations = max_loop_iterations});
           }),
           py::arg("model_path"), py::arg("opt_level") = "basic", py::arg("kernels") = "fast",
           py::arg("precision") = "fp32", py::arg("threads") = 0, py::arg("epoch") = -1,
           py::arg("max_cached_plans") = 16,
           py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
           py::arg("max_dynamic_elements") = int64_t{1} << 28,
           py::arg("max_loop_iterations") = int64_t{1} << 20)
      .def_property_readonly("name", &Predictor::name)
      .def_property_readonly("input_names", &Predictor::input_names)
      .def_property_readonly("output_names", &Predictor::output_names)
      .def_property_readonly("inputs",
                             [](const Predictor& p) {
                               py::list out;
                               for (const auto& s : p.inputs()) out.append(spec_dict(s));
                               return out;
                             })
      .def_property_readonly("outputs",
                             [](const Predictor& p) {
                               py::list out;
                               for (const auto& s : p.outputs()) out.append(spec_dict(s));
                               return out;
                             })
      .def_property_readonly("num_cached_plans", &Predictor::num_cached_plans)
      .def(
          "predict",
          [](const Predictor& p, const py::object& inputs, const py::kwargs& named) -> py::object {
            if (inputs.is_none() && named.empty()) {
              std::string names;
              for (const std::string& n : p.input_names()) names += (names.empty() ? "" : ", ") + n;
              throw py::type_error("Predictor.predict() needs the inputs (" + names +
                                   "): a list in that order, a dict by name, or keywords NAME=array");
            }
            if (!named.empty() || py::isinstance<py::dict>(inputs)) {
              const py::dict by_name =
                  py::isinstance<py::dict>(inputs) ? inputs.cast<py::dict>() : py::dict(named);
              std::map<std::string, Tensor> tensors;
              for (const auto& [k, v] : by_name) {
                const std::string name = k.cast<std::string>();
                const TensorSpec* spec = nullptr;
                for (const TensorSpec& s : p.inputs())
                  if (s.name == name) spec = &s;
                tensors[name] = input_tensor(v, name, spec);
              }
              std::vector<Tensor> out;
              {
                py::gil_scoped_release release;
                out = p.predict(tensors);
              }
              return to_python(std::move(out));
            }
            std::vector<Tensor> tensors;
            const auto names = p.input_names();
            size_t i = 0;
            for (const py::handle v : inputs) {
              tensors.push_back(input_tensor(v, i < names.size() ? names[i] : std::to_string(i),
                                             i < names.size() ? &p.inputs()[i] : nullptr));
              ++i;
            }
            std::vector<Tensor> out;
            {
              py::gil_scoped_release release;
              out = p.predict(tensors);
            }
            return to_python(std::move(out));
          },
          py::arg("inputs") = py::none());
}

}  // namespace kiln::python
