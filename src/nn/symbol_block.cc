// SymbolBlock: a model graph run as a HybridBlock. The constructors make the parameters (a graph's
// learnable constants, or an MXNet symbol's variables with values); runnable_for imports a symbol
// per input signature; hybrid_forward interprets the graph node by node with nd::invoke,
// switching BatchNormalization and Dropout to training behaviour when autograd says so.
#include "kiln/nn/symbol_block.hpp"

#include <algorithm>
#include <optional>
#include <set>
#include <sstream>
#include <unordered_map>

#include "frontends/mxnet/import.h"
#include "frontends/mxnet/training_graph.h"
#include "frontends/onnx/import.h"
#include "graph/graph.h"
#include "kiln/autograd.hpp"
#include "kiln/mxnet_format.hpp"

namespace kiln::nn {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

// The inputs of `op` that hold what training learns (weights, biases, scales, tables) or, for
// BatchNormalization, the running statistics it updates.
bool learnable_input(const Node& node, size_t slot, const Tensor& constant) {
  const std::string& op = node.op;
  if (op == "Conv" || op == "ConvTranspose" || op == "Gemm") return slot == 1 || slot == 2;
  if (op == "BatchNormalization") return slot >= 1 && slot <= 4;
  if (op == "LayerNormalization" || op == "InstanceNormalization" || op == "GroupNormalization")
    return slot == 1 || slot == 2;
  if (op == "PRelu") return slot == 1;
  if (op == "Gather") return slot == 0;
  // A constant operand of a product or a sum is a weight or a bias (MatMul + Add as exporters
  // write Dense); scalars there are fixed factors (a Gelu's 0.5, an attention's 1/sqrt(d)).
  if (op == "MatMul") return true;
  if (op == "Add" || op == "Sub" || op == "Mul" || op == "Div") return constant.shape().numel() > 1;
  return false;
}

bool is_running_statistic(const Node& node, size_t slot) {
  return node.op == "BatchNormalization" && (slot == 3 || slot == 4);
}

// Ops that only rearrange their input 0 (as importers put a Reshape between a parameter and the
// op reading it: MXNet's PReLU slope).
bool rearranges(const std::string& op) {
  return op == "Reshape" || op == "Unsqueeze" || op == "Squeeze" || op == "Flatten" || op == "Transpose" ||
         op == "Expand" || op == "Identity";
}

enum class ConstantRole { kConstant, kLearned, kRunningStatistic };

// What the constant `constant` held in `v` is to the nodes reading `v`.
ConstantRole role_of(const Value* v, const Tensor& constant) {
  ConstantRole role = ConstantRole::kConstant;
  for (const Node* user : v->users)
    for (size_t slot = 0; slot < user->inputs.size(); ++slot) {
      if (user->inputs[slot] != v) continue;
      if (is_running_statistic(*user, slot)) return ConstantRole::kRunningStatistic;
      if (learnable_input(*user, slot, constant)) role = ConstantRole::kLearned;
      if (slot == 0 && rearranges(user->op) && role_of(user->outputs[0], constant) != ConstantRole::kConstant)
        role = ConstantRole::kLearned;
    }
  return role;
}

std::string signature_of(const std::vector<NDArray>& inputs) {
  std::ostringstream key;
  for (const NDArray& x : inputs) key << x.shape() << dtype_name(x.dtype()) << ';';
  return key.str();
}

// A parameter file's name without MXNet's `arg:` / `aux:` prefix.
std::string parameter_name(const std::string& stored) {
  if (stored.rfind("arg:", 0) == 0 || stored.rfind("aux:", 0) == 0) return stored.substr(4);
  return stored;
}

// Throws kiln::Error naming the first of `input_names` not among `names`.
void check_inputs_exist(const std::vector<std::string>& input_names, const std::set<std::string>& names,
                        const std::string& where) {
  for (const std::string& input : input_names)
    KILN_CHECK(names.count(input) != 0, ErrorCode::kNotFound, where, ": '", input,
               "' is not an input of the graph");
}

NDArray mode_flag() {
  return nd::scalar(autograd::is_training() ? 1 : 0, DType::kBool);
}

}  // namespace

// The order is worked out once per graph, not on every call.
struct SymbolBlock::Runnable {
  explicit Runnable(Graph g) : graph(std::move(g)), order(graph.topological_order()) {}
  Graph graph;
  std::vector<Node*> order;
};

struct SymbolBlock::Source {
  std::unique_ptr<Runnable> given;                                // the graph given, or
  std::optional<mxnet::MxnetSymbol> symbol;                       // the symbol,
  std::map<std::string, std::unique_ptr<Runnable>> of_signature;  // imported per input signature
};

