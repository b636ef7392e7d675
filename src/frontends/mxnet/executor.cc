// Symbol::simple_bind and the Executor it returns: every forward imports the symbol with the
// current parameter arrays as constants, compiles it with the runtime and runs it.
#include <algorithm>
#include <sstream>

#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/symbol.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace kiln {

Executor Symbol::simple_bind(Device device, const std::map<std::string, Shape>& shapes) const {
  KILN_CHECK(device.is_cpu(), ErrorCode::kUnsupported,
             "simple_bind: the symbolic executor runs on the CPU, got ", device.to_string());
  const InferredShapes inferred = infer_shape(shapes);
  const std::vector<std::string> arg_names = list_arguments(), aux_names = list_auxiliary_states();
  std::map<std::string, NDArray> args, aux;
  std::ostringstream unknown;
  const auto allocate = [&](const std::vector<std::string>& names, const std::vector<Shape>& dims,
                            std::map<std::string, NDArray>& into) {
    for (size_t i = 0; i < names.size(); ++i) {
      // Every variable gets an array, so every shape must be known.
      if (!inferred.complete && dims[i].ndim() == 0 && !shapes.count(names[i])) {
        unknown << " " << names[i];
        continue;
      }
      into[names[i]] = nd::zeros(dims[i], DType::kFloat32, device);
    }
  };
  allocate(arg_names, inferred.arg_shapes, args);
  allocate(aux_names, inferred.aux_shapes, aux);
  KILN_CHECK(unknown.str().empty(), ErrorCode::kInvalidArgument,
             "simple_bind: cannot infer the shapes of:", unknown.str(), " (give them in the shape map)");
  std::vector<std::string> inputs;
  for (const auto& [name, shape] : shapes) inputs.push_back(name);
  return Executor(*this, device, std::move(args), std::move(aux), std::move(inputs));
}

Executor::Executor(Symbol symbol, Device device, std::map<std::string, NDArray> args,
                   std::map<std::string, NDArray> aux, std::vector<std::string> input_names)
    : symbol_(std::move(symbol)),
      device_(device),
      args_(std::move(args)),
      aux_(std::move(aux)),
      input_names_(std::move(input_names)) {}

void Executor::forward(bool is_train) {
  KILN_CHECK(
      !is_train, ErrorCode::kUnsupported,
      "Executor::forward: training mode (batch statistics, gradients) is not supported; use is_train=false");
  mxnet::NamedTensors params;
  std::map<std::string, Shape> input_shapes;
  const auto is_input = [&](const std::string& name) {
    return std::find(input_names_.begin(), input_names_.end(), name) != input_names_.end();
  };
  for (const auto* dict : {&args_, &aux_})
    for (const auto& [name, array] : *dict) {
      if (is_input(name)) {
        input_shapes[name] = array.shape();
        continue;
      }
      params.names.push_back(name);
      params.tensors.push_back(array.tensor().contiguous());
    }
  graph::Graph g = mxnet::import_symbol(symbol_.to_mxnet(), params, "symbol", input_shapes);
  g.infer_shapes();
  runtime::Executor exec(runtime::compile(g));
  std::vector<Tensor> inputs;
  for (const graph::Value* v : g.inputs()) {
    const auto it = args_.find(v->name);
    KILN_CHECK(it != args_.end(), ErrorCode::kNotFound, "Executor::forward: no array bound for input '",
               v->name, "'");
    inputs.push_back(it->second.tensor().contiguous());
  }
  outputs_.clear();
  for (Tensor& t : exec.run(inputs)) outputs_.emplace_back(std::move(t));
}

}  // namespace kiln
