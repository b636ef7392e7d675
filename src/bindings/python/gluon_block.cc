// Gluon's parameters and blocks for Python: Parameter, ParameterDict, Block and HybridBlock
// (subclassable from Python through trampolines), Sequential and HybridSequential.
//
// A Python subclass of HybridBlock implements hybrid_forward(F, x, ..., **params) with F = kiln.nd;
// the C++ HybridBlock calls it both op by op and when tracing it for hybridize() and export, so a
// Python block runs as one compiled graph once hybridized. Blocks are held by pybind11's smart
// holder, so a C++ parent holding a Python-made child keeps the Python object alive.
#include <pybind11/stl.h>

#include <kiln/nn/gluon.hpp>

#include "bindings.h"
#include "gluon_util.h"

namespace kiln::python {

namespace {

std::vector<NDArray> outputs_from_py(const py::object& result, const std::string& where) {
  if (py::isinstance<NDArray>(result)) return {result.cast<NDArray>()};
  KILN_CHECK(py::isinstance<py::sequence>(result), ErrorCode::kInvalidArgument, where,
             ": forward must return an NDArray or a sequence of NDArrays");
  return result.cast<std::vector<NDArray>>();
}

py::tuple inputs_to_py(const std::vector<NDArray>& inputs) {
  py::tuple t(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) t[i] = py::cast(inputs[i]);
  return t;
}

// Makes a block's protected registration reachable from the bindings.
template <class Base>
class Registering : public Base {
 public:
  using Base::Base;
  std::shared_ptr<nn::Parameter> add_parameter(const std::string& attr, nn::ParameterOptions options) {
    return this->register_parameter(attr, std::move(options));
  }
  const std::vector<std::pair<std::string, std::shared_ptr<nn::Parameter>>>& parameters() const {
    return this->own_params();
  }
};

// A Block whose forward is Python's.
class PyBlock : public Registering<nn::Block>, public py::trampoline_self_life_support {
 public:
  PyBlock(const std::string& hint, const std::string& prefix) : Registering<nn::Block>(hint, prefix) {}
  std::vector<NDArray> forward(const std::vector<NDArray>& inputs) override {
    py::gil_scoped_acquire acquire;
    py::function fn = py::get_override(static_cast<const nn::Block*>(this), "forward");
    KILN_CHECK(fn, ErrorCode::kInvalidArgument, "Block '", name(), "': forward() is not implemented");
    return outputs_from_py(fn(*inputs_to_py(inputs)), "Block '" + name() + "'");
  }
};

// A HybridBlock whose hybrid_forward (and optionally infer_shape) are Python's.
class PyHybridBlock : public Registering<nn::HybridBlock>, public py::trampoline_self_life_support {
 public:
  PyHybridBlock(const std::string& hint, const std::string& prefix)
      : Registering<nn::HybridBlock>(hint, prefix) {}