SymbolBlock::SymbolBlock(graph::Graph graph, std::vector<std::string> input_names)
    : HybridBlock("symbolblock"), source_(std::make_unique<Source>()), input_names_(std::move(input_names)) {
  source_->given = std::make_unique<Runnable>(std::move(graph));
  const Graph& g = source_->given->graph;
  const std::string where = "SymbolBlock '" + name() + "' (graph '" + g.name + "')";
  std::set<std::string> graph_inputs;
  for (const Value* v : g.inputs()) graph_inputs.insert(v->name);
  if (input_names_.empty())
    for (const Value* v : g.inputs()) input_names_.push_back(v->name);
  check_inputs_exist(input_names_, graph_inputs, where);
  for (const Value* v : g.inputs())
    KILN_CHECK(std::find(input_names_.begin(), input_names_.end(), v->name) != input_names_.end(),
               ErrorCode::kInvalidArgument, where, ": graph input '", v->name,
               "' is neither a data input nor a parameter with a value (give its value, or name it in "
               "input_names)");
  for (const Value* v : g.initializers()) {
    if (!is_floating(v->constant.dtype())) continue;
    const ConstantRole role = role_of(v, v->constant);
    if (role == ConstantRole::kConstant) continue;
    ParameterOptions options{.shape = v->constant.shape(), .dtype = v->constant.dtype()};
    if (role == ConstantRole::kRunningStatistic) options.grad_req = GradReq::kNull;
    std::shared_ptr<Parameter> param = register_parameter_as(v->name, std::move(options));
    param->set_data(NDArray(v->constant));
    parameters_[v->name] = std::move(param);
  }
}

SymbolBlock::SymbolBlock(mxnet::MxnetSymbol symbol, std::vector<std::string> input_names,
                         const std::map<std::string, Tensor>& params)
    : HybridBlock("symbolblock"), source_(std::make_unique<Source>()), input_names_(std::move(input_names)) {
  const std::string where = "SymbolBlock '" + name() + "'";
  std::set<std::string> variables;
  for (const mxnet::MxnetSymbol::Node& node : symbol.nodes)
    if (node.op == "null") variables.insert(node.name);
  check_inputs_exist(input_names_, variables, where);
  std::map<std::string, Tensor> values;
  for (const auto& [stored, value] : params) values[parameter_name(stored)] = value;
  const std::vector<std::string> aux = Symbol::from_mxnet(symbol).list_auxiliary_states();
  // In the symbol's order, as MXNet lists them; values of names the symbol lacks are unused (as
  // MXNet's SymbolBlock.imports with ignore_extra).
  for (const mxnet::MxnetSymbol::Node& node : symbol.nodes) {
    const auto value = values.find(node.name);
    if (node.op != "null" || value == values.end() || !value->second.defined()) continue;
    ParameterOptions options{.shape = value->second.shape(), .dtype = value->second.dtype()};
    if (std::find(aux.begin(), aux.end(), node.name) != aux.end()) options.grad_req = GradReq::kNull;
    std::shared_ptr<Parameter> param = register_parameter_as(node.name, std::move(options));
    param->set_data(NDArray(value->second));
    parameters_[node.name] = std::move(param);
  }
  source_->symbol = std::move(symbol);
}

SymbolBlock::SymbolBlock(const Symbol& outputs, std::vector<std::string> input_names,
                         const std::map<std::string, NDArray>& params)
    : SymbolBlock(outputs.to_mxnet(), std::move(input_names), [&] {
        std::map<std::string, Tensor> tensors;
        for (const auto& [name, array] : params) tensors[name] = array.tensor();
        return tensors;
      }()) {}

SymbolBlock::~SymbolBlock() = default;

std::shared_ptr<SymbolBlock> SymbolBlock::imports(const std::string& symbol_file,
                                                  const std::vector<std::string>& input_names,
                                                  const std::string& param_file) {
  const bool is_onnx = symbol_file.size() >= 5 && symbol_file.substr(symbol_file.size() - 5) == ".onnx";
  if (is_onnx) {
    KILN_CHECK(param_file.empty(), ErrorCode::kInvalidArgument, "SymbolBlock::imports('", symbol_file,
               "'): an ONNX model holds its own parameters, param_file '", param_file, "' is not read");
    return std::make_shared<SymbolBlock>(onnx::import_model(symbol_file), input_names);
  }
  std::map<std::string, Tensor> params;
  if (!param_file.empty()) {
    mxnet::NamedTensors stored = mxnet::load_params(param_file);
    KILN_CHECK(stored.names.size() == stored.tensors.size(), ErrorCode::kInvalidArgument,
               "SymbolBlock::imports: '", param_file, "' holds a list of arrays without names");
    for (size_t i = 0; i < stored.names.size(); ++i) params[stored.names[i]] = std::move(stored.tensors[i]);
  }
  return std::make_shared<SymbolBlock>(mxnet::load_symbol_json(symbol_file), input_names, params);
}

