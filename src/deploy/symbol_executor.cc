// Symbol::simple_bind and the Executor it returns. The symbol is imported with every array (data
// and parameters) as a graph input, so one compiled plan serves every forward whatever values the
// arrays hold; a new plan is made only when the arrays' shapes or dtypes change.
#include <sstream>

#include "deploy/symbol_executor_training.h"
#include "frontends/mxnet/attr_parse.h"
#include "frontends/mxnet/import.h"
#include "frontends/mxnet/training_graph.h"
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

GradReq parse_grad_req(const std::string& text, const std::string& argument) {
  if (text == "write") return GradReq::kWrite;
  if (text == "add") return GradReq::kAdd;
  if (text == "null") return GradReq::kNull;
  raise(ErrorCode::kInvalidArgument, "simple_bind: grad_req '", text, "' for argument '", argument,
        "'; expected 'write', 'add' or 'null'");
}

}  // namespace

Executor Symbol::simple_bind(Device device, const std::map<std::string, Shape>& shapes,
                             const std::string& grad_req) const {
  std::map<std::string, std::string> per_argument;
  for (const std::string& name : list_arguments()) per_argument[name] = grad_req;
  return simple_bind(device, shapes, per_argument);
}

Executor Symbol::simple_bind(Device device, const std::map<std::string, Shape>& shapes,
                             const std::map<std::string, std::string>& grad_req) const {
  KILN_CHECK(device.is_cpu(), ErrorCode::kUnsupported,
             "simple_bind: the symbolic executor runs on the CPU, got ", device.to_string());
  const InferredShapes inferred = infer_shape(shapes);
  const std::vector<std::string> arg_names = list_arguments(), aux_names = list_auxiliary_states();
  std::map<std::string, NDArray> args, aux;
  // A variable's `__dtype__` (an mshadow type flag) is its array's dtype, as MXNet's type inference
  // takes it; all others are float32.
  std::map<std::string, DType> dtypes;
  for (const mxnet::MxnetSymbol::Node& node : to_mxnet().nodes)
    if (node.op == "null" && node.attrs.count("__dtype__")) {
      const std::string what = "variable '" + node.name + "'";
      dtypes[node.name] =
          mxnet::dtype_from_mxnet_flag(mxnet::MxnetAttrs(node.attrs, what).get_int("__dtype__", 0), what);
    }
  std::ostringstream unknown;
  const auto allocate = [&](const std::vector<std::string>& names, const std::vector<Shape>& dims,
                            std::map<std::string, NDArray>& into) {
    for (size_t i = 0; i < names.size(); ++i) {
      // Every variable gets an array, so every shape must be known.
      if (!inferred.complete && dims[i].ndim() == 0 && !shapes.count(names[i])) {
        unknown << " " << names[i];
        continue;
      }
      into[names[i]] =
          nd::zeros(dims[i], dtypes.count(names[i]) ? dtypes.at(names[i]) : DType::kFloat32, device);
    }
  };
  allocate(arg_names, inferred.arg_shapes, args);
  allocate(aux_names, inferred.aux_shapes, aux);
  KILN_CHECK(unknown.str().empty(), ErrorCode::kInvalidArgument,
             "simple_bind: cannot infer the shapes of:", unknown.str(), " (give them in the shape map)");
  std::map<std::string, NDArray> grads;
  std::map<std::string, GradReq> reqs;
  for (const auto& [name, text] : grad_req) {
    const auto it = args.find(name);
    KILN_CHECK(it != args.end(), ErrorCode::kInvalidArgument, "simple_bind: grad_req names '", name,
               "', which is not an argument");
    reqs[name] = parse_grad_req(text, name);
    if (reqs[name] != GradReq::kNull) grads[name] = nd::zeros(it->second.shape(), it->second.dtype(), device);
  }
  return Executor(*this, device, std::move(args), std::move(aux), std::move(grads), std::move(reqs));
}

Executor::Executor(Symbol symbol, Device device, std::map<std::string, NDArray> args,
                   std::map<std::string, NDArray> aux, std::map<std::string, NDArray> grads,
                   std::map<std::string, GradReq> grad_reqs)
    : symbol_(std::move(symbol)),
      device_(device),
      args_(std::move(args)),
      aux_(std::move(aux)),
      grads_(std::move(grads)),
      grad_reqs_(std::move(grad_reqs)) {
  for (const auto& [name, array] : grads_)
    KILN_CHECK(args_.count(name) && array.shape() == args_.at(name).shape(), ErrorCode::kInvalidArgument,
               "Executor: gradient array '", name, "' of shape ", array.shape(),
               " has no argument of that shape");
  for (const auto& [name, array] : grads_)
    if (!grad_reqs_.count(name)) grad_reqs_[name] = GradReq::kWrite;
}

Executor::Executor(const Executor& other)
    : symbol_(other.symbol_),
      device_(other.device_),
      args_(other.args_),
      aux_(other.aux_),
      grads_(other.grads_),
      grad_reqs_(other.grad_reqs_),
      outputs_(other.outputs_) {}

Executor& Executor::operator=(const Executor& other) {
  if (this != &other) *this = Executor(other);
  return *this;
}

Executor::Executor(Executor&&) noexcept = default;
Executor& Executor::operator=(Executor&&) noexcept = default;
Executor::~Executor() = default;

std::string Executor::signature() const {
  std::ostringstream os;
  for (const auto* dict : {&args_, &aux_})
    for (const auto& [name, array] : *dict) os << name << ':' << array.dtype() << array.shape() << ';';
  return os.str();
}

std::vector<NDArray> Executor::grad_arrays() const {
  std::vector<NDArray> arrays;
  for (const std::string& name : symbol_.list_arguments()) {
    const auto it = grads_.find(name);
    arrays.push_back(it != grads_.end() ? it->second : NDArray());
  }
  return arrays;
}

void Executor::forward(bool is_train) {
  if (is_train) return forward_training();
  const std::string sig = signature();
  if (!compiled_ || compiled_->signature != sig) {
    std::vector<std::string> inputs;
    graph::Graph g = mxnet::import_with_arrays(symbol_.to_mxnet(), args_, aux_, inputs);
    compiled_ = std::make_unique<Compiled>(sig, std::move(inputs), runtime::compile(g));
  }
  std::vector<Tensor> feed;
  for (const std::string& name : compiled_->inputs) {
    const auto it = args_.find(name);
    feed.push_back((it != args_.end() ? it->second : aux_.at(name)).tensor().contiguous());
  }
  outputs_.clear();
  for (Tensor& t : compiled_->exec.run(feed)) outputs_.emplace_back(std::move(t));
}

}  // namespace kiln
