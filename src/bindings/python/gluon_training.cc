// Training support for Python: initializers (mx.init), the Trainer, ArrayDataset and its batch
// gather (which the DataLoader of mx.gluon.data calls), and the metrics (mx.metric). Registers every Gluon
// binding under kiln._kiln.gluon.
#include <pybind11/stl.h>

#include <kiln/nn/gluon.hpp>

#include "bindings.h"
#include "gluon_util.h"

namespace kiln::python {

namespace {

nn::RandomType rnd_type_of(const std::string& name) {
  if (name == "uniform") return nn::RandomType::kUniform;
  if (name == "gaussian") return nn::RandomType::kGaussian;
  raise(ErrorCode::kInvalidArgument, "Xavier: rnd_type must be 'uniform' or 'gaussian', got '", name, "'");
}

nn::FactorType factor_type_of(const std::string& name) {
  if (name == "avg") return nn::FactorType::kAvg;
  if (name == "in") return nn::FactorType::kIn;
  if (name == "out") return nn::FactorType::kOut;
  raise(ErrorCode::kInvalidArgument, "factor_type must be 'avg', 'in' or 'out', got '", name, "'");
}

std::vector<NDArray> arrays_of(const py::object& value) {
  if (py::isinstance<NDArray>(value)) return {value.cast<NDArray>()};
  return value.cast<std::vector<NDArray>>();
}

nn::ParameterDict parameters_of(const py::object& params) {
  if (py::isinstance<nn::ParameterDict>(params)) return params.cast<nn::ParameterDict>();
  nn::ParameterDict dict;
  const py::object values = py::isinstance<py::dict>(params) ? params.attr("values")() : params;
  for (const py::handle p : values) dict.add(p.cast<std::shared_ptr<nn::Parameter>>());
  return dict;
}

void bind_initializers(py::module_& g) {
  py::module_ init = g.def_submodule("init", "Initializers (mx.init)");
  py::classh<nn::Initializer>(init, "Initializer")
      .def("__call__",
           [](const nn::Initializer& i, const std::string& name, const NDArray& array) {
             py::gil_scoped_release release;
             i(name, array);
           })
      .def("dumps", &nn::Initializer::dumps);
  py::classh<nn::Constant, nn::Initializer>(init, "Constant").def(py::init<double>(), py::arg("value"));
  py::classh<nn::Zero, nn::Constant>(init, "Zero").def(py::init<>());
  py::classh<nn::One, nn::Constant>(init, "One").def(py::init<>());
  py::classh<nn::Uniform, nn::Initializer>(init, "Uniform").def(py::init<double>(), py::arg("scale") = 0.07);
  py::classh<nn::Normal, nn::Initializer>(init, "Normal").def(py::init<double>(), py::arg("sigma") = 0.01);
  py::classh<nn::Xavier, nn::Initializer>(init, "Xavier")
      .def(py::init([](const std::string& rnd_type, const std::string& factor_type, double magnitude) {
             return std::make_shared<nn::Xavier>(rnd_type_of(rnd_type), factor_type_of(factor_type),
                                                 magnitude);
           }),
           py::arg("rnd_type") = "uniform", py::arg("factor_type") = "avg", py::arg("magnitude") = 3.0);
  py::classh<nn::MSRAPrelu, nn::Xavier>(init, "MSRAPrelu")
      .def(py::init([](const std::string& factor_type, double slope) {
             return std::make_shared<nn::MSRAPrelu>(factor_type_of(factor_type), slope);
           }),
           py::arg("factor_type") = "avg", py::arg("slope") = 0.25);
}

nn::Warmup warmup_of(int64_t steps, double begin_lr, const std::string& mode) {
  KILN_CHECK(mode == "linear" || mode == "constant", ErrorCode::kInvalidArgument,
             "warmup_mode must be 'linear' or 'constant', got '", mode, "'");
  return {steps, begin_lr, mode == "linear" ? nn::WarmupMode::kLinear : nn::WarmupMode::kConstant};
}

void bind_lr_schedulers(py::module_& g) {
  py::module_ lr = g.def_submodule("lr_scheduler", "Learning-rate schedules (mx.lr_scheduler)");
  py::classh<nn::LRScheduler>(lr, "LRScheduler")
      .def("__call__", &nn::LRScheduler::operator(), py::arg("num_update"))
      .def_property_readonly("base_lr", &nn::LRScheduler::base_lr);
  py::classh<nn::FactorScheduler, nn::LRScheduler>(lr, "FactorScheduler")
      .def(py::init([](int64_t step, double factor, double stop_factor_lr, double base_lr,
                       int64_t warmup_steps, double warmup_begin_lr, const std::string& warmup_mode) {
             return std::make_shared<nn::FactorScheduler>(
                 step, factor, stop_factor_lr, base_lr,
                 warmup_of(warmup_steps, warmup_begin_lr, warmup_mode));
           }),
           py::arg("step"), py::arg("factor") = 1.0, py::arg("stop_factor_lr") = 1e-8,
           py::arg("base_lr") = 0.01, py::arg("warmup_steps") = 0, py::arg("warmup_begin_lr") = 0.0,
           py::arg("warmup_mode") = "linear");
  py::classh<nn::MultiFactorScheduler, nn::LRScheduler>(lr, "MultiFactorScheduler")
      .def(py::init([](std::vector<int64_t> step, double factor, double base_lr, int64_t warmup_steps,
                       double warmup_begin_lr, const std::string& warmup_mode) {
             return std::make_shared<nn::MultiFactorScheduler>(
                 std::move(step), factor, base_lr, warmup_of(warmup_steps, warmup_begin_lr, warmup_mode));
           }),
           py::arg("step"), py::arg("factor") = 1.0, py::arg("base_lr") = 0.01, py::arg("warmup_steps") = 0,
           py::arg("warmup_begin_lr") = 0.0, py::arg("warmup_mode") = "linear");
  py::classh<nn::CosineScheduler, nn::LRScheduler>(lr, "CosineScheduler")
      .def(py::init([](int64_t max_update, double base_lr, double final_lr, int64_t warmup_steps,
                       double warmup_begin_lr, const std::string& warmup_mode) {
             return std::make_shared<nn::CosineScheduler>(
                 max_update, base_lr, final_lr, warmup_of(warmup_steps, warmup_begin_lr, warmup_mode));
           }),
           py::arg("max_update"), py::arg("base_lr") = 0.01, py::arg("final_lr") = 0.0,
           py::arg("warmup_steps") = 0, py::arg("warmup_begin_lr") = 0.0, py::arg("warmup_mode") = "linear");
  py::classh<nn::PolyScheduler, nn::LRScheduler>(lr, "PolyScheduler")
      .def(py::init([](int64_t max_update, double base_lr, double pwr, double final_lr, int64_t warmup_steps,
                       double warmup_begin_lr, const std::string& warmup_mode) {
             return std::make_shared<nn::PolyScheduler>(
                 max_update, base_lr, pwr, final_lr, warmup_of(warmup_steps, warmup_begin_lr, warmup_mode));
           }),
           py::arg("max_update"), py::arg("base_lr") = 0.01, py::arg("pwr") = 2.0, py::arg("final_lr") = 0.0,
           py::arg("warmup_steps") = 0, py::arg("warmup_begin_lr") = 0.0, py::arg("warmup_mode") = "linear");
}

void bind_trainer(py::module_& g) {
  py::class_<nn::Trainer>(g, "Trainer")
      .def(py::init([](const py::object& params, const std::string& optimizer,
                       const py::object& optimizer_params, const py::kwargs&) {
             py::dict options = optimizer_params.is_none() ? py::dict() : py::dict(optimizer_params);
             std::shared_ptr<const nn::LRScheduler> schedule;
             if (options.contains("lr_scheduler")) {
               schedule = options["lr_scheduler"].cast<std::shared_ptr<nn::LRScheduler>>();
               PyDict_DelItemString(options.ptr(), "lr_scheduler");
             }
             return std::make_unique<nn::Trainer>(
                 parameters_of(params),
                 nn::create_optimizer(optimizer, attrs_from_py(options, "Trainer(" + optimizer + ")"),
                                      schedule));
           }),
           py::arg("params"), py::arg("optimizer"), py::arg("optimizer_params") = py::none())
      .def(
          "step", [](nn::Trainer& t, int64_t batch_size, bool) { t.step(batch_size); }, py::arg("batch_size"),
          py::arg("ignore_stale_grad") = false, py::call_guard<py::gil_scoped_release>())
      .def("allreduce_grads", &nn::Trainer::allreduce_grads, py::call_guard<py::gil_scoped_release>())
      .def(
          "update", [](nn::Trainer& t, int64_t batch_size, bool) { t.update(batch_size); },
          py::arg("batch_size"), py::arg("ignore_stale_grad") = false,
          py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("learning_rate", &nn::Trainer::learning_rate)
      .def("set_learning_rate", &nn::Trainer::set_learning_rate, py::arg("lr"));
}

void bind_data(py::module_& g) {
  py::module_ data = g.def_submodule("data", "Datasets and batching (mx.gluon.data)");
  py::class_<nn::ArrayDataset>(data, "_ArrayDataset")
      .def(py::init<std::vector<NDArray>>())
      .def("__len__", &nn::ArrayDataset::size)
      .def_property_readonly("num_arrays", &nn::ArrayDataset::num_arrays)
      .def("array", &nn::ArrayDataset::array)
      .def("gather", &nn::ArrayDataset::gather, py::call_guard<py::gil_scoped_release>());
}

template <class Metric>
py::class_<Metric, nn::EvalMetric> bind_metric(py::module_& m, const char* name) {
  return py::class_<Metric, nn::EvalMetric>(m, name);
}

void bind_metrics(py::module_& g) {
  py::module_ metric = g.def_submodule("metric", "Evaluation metrics (mx.metric)");
  py::class_<nn::EvalMetric>(metric, "EvalMetric")
      .def(
          "update",
          [](nn::EvalMetric& m, const py::object& labels, const py::object& preds) {
            const auto l = arrays_of(labels), p = arrays_of(preds);
            py::gil_scoped_release release;
            m.update(l, p);
          },
          py::arg("labels"), py::arg("preds"))
      .def("get", &nn::EvalMetric::get)
      .def("get_name_value", [](const nn::EvalMetric& m) { return std::vector{m.get()}; })
      .def("reset", &nn::EvalMetric::reset)
      .def_property_readonly("name", &nn::EvalMetric::name)
      .def_property_readonly("sum_metric", &nn::EvalMetric::sum_metric)
      .def_property_readonly("num_inst", &nn::EvalMetric::num_inst)
      .def("__repr__", [](const nn::EvalMetric& m) {
        const auto [name, value] = m.get();
        return "EvalMetric: {'" + name + "': " + std::to_string(value) + "}";
      });
  bind_metric<nn::Accuracy>(metric, "Accuracy").def(py::init<int>(), py::arg("axis") = 1);
  bind_metric<nn::TopKAccuracy>(metric, "TopKAccuracy").def(py::init<int>(), py::arg("top_k") = 1);
  bind_metric<nn::CrossEntropy>(metric, "CrossEntropy").def(py::init<double>(), py::arg("eps") = 1e-12);
  bind_metric<nn::MAE>(metric, "MAE").def(py::init<>());
  bind_metric<nn::MSE>(metric, "MSE").def(py::init<>());
  bind_metric<nn::F1>(metric, "F1")
      .def(py::init([](const std::string& average) {
             KILN_CHECK(average == "macro" || average == "micro", ErrorCode::kInvalidArgument,
                        "F1: average must be 'macro' or 'micro', got '", average, "'");
             return std::make_unique<nn::F1>(average == "macro" ? nn::F1Average::kMacro
                                                                : nn::F1Average::kMicro);
           }),
           py::arg("average") = "macro");
}

}  // namespace

void bind_gluon(py::module_& m) {
  py::module_ g = m.def_submodule("gluon", "Gluon: blocks, layers, losses, Trainer, data, metrics");
  bind_initializers(g);
  bind_gluon_blocks(g);
  bind_gluon_layers(g);
  bind_lr_schedulers(g);
  bind_trainer(g);
  bind_data(g);
  bind_metrics(g);
  g.def("clip_global_norm", &nn::clip_global_norm, py::arg("arrays"), py::arg("max_norm"),
        py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