 protected:
  std::vector<NDArray> hybrid_forward(const std::vector<NDArray>& inputs) override {
    py::gil_scoped_acquire acquire;
    py::function fn = py::get_override(static_cast<const nn::HybridBlock*>(this), "hybrid_forward");
    KILN_CHECK(fn, ErrorCode::kInvalidArgument, "HybridBlock '", name(),
               "': hybrid_forward() is not implemented");
    py::dict params;
    for (const auto& [attr, param] : parameters()) params[py::str(attr)] = param->data();
    const py::object nd = py::module_::import("kiln.ndarray");
    return outputs_from_py(fn(nd, *inputs_to_py(inputs), **params), "HybridBlock '" + name() + "'");
  }
  void infer_shape(const std::vector<NDArray>& inputs) override {
    py::gil_scoped_acquire acquire;
    py::function fn = py::get_override(static_cast<const nn::HybridBlock*>(this), "infer_shape");
    if (fn) fn(*inputs_to_py(inputs));
  }
};

nn::ParameterOptions parameter_options(const py::object& shape, const py::object& dtype,
                                       const py::object& init, const std::string& grad_req, double lr_mult,
                                       double wd_mult, bool allow_deferred_init) {
  nn::ParameterOptions o;
  if (!shape.is_none()) o.shape = shape_from_py(shape);
  o.dtype = dtype_from_py(dtype);
  o.init = initializer_from_py(init);
  o.grad_req = grad_req_from_py(grad_req);
  o.lr_mult = lr_mult;
  o.wd_mult = wd_mult;
  o.allow_deferred_init = allow_deferred_init;
  return o;
}

// Calls a block with positional NDArrays; one output comes back as an NDArray, more as a list.
py::object call_block(nn::Block& block, const py::args& args) {
  std::vector<NDArray> inputs;
  for (const py::handle a : args) inputs.push_back(a.cast<NDArray>());
  std::vector<NDArray> outputs;
  {
    py::gil_scoped_release release;
    outputs = block.forward(inputs);
  }
  if (outputs.size() == 1) return py::cast(outputs[0]);
  return py::cast(outputs);
}

struct NameScopeGuard {
  std::unique_ptr<nn::NameScope> scope;
};

struct NameManagerGuard {
  std::unique_ptr<nn::NameManager> manager;
};

std::shared_ptr<nn::Parameter> own_parameter(const nn::Block& block, const std::string& attr) {
  for (const auto& [name, param] : block.collect_params_with_prefix())
    if (name == attr) return param;
  return nullptr;
}

}  // namespace

std::shared_ptr<const nn::Initializer> initializer_from_py(const py::object& init) {
  if (init.is_none()) return nullptr;
  if (py::isinstance<py::str>(init)) {
    const auto name = init.cast<std::string>();
    if (name == "zeros" || name == "zero") return std::make_shared<nn::Zero>();
    if (name == "ones" || name == "one") return std::make_shared<nn::One>();
    if (name == "xavier") return std::make_shared<nn::Xavier>();
    if (name == "uniform") return std::make_shared<nn::Uniform>();
    if (name == "normal") return std::make_shared<nn::Normal>();
    raise(ErrorCode::kInvalidArgument, "initializer '", name,
          "' is not known (zeros, ones, xavier, uniform, normal, or an mx.init object)");
  }
  return init.cast<std::shared_ptr<nn::Initializer>>();
}

GradReq grad_req_from_py(const std::string& req) {
  if (req == "write") return GradReq::kWrite;
  if (req == "add") return GradReq::kAdd;
  if (req == "null") return GradReq::kNull;
  raise(ErrorCode::kInvalidArgument, "grad_req must be 'write', 'add' or 'null', got '", req, "'");
}

const char* grad_req_name(GradReq req) {
  return req == GradReq::kWrite ? "write" : (req == GradReq::kAdd ? "add" : "null");
}

void bind_gluon_blocks(py::module_& g) {
  py::classh<nn::Parameter>(g, "Parameter")
      .def(py::init([](const std::string& name, const std::string& grad_req, const py::object& shape,
                       const py::object& dtype, double lr_mult, double wd_mult, const py::object& init,
                       bool allow_deferred_init) {
             return std::make_shared<nn::Parameter>(
                 name,
                 parameter_options(shape, dtype, init, grad_req, lr_mult, wd_mult, allow_deferred_init));
           }),
           py::arg("name"), py::arg("grad_req") = "write", py::arg("shape") = py::none(),
           py::arg("dtype") = py::none(), py::arg("lr_mult") = 1.0, py::arg("wd_mult") = 1.0,
           py::arg("init") = py::none(), py::arg("allow_deferred_init") = true)
      .def_property_readonly("name", &nn::Parameter::name)
      .def_property(
          "shape", [](const nn::Parameter& p) { return shape_to_py(p.shape()); },
          [](nn::Parameter& p, const py::object& s) { p.set_shape(shape_from_py(s)); })
      .def_property_readonly("dtype", [](const nn::Parameter& p) { return numpy_type(p.dtype()); })
      .def_property(
          "grad_req", [](const nn::Parameter& p) { return grad_req_name(p.grad_req()); },
          [](nn::Parameter& p, const std::string& r) { p.set_grad_req(grad_req_from_py(r)); })
      .def_property("lr_mult", &nn::Parameter::lr_mult, &nn::Parameter::set_lr_mult)
      .def_property("wd_mult", &nn::Parameter::wd_mult, &nn::Parameter::set_wd_mult)
      .def(
          "initialize",
          [](nn::Parameter& p, const py::object& init, const py::object&, bool force_reinit) {
            auto i = initializer_from_py(init);
            py::gil_scoped_release release;
            p.initialize(std::move(i), cpu(), force_reinit);
          },
          py::arg("init") = py::none(), py::arg("ctx") = py::none(), py::arg("force_reinit") = false)
      .def(
          "data", [](const nn::Parameter& p, const py::object&) { return p.data(); },
          py::arg("ctx") = py::none())
      .def("list_data", [](const nn::Parameter& p) { return std::vector<NDArray>{p.data()}; })
      .def(
          "grad", [](const nn::Parameter& p, const py::object&) { return p.grad(); },
          py::arg("ctx") = py::none())
      .def("list_grad", [](const nn::Parameter& p) { return std::vector<NDArray>{p.grad()}; })
      .def("set_data", &nn::Parameter::set_data, py::call_guard<py::gil_scoped_release>())
      .def("zero_grad", &nn::Parameter::zero_grad, py::call_guard<py::gil_scoped_release>())
      .def("list_ctx", [](const nn::Parameter&) { return std::vector<Device>{cpu()}; })
      .def("__repr__", [](const nn::Parameter& p) {
        return "Parameter " + p.name() + " (shape=" + p.shape().to_string() +
               ", dtype=" + dtype_name(p.dtype()) + ")";
      });

  py::class_<nn::ParameterDict>(g, "ParameterDict")
      .def(py::init<>())
      .def("__getitem__",
           [](const nn::ParameterDict& d, const std::string& name) {
             if (!d.contains(name)) throw py::key_error(name);
             return d.get(name);
           })
      .def("__contains__", &nn::ParameterDict::contains)
      .def("__len__", &nn::ParameterDict::size)
      .def("__iter__", [](const nn::ParameterDict& d) { return py::iter(py::cast(d.keys())); })
      .def("keys", &nn::ParameterDict::keys)
      .def("values",
           [](const nn::ParameterDict& d) {
             return std::vector<std::shared_ptr<nn::Parameter>>(d.begin(), d.end());
           })
      .def("items",
           [](const nn::ParameterDict& d) {
             std::vector<std::pair<std::string, std::shared_ptr<nn::Parameter>>> out;
             for (const auto& p : d) out.emplace_back(p->name(), p);
             return out;
           })
      .def("get", &nn::ParameterDict::get)
      .def("update", &nn::ParameterDict::update)
      .def("select", &nn::ParameterDict::select)
      .def(
          "initialize",
          [](nn::ParameterDict& d, const py::object& init, const py::object&, bool, bool force_reinit) {
            auto i = initializer_from_py(init);
            py::gil_scoped_release release;
            d.initialize(std::move(i), cpu(), force_reinit);
          },
          py::arg("init") = py::none(), py::arg("ctx") = py::none(), py::arg("verbose") = false,
          py::arg("force_reinit") = false)
      .def("zero_grad", &nn::ParameterDict::zero_grad, py::call_guard<py::gil_scoped_release>())
      .def("setattr",
           [](nn::ParameterDict& d, const std::string& name, const py::object& value) {
             if (name == "grad_req") return d.set_grad_req(grad_req_from_py(value.cast<std::string>()));
             if (name == "lr_mult") return d.set_lr_mult(value.cast<double>());
             if (name == "wd_mult") return d.set_wd_mult(value.cast<double>());
             raise(ErrorCode::kInvalidArgument, "ParameterDict.setattr: '", name,
                   "' cannot be set (grad_req, lr_mult, wd_mult)");
           })
      .def("reset_ctx", [](nn::ParameterDict&, const py::object&) {})
      .def("save", &nn::ParameterDict::save, py::arg("filename"), py::arg("strip_prefix") = "",
           py::call_guard<py::gil_scoped_release>())
      .def(
          "load",
          [](nn::ParameterDict& d, const std::string& path, const py::object&, bool allow_missing,
             bool ignore_extra, const std::string& restore_prefix) {
            py::gil_scoped_release release;
            d.load(path, cpu(), allow_missing, ignore_extra, restore_prefix);
          },
          py::arg("filename"), py::arg("ctx") = py::none(), py::arg("allow_missing") = false,
          py::arg("ignore_extra") = false, py::arg("restore_prefix") = "");

  py::classh<nn::Block, PyBlock>(g, "Block")
      .def(py::init<const std::string&, const std::string&>(), py::arg("hint"), py::arg("prefix") = "")
      .def_property_readonly("prefix", &nn::Block::prefix)
      .def_property_readonly("name", &nn::Block::name)
      .def("collect_params", &nn::Block::collect_params, py::arg("select") = "")
      .def("_collect_params_with_prefix", &nn::Block::collect_params_with_prefix, py::arg("prefix") = "")
      .def(
          "initialize",
          [](nn::Block& b, const py::object& init, const py::object&, bool, bool force_reinit) {
            auto i = initializer_from_py(init);
            py::gil_scoped_release release;
            b.initialize(std::move(i), cpu(), force_reinit);
          },
          py::arg("init") = py::none(), py::arg("ctx") = py::none(), py::arg("verbose") = false,
          py::arg("force_reinit") = false)
      .def("save_parameters", &nn::Block::save_parameters, py::arg("filename"),
           py::call_guard<py::gil_scoped_release>())
      .def(
          "load_parameters",
          [](nn::Block& b, const std::string& path, const py::object&, bool allow_missing,
             bool ignore_extra) {
            py::gil_scoped_release release;
            b.load_parameters(path, cpu(), allow_missing, ignore_extra);
          },
          py::arg("filename"), py::arg("ctx") = py::none(), py::arg("allow_missing") = false,
          py::arg("ignore_extra") = false)
      .def("_children", [](const nn::Block& b) { return b.children(); })
      .def("_register_child", [](nn::Block& b, std::shared_ptr<nn::Block> child,
                                 const std::string& name) { b.register_child(std::move(child), name); })
      .def("_register_parameter",
           [](nn::Block& b, const std::string& attr, const py::object& shape, const py::object& dtype,
              const py::object& init, const std::string& grad_req, double lr_mult, double wd_mult,
              bool allow_deferred_init) {
             auto options =
                 parameter_options(shape, dtype, init, grad_req, lr_mult, wd_mult, allow_deferred_init);
             if (auto* hybrid = dynamic_cast<PyHybridBlock*>(&b)) return hybrid->add_parameter(attr, options);
             auto* plain = dynamic_cast<PyBlock*>(&b);
             KILN_CHECK(plain != nullptr, ErrorCode::kInvalidArgument, "Block '", b.name(),
                        "': parameters can only be added to blocks defined in Python");
             return plain->add_parameter(attr, options);
           })
      .def("_own_parameter", &own_parameter)
      .def("forward", [](nn::Block& b, const py::args& args) { return call_block(b, args); })
      .def("__call__", [](nn::Block& b, const py::args& args) { return call_block(b, args); });

  // `with block.name_scope():` holds one of these; blocks made inside are the block's children by name.
  py::class_<NameScopeGuard>(g, "_NameScope")
      .def(py::init([](nn::Block& block) { return NameScopeGuard{std::make_unique<nn::NameScope>(block)}; }),
           py::keep_alive<1, 2>())
      .def("close", [](NameScopeGuard& guard) { guard.scope.reset(); });

  // `with mx.name.NameManager():` holds one of these; block names count from zero inside.
  py::class_<NameManagerGuard>(g, "_NameManager")
      .def(py::init([] { return NameManagerGuard{std::make_unique<nn::NameManager>()}; }))
      .def("close", [](NameManagerGuard& guard) { guard.manager.reset(); });

  py::classh<nn::HybridBlock, nn::Block, PyHybridBlock>(g, "HybridBlock")
      .def(py::init<const std::string&, const std::string&>(), py::arg("hint"), py::arg("prefix") = "")
      .def(
          "hybridize", [](nn::HybridBlock& b, bool active, const py::kwargs&) { b.hybridize(active); },
          py::arg("active") = true)
      .def_property_readonly("hybridized", &nn::HybridBlock::hybridized)
      .def(
          "export",
          [](nn::HybridBlock& b, const std::string& path, int epoch) {
            py::gil_scoped_release release;
            b.export_model(path, epoch);
          },
          py::arg("path"), py::arg("epoch") = 0);

  py::classh<nn::Sequential, nn::Block>(g, "Sequential")
      .def(py::init<const std::string&>(), py::arg("prefix") = "")
      .def("add",
           [](nn::Sequential& s, const py::args& blocks) {
             for (const py::handle b : blocks) s.add(b.cast<std::shared_ptr<nn::Block>>());
           })
      .def("__len__", &nn::Sequential::size)
      .def("__getitem__", [](const nn::Sequential& s, int64_t i) {
        const auto n = static_cast<int64_t>(s.size());
        // IndexError, so that Python's iteration over __getitem__ stops at the end.
        if (i < -n || i >= n) throw py::index_error("Sequential: index out of range");
        return s.children()[static_cast<size_t>(i < 0 ? i + n : i)].second;
      });

  py::classh<nn::HybridSequential, nn::HybridBlock>(g, "HybridSequential")
      .def(py::init<const std::string&>(), py::arg("prefix") = "")
      .def("add",
           [](nn::HybridSequential& s, const py::args& blocks) {
             for (const py::handle b : blocks) s.add(b.cast<std::shared_ptr<nn::HybridBlock>>());
           })
      .def("__len__", &nn::HybridSequential::size)
      .def("__getitem__", [](const nn::HybridSequential& s, int64_t i) {
        const auto n = static_cast<int64_t>(s.size());
        if (i < -n || i >= n) throw py::index_error("HybridSequential: index out of range");
        return s.children()[static_cast<size_t>(i < 0 ? i + n : i)].second;
      });

  py::classh<nn::SymbolBlock, nn::HybridBlock>(g, "SymbolBlock")
      .def(py::init([](const py::object& outputs, const py::object& inputs, const py::object& params) {
             const Symbol out = py::isinstance<Symbol>(outputs)
                                    ? outputs.cast<Symbol>()
                                    : Symbol::Group(outputs.cast<std::vector<Symbol>>());
             std::vector<std::string> names;
             const py::list items = py::isinstance<py::list>(inputs) || py::isinstance<py::tuple>(inputs)
                                        ? py::list(inputs)
                                        : py::list(py::make_tuple(inputs));
             for (const py::handle item : items)
               names.push_back(py::isinstance<Symbol>(item) ? item.cast<Symbol>().name()
                                                            : item.cast<std::string>());
             // A dict of arrays, or a ParameterDict (MXNet's `params`), whose values hold data().
             std::map<std::string, NDArray> values;
             if (!params.is_none())
               for (const auto& [name, value] :
                    params.attr("items")().cast<std::vector<std::pair<std::string, py::object>>>())
                 values[name] = py::isinstance<NDArray>(value) ? value.cast<NDArray>()
                                                               : value.attr("data")().cast<NDArray>();
             py::gil_scoped_release release;
             return std::make_shared<nn::SymbolBlock>(out, std::move(names), values);
           }),
           py::arg("outputs"), py::arg("inputs"), py::arg("params") = py::none())
      .def_static(
          "imports",
          [](const std::string& symbol_file, const py::object& input_names, const py::object& param_file,
             const py::object&, bool, bool) {
            const std::vector<std::string> names =
                py::isinstance<py::str>(input_names)
                    ? std::vector<std::string>{input_names.cast<std::string>()}
                    : input_names.cast<std::vector<std::string>>();
            const std::string params = param_file.is_none() ? "" : param_file.cast<std::string>();
            py::gil_scoped_release release;
            return nn::SymbolBlock::imports(symbol_file, names, params);
          },
          py::arg("symbol_file"), py::arg("input_names"), py::arg("param_file") = py::none(),
          py::arg("ctx") = py::none(), py::arg("allow_missing") = false, py::arg("ignore_extra") = false)
      .def_property_readonly("input_names", &nn::SymbolBlock::input_names);
}

}  // namespace kiln::python
