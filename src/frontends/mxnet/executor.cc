// Symbol::simple_bind and the Executor it returns. The symbol is imported with every array (data
// and parameters) as a graph input, so one compiled plan serves every forward whatever values the
// arrays hold; a new plan is made only when the arrays' shapes or dtypes change.
#include <sstream>

#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/symbol.hpp"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace kiln {

struct Executor::Compiled {
  std::string signature;            // the arrays' names, dtypes and shapes it was compiled for
  std::vector<std::string> inputs;  // the array feeding each graph input, in order
  runtime::Executor exec;

  Compiled(std::string sig, std::vector<std::string> names, std::shared_ptr<const runtime::Plan> plan)
      : signature(std::move(sig)), inputs(std::move(names)), exec(std::move(plan)) {}
};

namespace {

std::string signature_of(const std::map<std::string, NDArray>& args,
                         const std::map<std::string, NDArray>& aux) {
  std::ostringstream os;
  for (const auto* dict : {&args, &aux})
    for (const auto& [name, array] : *dict) os << name << ':' << array.dtype() << array.shape() << ';';
  return os.str();
}

const NDArray* find_array(const std::map<std::string, NDArray>& args,
                          const std::map<std::string, NDArray>& aux, const std::string& name) {
  for (const auto* dict : {&args, &aux})
    if (const auto it = dict->find(name); it != dict->end()) return &it->second;
  return nullptr;
}

}  // namespace

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
  return Executor(*this, device, std::move(args), std::move(aux));
}

Executor::Executor(Symbol symbol, Device device, std::map<std::string, NDArray> args,
                   std::map<std::string, NDArray> aux)
    : symbol_(std::move(symbol)), device_(device), args_(std::move(args)), aux_(std::move(aux)) {}

Executor::Executor(const Executor& other)
    : symbol_(other.symbol_),
      device_(other.device_),
      args_(other.args_),
      aux_(other.aux_),
      outputs_(other.outputs_) {}

Executor& Executor::operator=(const Executor& other) {
  if (this != &other) *this = Executor(other);
  return *this;
}

Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;
Executor::~Executor() = default;

void Executor::forward(bool is_train) {
  KILN_CHECK(
      !is_train, ErrorCode::kUnsupported,
      "Executor::forward: training mode (batch statistics, gradients) is not supported; use is_train=false");
  const std::string signature = signature_of(args_, aux_);
  if (!compiled_ || compiled_->signature != signature) {
    std::map<std::string, Shape> shapes;
    for (const auto* dict : {&args_, &aux_})
      for (const auto& [name, array] : *dict) shapes[name] = array.shape();
    graph::Graph g = mxnet::import_symbol(symbol_.to_mxnet(), {}, "symbol", shapes);
    std::vector<std::string> inputs;
    for (graph::Value* v : g.inputs()) {
      const NDArray* array = find_array(args_, aux_, v->name);
      KILN_CHECK(array != nullptr, ErrorCode::kNotFound, "Executor::forward: no array bound for '", v->name,
                 "'");
      v->info->dtype = array->dtype();
      inputs.push_back(v->name);
    }
    g.infer_shapes();
    compiled_ = std::make_unique<Compiled>(signature, std::move(inputs), runtime::compile(g));
  }
  std::vector<Tensor> feed;
  for (const std::string& name : compiled_->inputs)
    feed.push_back(find_array(args_, aux_, name)->tensor().contiguous());
  outputs_.clear();
  for (Tensor& t : compiled_->exec.run(feed)) outputs_.emplace_back(std::move(t));
}

}  // namespace kiln
