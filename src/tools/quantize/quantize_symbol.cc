// quantize_symbol (include/kiln/quantize.hpp): the Symbol form of quantize_model, for the MXNet-style
// APIs. The symbol is imported with its parameters, quantized, and exported back; QuantizeLinear
// and DequantizeLinear, which MXNet lacks, become `_kiln_` nodes (frontends/mxnet/export.h).
#include <algorithm>

#include "frontends/mxnet/export.h"
#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/quantize.hpp"
#include "kiln/symbol.hpp"

namespace kiln::quantization {

namespace {

std::string ints_text(const Shape& shape) {
  std::string text = "(";
  for (int i = 0; i < shape.ndim(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.ndim() == 1 ? ",)" : ")");
}

// Names (with MXNet's arg:/aux: prefixes) and values of the parameters, as a .params file holds them.
mxnet::NamedTensors named_params(const std::map<std::string, NDArray>& arg_params,
                                 const std::map<std::string, NDArray>& aux_params) {
  mxnet::NamedTensors params;
  for (const auto& [prefix, dict] : {std::pair{"arg:", &arg_params}, std::pair{"aux:", &aux_params}})
    for (const auto& [name, array] : *dict) {
      params.names.push_back(prefix + name);
      params.tensors.push_back(array.tensor().contiguous());
    }
  return params;
}

// The Kiln nodes each named MXNet node became: the node NAME itself and its helpers NAME/... (none
// for an op that imports as nothing, such as Dropout).
std::vector<std::string> kiln_node_names(const mxnet::MxnetSymbol& symbol, const graph::Graph& g,
                                         const std::vector<std::string>& mxnet_names) {
  std::vector<std::string> out;
  for (const std::string& name : mxnet_names) {
    const bool is_op = std::any_of(symbol.nodes.begin(), symbol.nodes.end(),
                                   [&](const auto& node) { return node.op != "null" && node.name == name; });
    KILN_CHECK(is_op, ErrorCode::kInvalidArgument, "quantize_symbol: excluded_node_names: '", name,
               "' is not an op node of the symbol");
    for (const graph::Node* n : g.topological_order())
      if (n->name == name || n->name.rfind(name + "/", 0) == 0) out.push_back(n->name);
  }
  return out;
}

// The quantized graph as a Symbol with its parameters. Every parameter variable carries its
// `__shape__` (a 0-d scale as "()") and, when not float32, its `__dtype__`, so that simple_bind
// allocates the int8 weights and the scales of the `_kiln_` nodes, whose shapes no op implies.
QuantizedSymbol to_symbol(const graph::Graph& g) {
  mxnet::ExportedModel exported = mxnet::export_graph(g);
  std::map<std::string, const Tensor*> by_name;
  for (size_t i = 0; i < exported.params.names.size(); ++i) {
    const std::string& name = exported.params.names[i];
    by_name[name.substr(name.find(':') + 1)] = &exported.params.tensors[i];
  }
  for (mxnet::MxnetSymbol::Node& node : exported.symbol.nodes) {
    const auto it = by_name.find(node.name);
    if (node.op != "null" || it == by_name.end()) continue;
    node.attrs["__shape__"] = ints_text(it->second->shape());
    if (it->second->dtype() != DType::kFloat32)
      node.attrs["__dtype__"] = std::to_string(mxnet::mxnet_flag_from_dtype(it->second->dtype()));
  }
  QuantizedSymbol out;
  for (size_t i = 0; i < exported.params.names.size(); ++i) {
    const std::string& name = exported.params.names[i];
    const bool is_aux = name.rfind("aux:", 0) == 0;
    (is_aux ? out.aux_params : out.arg_params)[name.substr(name.find(':') + 1)] =
        NDArray(exported.params.tensors[i]);
  }
  out.symbol = Symbol::from_mxnet(exported.symbol);
  return out;
}

}  // namespace

QuantizedSymbol quantize_symbol(const Symbol& symbol, const std::map<std::string, NDArray>& arg_params,
                                const std::map<std::string, NDArray>& aux_params,
                                const CalibrationBatches& batches, const QuantizeOptions& options,
                                const std::map<std::string, Shape>& input_shapes,
                                CalibrationResult* calibration) {
  // The inputs' shapes, which the quantizer needs to see the data as float tensors of known rank:
  // those given, else the first calibration batch's with a free batch dimension (the quantized
  // symbol then takes any batch size). The first batch is kept and given back first.
  std::map<std::string, Shape> shapes;
  std::map<std::string, Tensor> first;
  const bool has_first = batches && batches(first);
  for (const auto& [name, tensor] : first) {
    std::vector<int64_t> dims = tensor.shape().dims();
    if (!dims.empty()) dims[0] = Shape::kUnknown;
    std::string input = name;
    if (input.empty())  // a single unnamed array: the one argument that is no parameter or label
      for (const std::string& argument : symbol.list_arguments())
        if (!arg_params.count(argument) && !argument.ends_with("label")) input = argument;
    shapes[input] = Shape(dims);
  }
  for (const auto& [name, shape] : input_shapes) shapes[name] = shape;
  const CalibrationBatches replay = [&,
                                     given_first = !has_first](std::map<std::string, Tensor>& batch) mutable {
    if (!given_first) {
      given_first = true;
      batch = first;
      return true;
    }
    return batches(batch);
  };

  const mxnet::MxnetSymbol mxnet_symbol = symbol.to_mxnet();
  graph::Graph g = mxnet::import_symbol(mxnet_symbol, named_params(arg_params, aux_params), "symbol", shapes);
  QuantizeOptions kiln_options = options;
  kiln_options.excluded_node_names = kiln_node_names(mxnet_symbol, g, options.excluded_node_names);
  if (!batches) return to_symbol(quantize_dynamic(std::move(g), kiln_options));
  return to_symbol(quantize_model(std::move(g), replay, kiln_options, calibration));
}

}  // namespace kiln::quantization