const SymbolBlock::Runnable& SymbolBlock::runnable_for(const std::vector<NDArray>& inputs) {
  if (source_->given) return *source_->given;
  std::unique_ptr<Runnable>& runnable = source_->of_signature[signature_of(inputs)];
  if (runnable) return *runnable;
  // Every variable a graph input (the parameters too, so that nothing is folded into constants
  // that training would leave stale), with the inputs' and the parameters' shapes.
  std::map<std::string, Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) shapes[input_names_[i]] = inputs[i].shape();
  for (const auto& [param_name, param] : parameters_) shapes[param_name] = param->shape();
  Graph imported = mxnet::import_symbol(*source_->symbol, {}, "SymbolBlock '" + name() + "'", shapes);
  for (Value* v : imported.inputs()) {
    const auto input = std::find(input_names_.begin(), input_names_.end(), v->name);
    if (input != input_names_.end()) {
      v->info->dtype = inputs[static_cast<size_t>(input - input_names_.begin())].dtype();
      continue;
    }
    const auto param = parameters_.find(v->name);
    KILN_CHECK(param != parameters_.end(), ErrorCode::kInvalidArgument, "SymbolBlock '", name(),
               "': graph input '", v->name,
               "' is neither a data input nor a parameter with a value (give its value, or name it in "
               "input_names)");
    v->info->dtype = param->second->dtype();
  }
  // The importer reads Dropout as the identity (inference); the block needs it back to train.
  mxnet::restore_dropouts(imported, *source_->symbol, false);
  runnable = std::make_unique<Runnable>(std::move(imported));
  return *runnable;
}

std::vector<NDArray> SymbolBlock::hybrid_forward(const std::vector<NDArray>& inputs) {
  KILN_CHECK(inputs.size() == input_names_.size(), ErrorCode::kInvalidArgument, "SymbolBlock '", name(),
             "': expected ", input_names_.size(), " inputs, got ", inputs.size());
  const Runnable& runnable = runnable_for(inputs);
  const Graph& g = runnable.graph;
  std::unordered_map<const Value*, NDArray> values;
  for (size_t i = 0; i < inputs.size(); ++i) values[g.find_value(input_names_[i])] = inputs[i];
  // The parameter a graph input or constant holds (named as it), else null.
  const auto parameter_of = [&](const Value* v) -> Parameter* {
    const auto it = v->producer == nullptr ? parameters_.find(v->name) : parameters_.end();
    return it == parameters_.end() ? nullptr : it->second.get();
  };
  const auto value_of = [&](const Value* v) -> NDArray {
    if (v == nullptr) return NDArray();
    if (const auto it = values.find(v); it != values.end()) return it->second;
    if (Parameter* param = parameter_of(v)) return values[v] = param->data();
    KILN_CHECK(v->is_constant(), ErrorCode::kInternal, "SymbolBlock '", name(), "': no value for '", v->name,
               "'");
    return values[v] = NDArray(v->constant);
  };
  const bool training = autograd::is_training();
  for (const Node* node : runnable.order) {
    std::vector<NDArray> args;
    for (const Value* v : node->inputs) args.push_back(value_of(v));
    AttrMap attrs = node->attrs;
    int num_outputs = static_cast<int>(node->outputs.size());
    if (node->op == "Dropout") {
      args.resize(3);
      args[2] = mode_flag();
      num_outputs = 2;  // the gradient rule needs the mask
    }
    // Batch statistics need the running ones as parameters to update (not so in a graph whose
    // statistics are computed, not stored).
    const bool batch_stats = node->op == "BatchNormalization" && training &&
                             parameter_of(node->inputs.at(3)) && parameter_of(node->inputs.at(4));
    if (node->op == "BatchNormalization") {
      attrs.insert_or_assign("training_mode", AttrValue(int64_t{batch_stats ? 1 : 0}));
      num_outputs = batch_stats ? 3 : 1;
    }
    const std::vector<NDArray> outs = nd::invoke(node->op, args, attrs, num_outputs);
    if (batch_stats)
      for (size_t k : {1, 2}) parameter_of(node->inputs[k + 2])->set_data(outs[k]);
    for (size_t k = 0; k < node->outputs.size() && k < outs.size(); ++k) values[node->outputs[k]] = outs[k];
  }
  std::vector<NDArray> outputs;
  for (const Value* v : g.outputs()) outputs.push_back(value_of(v));
  return outputs;
}

}  // namespace kiln::nn
