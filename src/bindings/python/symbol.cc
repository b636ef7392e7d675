// Symbol API bindings (mx.sym): Symbol (composition, listing, infer_shape, tojson, save/load),
// the C++ op constructors, generic op nodes, and the Executor of simple_bind / bind.
#include <pybind11/stl.h>

#include <kiln/symbol.hpp>

#include "bindings.h"

namespace kiln::python {

namespace {

std::vector<int64_t> ints(const py::object& v) {
  if (v.is_none()) return {};
  if (py::isinstance<py::int_>(v)) return {v.cast<int64_t>()};
  return v.cast<std::vector<int64_t>>();
}

std::map<std::string, Shape> shapes_of(const py::dict& shapes) {
  std::map<std::string, Shape> out;
  for (const auto& [k, v] : shapes) out[k.cast<std::string>()] = shape_from_py(v);
  return out;
}

py::object shape_list(const std::vector<Shape>& shapes) {
  py::list out;
  for (const auto& s : shapes) out.append(shape_to_py(s));
  return out;
}

// Writes `value` (NDArray or array-like) into the executor's array `name`.
void assign(std::map<std::string, NDArray>& arrays, const std::string& name, const py::handle& value,
            const std::string& where) {
  auto it = arrays.find(name);
  KILN_CHECK(it != arrays.end(), ErrorCode::kNotFound, where, ": no argument named '", name, "'");
  NDArray source;
  if (py::isinstance<NDArray>(value)) {
    source = value.cast<NDArray>();
  } else {
    py::object np_array =
        py::module_::import("numpy").attr("ascontiguousarray")(value, numpy_type(it->second.dtype()));
    source = py::module_::import("kiln._kiln").attr("from_numpy")(np_array).cast<NDArray>();
  }
  KILN_CHECK(source.shape() == it->second.shape(), ErrorCode::kShapeMismatch, where, ": argument '", name,
             "' has shape ", it->second.shape(), ", got ", source.shape());
  py::gil_scoped_release release;
  if (source.dtype() != it->second.dtype()) source = source.astype(it->second.dtype());
  nd::invoke_into("Identity", {source}, {it->second});
}

std::map<std::string, NDArray> arrays_by_name(const py::object& arrays, const std::vector<std::string>& names,
                                              const std::string& where) {
  std::map<std::string, NDArray> out;
  if (arrays.is_none()) return out;
  if (py::isinstance<py::dict>(arrays)) return arrays.cast<std::map<std::string, NDArray>>();
  const auto list = arrays.cast<std::vector<NDArray>>();
  KILN_CHECK(list.size() == names.size(), ErrorCode::kInvalidArgument, where, ": ", list.size(),
             " arrays given for ", names.size(), " names");
  for (size_t i = 0; i < list.size(); ++i) out[names[i]] = list[i];
  return out;
}

void bind_executor(py::module_& s) {
  py::class_<Executor>(s, "Executor")
      .def(
          "forward",
          [](Executor& e, bool is_train, const py::kwargs& inputs) {
            for (const auto& [k, v] : inputs)
              assign(e.arg_dict(), k.cast<std::string>(), v, "Executor.forward");
            py::gil_scoped_release release;
            e.forward(is_train);
            return e.outputs();
          },
          py::arg("is_train") = false)
      .def(
          "backward",
          [](Executor& e, const py::object& out_grads) {
            std::vector<NDArray> grads;
            if (py::isinstance<NDArray>(out_grads)) {
              grads.push_back(out_grads.cast<NDArray>());
            } else if (!out_grads.is_none()) {
              grads = out_grads.cast<std::vector<NDArray>>();
            }
            py::gil_scoped_release release;
            e.backward(grads);
          },
          py::arg("out_grads") = py::none())
      .def_property_readonly("outputs", &Executor::outputs)
      .def_property_readonly("arg_dict", [](Executor& e) { return e.arg_dict(); })
      .def_property_readonly("aux_dict", [](Executor& e) { return e.aux_dict(); })
      .def_property_readonly("grad_dict", [](Executor& e) { return e.grad_dict(); })
      .def_property_readonly("grad_arrays", &Executor::grad_arrays)
      .def(
          "copy_params_from",
          [](Executor& e, const py::dict& arg_params, const py::object& aux_params, bool allow_extra_params) {
            for (const auto& [k, v] : arg_params) {
              const auto name = k.cast<std::string>();
              if (allow_extra_params && !e.arg_dict().count(name)) continue;
              assign(e.arg_dict(), name, v, "Executor.copy_params_from");
            }
            if (aux_params.is_none()) return;
            for (const auto& [k, v] : aux_params.cast<py::dict>()) {
              const auto name = k.cast<std::string>();
              if (allow_extra_params && !e.aux_dict().count(name)) continue;
              assign(e.aux_dict(), name, v, "Executor.copy_params_from");
            }
          },
          py::arg("arg_params"), py::arg("aux_params") = py::none(), py::arg("allow_extra_params") = false);
}

void bind_constructors(py::module_& s) {
  s.def(
      "Convolution",
      [](const Symbol& data, const py::object& kernel, int64_t num_filter, const py::object& stride,
         const py::object& pad, const py::object& dilate, int64_t num_group, bool no_bias,
         const std::string& name) {
        return sym::Convolution(
            data, {ints(kernel), num_filter, ints(stride), ints(pad), ints(dilate), num_group, no_bias},
            name);
      },
      py::arg("data"), py::arg("kernel"), py::arg("num_filter"), py::arg("stride") = py::none(),
      py::arg("pad") = py::none(), py::arg("dilate") = py::none(), py::arg("num_group") = 1,
      py::arg("no_bias") = false, py::arg("name") = "");
  s.def(
      "Deconvolution",
      [](const Symbol& data, const py::object& kernel, int64_t num_filter, const py::object& stride,
         const py::object& pad, const py::object& adj, int64_t num_group, bool no_bias,
         const std::string& name) {
        return sym::Deconvolution(
            data, {ints(kernel), num_filter, ints(stride), ints(pad), ints(adj), num_group, no_bias}, name);
      },
      py::arg("data"), py::arg("kernel"), py::arg("num_filter"), py::arg("stride") = py::none(),
      py::arg("pad") = py::none(), py::arg("adj") = py::none(), py::arg("num_group") = 1,
      py::arg("no_bias") = true, py::arg("name") = "");
  s.def("FullyConnected", &sym::FullyConnected, py::arg("data"), py::arg("num_hidden"),
        py::arg("no_bias") = false, py::arg("flatten") = true, py::arg("name") = "");
  s.def("Activation", &sym::Activation, py::arg("data"), py::arg("act_type"), py::arg("name") = "");
  s.def(
      "Pooling",
      [](const Symbol& data, const py::object& kernel, const std::string& pool_type, const py::object& stride,
         const py::object& pad, bool global_pool, const std::string& pooling_convention,
         const std::string& name) {
        return sym::Pooling(
            data, {pool_type, ints(kernel), ints(stride), ints(pad), global_pool, pooling_convention}, name);
      },
      py::arg("data"), py::arg("kernel") = py::none(), py::arg("pool_type") = "max",
      py::arg("stride") = py::none(), py::arg("pad") = py::none(), py::arg("global_pool") = false,
      py::arg("pooling_convention") = "valid", py::arg("name") = "");
  s.def(
      "BatchNorm",
      [](const Symbol& data, double eps, double momentum, bool fix_gamma, bool use_global_stats,
         const std::string& name) {
        return sym::BatchNorm(data, {eps, momentum, fix_gamma, use_global_stats}, name);
      },
      py::arg("data"), py::arg("eps") = 1e-3, py::arg("momentum") = 0.9, py::arg("fix_gamma") = true,
      py::arg("use_global_stats") = false, py::arg("name") = "");
  s.def("Flatten", &sym::Flatten, py::arg("data"), py::arg("name") = "");
  s.def("Dropout", &sym::Dropout, py::arg("data"), py::arg("p") = 0.5, py::arg("name") = "");
  s.def("Concat", &sym::Concat, py::arg("data"), py::arg("dim") = 1, py::arg("name") = "");
  s.def("Reshape", &sym::Reshape, py::arg("data"), py::arg("shape"), py::arg("name") = "");
  s.def("softmax", &sym::softmax, py::arg("data"), py::arg("axis") = -1, py::arg("name") = "");
  s.def("SoftmaxOutput", &sym::SoftmaxOutput, py::arg("data"), py::arg("name") = "");
  const std::pair<const char*, Symbol (*)(const Symbol&, const Symbol&, const std::string&)> binaries[] = {
      {"elemwise_add", &sym::elemwise_add},   {"elemwise_sub", &sym::elemwise_sub},
      {"elemwise_mul", &sym::elemwise_mul},   {"elemwise_div", &sym::elemwise_div},
      {"broadcast_add", &sym::broadcast_add}, {"broadcast_sub", &sym::broadcast_sub},
      {"broadcast_mul", &sym::broadcast_mul}, {"broadcast_div", &sym::broadcast_div}};
  for (const auto& [name, fn] : binaries)
    s.def(name, fn, py::arg("lhs"), py::arg("rhs"), py::arg("name") = "");
}

}  // namespace

void bind_symbol(py::module_& m) {
  py::module_ s = m.def_submodule("symbol", "The MXNet-style Symbol API (kiln/symbol.hpp)");
  py::class_<Symbol>(s, "Symbol")
      .def_property_readonly("name", &Symbol::name)
      .def("__getitem__", &Symbol::operator[])
      .def("__len__", [](const Symbol& sym) { return sym.outputs().size(); })
      .def("list_arguments", &Symbol::list_arguments)
      .def("list_outputs", &Symbol::list_outputs)
      .def("list_auxiliary_states", &Symbol::list_auxiliary_states)
      .def("list_inputs", &Symbol::list_inputs)
      .def("_infer_shape",
           [](const Symbol& sym, const py::dict& shapes) -> py::tuple {
             const Symbol::InferredShapes r = sym.infer_shape(shapes_of(shapes));
             return py::make_tuple(shape_list(r.arg_shapes), shape_list(r.out_shapes),
                                   shape_list(r.aux_shapes), r.complete);
           })
      .def("tojson", &Symbol::tojson)
      .def(
          "save", [](const Symbol& sym, const std::string& path, bool) { sym.save(path); }, py::arg("fname"),
          py::arg("remove_amp_cast") = true)
      .def(
          "simple_bind",
          [](const Symbol& sym, Device ctx, const py::object& grad_req, const py::kwargs& shapes) {
            const auto known = shapes_of(shapes);
            if (py::isinstance<py::dict>(grad_req)) {
              const auto reqs = grad_req.cast<std::map<std::string, std::string>>();
              py::gil_scoped_release release;
              return sym.simple_bind(ctx, known, reqs);
            }
            const auto req = grad_req.cast<std::string>();
            py::gil_scoped_release release;
            return sym.simple_bind(ctx, known, req);
          },
          py::arg("ctx"), py::arg("grad_req") = "write")
      .def(
          "bind",
          [](const Symbol& sym, Device ctx, const py::object& args, const py::object& args_grad,
             const py::object& grad_req, const py::object& aux_states) {
            const auto arg_names = sym.list_arguments();
            auto arg_map = arrays_by_name(args, arg_names, "Symbol.bind: args");
            auto grad_map = arrays_by_name(args_grad, arg_names, "Symbol.bind: args_grad");
            auto aux_map = arrays_by_name(aux_states, sym.list_auxiliary_states(), "Symbol.bind: aux_states");
            std::map<std::string, GradReq> reqs;
            for (const auto& n : arg_names) {
              std::string req = "null";
              if (grad_map.count(n))
                req = py::isinstance<py::dict>(grad_req)
                          ? (grad_req.contains(n) ? grad_req[py::str(n)].cast<std::string>() : "null")
                          : grad_req.cast<std::string>();
              reqs[n] = req == "write" ? GradReq::kWrite : (req == "add" ? GradReq::kAdd : GradReq::kNull);
            }
            return Executor(sym, ctx, std::move(arg_map), std::move(aux_map), std::move(grad_map),
                            std::move(reqs));
          },
          py::arg("ctx"), py::arg("args"), py::arg("args_grad") = py::none(), py::arg("grad_req") = "write",
          py::arg("aux_states") = py::none())
      .def(
          "__add__", [](const Symbol& a, const Symbol& b) { return a + b; }, py::is_operator())
      .def(
          "__add__", [](const Symbol& a, double b) { return a + b; }, py::is_operator())
      .def(
          "__radd__", [](const Symbol& a, double b) { return a + b; }, py::is_operator())
      .def(
          "__sub__", [](const Symbol& a, const Symbol& b) { return a - b; }, py::is_operator())
      .def(
          "__sub__", [](const Symbol& a, double b) { return a - b; }, py::is_operator())
      .def(
          "__mul__", [](const Symbol& a, const Symbol& b) { return a * b; }, py::is_operator())
      .def(
          "__mul__", [](const Symbol& a, double b) { return a * b; }, py::is_operator())
      .def(
          "__rmul__", [](const Symbol& a, double b) { return a * b; }, py::is_operator())
      .def(
          "__truediv__", [](const Symbol& a, const Symbol& b) { return a / b; }, py::is_operator())
      .def(
          "__truediv__", [](const Symbol& a, double b) { return a / b; }, py::is_operator());
  s.def("Variable", &Symbol::Variable, py::arg("name"),
        py::arg("attrs") = std::map<std::string, std::string>{});
  s.def("Group", &Symbol::Group, py::arg("symbols"));
  s.def("load", &Symbol::load, py::arg("fname"));
  s.def("load_json", &Symbol::load_json, py::arg("json_str"));
  s.def("_create", &Symbol::Create, py::arg("op"), py::arg("inputs"), py::arg("attrs"), py::arg("name") = "");
  bind_constructors(s);
  bind_executor(s);
}

}  // namespace kiln::python
