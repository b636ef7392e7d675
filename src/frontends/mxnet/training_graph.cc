// make_training_graph: see training_graph.h. Each MXNet node's output is the graph value named
// `NAME_output` (import.h), which is how the nodes to rewrite are found.
#include "frontends/mxnet/training_graph.h"

#include "frontends/mxnet/attr_parse.h"
#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"

namespace kiln::mxnet {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

std::string label_of(const MxnetSymbol::Node& node) {
  return node.op + " '" + node.name + "'";
}

// The graph node computing MXNet node `node`'s only output, which must be an `op` node.
Node* producer_of(const Graph& g, const MxnetSymbol::Node& node, const std::string& op) {
  Value* v = g.find_value(output_name(node, 0));
  KILN_CHECK(v != nullptr && v->producer != nullptr && v->producer->op == op, ErrorCode::kInternal,
             label_of(node), ": the imported graph has no ", op, " node computing '", output_name(node, 0),
             "'");
  return v->producer;
}

// Replaces `old` by a node of `op` with the given inputs, attributes and outputs; its first output
// takes over the old output's uses and name.
Node* replace_node(Graph& g, Node* old, const std::string& op, std::vector<Value*> inputs, AttrMap attrs,
                   int num_outputs) {
  Value* old_output = old->outputs[0];
  const std::string name = old_output->name;
  Node* n =
      g.add_node(op, std::move(inputs), std::move(attrs), g.fresh_name(old->name + "/train"), num_outputs);
  g.replace_all_uses(old_output, n->outputs[0]);
  g.remove_node(old);
  g.rename_value(n->outputs[0], name);
  return n;
}

void batch_norm(Graph& g, const MxnetSymbol::Node& node, TrainingGraph& out) {
  const MxnetAttrs a(node.attrs, label_of(node));
  if (a.get_bool("use_global_stats", false)) return;  // the moving statistics, as at inference
  if (a.get_bool("output_mean_var", false))
    raise(ErrorCode::kUnsupported, label_of(node), ": output_mean_var in training mode");
  Node* old = producer_of(g, node, "BatchNormalization");
  AttrMap attrs = old->attrs;
  attrs.insert_or_assign("training_mode", AttrValue(int64_t{1}));
  attrs.insert_or_assign("momentum", AttrValue(a.get_float("momentum", 0.9)));
  const std::vector<Value*> inputs = old->inputs;
  Node* n = replace_node(g, old, "BatchNormalization", inputs, std::move(attrs), 3);
  for (int k : {1, 2}) {
    KILN_CHECK(inputs[static_cast<size_t>(k + 2)]->producer == nullptr, ErrorCode::kInternal, label_of(node),
               ": its moving statistics are not graph inputs");
    g.add_output(n->outputs[static_cast<size_t>(k)]);
    out.aux_updates.push_back(inputs[static_cast<size_t>(k + 2)]->name);
  }
}

void dropout(Graph& g, const MxnetSymbol::Node& node, bool training) {
  const MxnetAttrs a(node.attrs, label_of(node));
  if (!a.get_ints("axes").empty()) raise(ErrorCode::kUnsupported, label_of(node), ": Dropout with axes");
  const double p = a.get_float("p", 0.5);
  if (p == 0) return;
  Node* old = producer_of(g, node, "Identity");
  // Without inferred types (a model imported before its input shapes are known) the ratio is float32.
  const DType dtype = old->inputs[0]->info ? old->inputs[0]->info->dtype : DType::kFloat32;
  Value* ratio = g.add_initializer(g.fresh_name(node.name + "/ratio"), Tensor::full(Shape{}, p, dtype));
  Value* mode = g.add_initializer(g.fresh_name(node.name + "/training"),
                                  Tensor::full(Shape{}, training ? 1 : 0, DType::kBool));
  replace_node(g, old, "Dropout", {old->inputs[0], ratio, mode}, {}, 2);
}

// The value of MXNet entry `e` in the imported graph.
Value* value_of(const Graph& g, const MxnetSymbol& symbol, const MxnetSymbol::Entry& e) {
  const MxnetSymbol::Node& producer = symbol.nodes.at(static_cast<size_t>(e.node));
  Value* v = g.find_value(output_name(producer, e.index));
  KILN_CHECK(v != nullptr, ErrorCode::kInternal, "mxnet training graph: no value for ", label_of(producer),
             " output ", e.index);
  return v;
}

std::string softmax_output_loss(Graph& g, const MxnetSymbol& symbol, const MxnetSymbol::Node& node) {
  const MxnetAttrs a(node.attrs, label_of(node));
  const std::string normalization = a.get_string("normalization", "null");
  if (normalization != "null" && normalization != "batch")
    raise(ErrorCode::kUnsupported, label_of(node), ": normalization '", normalization,
          "' in training mode (only 'null' and 'batch')");
  if (a.get_bool("out_grad", false)) raise(ErrorCode::kUnsupported, label_of(node), ": out_grad");
  if (a.get_float("smooth_alpha", 0) != 0) raise(ErrorCode::kUnsupported, label_of(node), ": smooth_alpha");
  Value* data = value_of(g, symbol, node.inputs.at(0));
  Value* label = value_of(g, symbol, node.inputs.at(1));
  KILN_CHECK(data->info && data->info->shape.is_known(), ErrorCode::kInternal, label_of(node),
             ": the data's shape is not known");
  const Shape& shape = data->info->shape;
  const bool multi = a.get_bool("multi_output", false);
  if (a.get_bool("preserve_shape", false))
    raise(ErrorCode::kUnsupported, label_of(node), ": preserve_shape in training mode");
  Value* scores = data;
  if (!multi && shape.ndim() != 2)
    scores = g.add_node("Flatten", {data}, {{"axis", int64_t{1}}}, g.fresh_name(node.name + "/flatten"))
                 ->outputs[0];
  Value* labels =
      g.add_node("Cast", {label}, {{"to", dtype_to_onnx(DType::kInt64)}}, g.fresh_name(node.name + "/labels"))
          ->outputs[0];
  AttrMap attrs{{"reduction", std::string("sum")}};
  if (a.get_bool("use_ignore", false))

    attrs.insert_or_assign("ignore_index", AttrValue(static_cast<int64_t>(a.get_float("ignore_label", -1))));
  Value* loss =
      g.add_node("SoftmaxCrossEntropyLoss", {scores, labels}, attrs, g.fresh_name(node.name + "/loss"))
          ->outputs[0];
  double scale = a.get_float("grad_scale", 1.0);
  if (normalization == "batch") scale /= static_cast<double>(shape[0]);
  if (scale != 1.0) {
    Value* s = g.add_initializer(g.fresh_name(node.name + "/grad_scale"),
                                 Tensor::full(Shape{}, scale, data->info->dtype));
    loss = g.add_node("Mul", {loss, s}, {}, g.fresh_name(node.name + "/scaled_loss"))->outputs[0];
  }
  return loss->name;
}

const NDArray* find_array(const std::map<std::string, NDArray>& args,
                          const std::map<std::string, NDArray>& aux, const std::string& name) {
  for (const auto* dict : {&args, &aux})
    if (const auto it = dict->find(name); it != dict->end()) return &it->second;
  return nullptr;
}

}  // namespace

graph::Graph import_with_arrays(const MxnetSymbol& symbol, const std::map<std::string, NDArray>& args,
                                const std::map<std::string, NDArray>& aux,
                                std::vector<std::string>& input_arrays, bool every_array) {
  std::map<std::string, Shape> shapes;
  for (const auto* dict : {&args, &aux})
    for (const auto& [name, array] : *dict) shapes[name] = array.shape();
  graph::Graph g = import_symbol(symbol, {}, "symbol", shapes);
  input_arrays.clear();
  for (graph::Value* v : g.inputs()) {
    const NDArray* array = find_array(args, aux, v->name);
    KILN_CHECK(array != nullptr, ErrorCode::kNotFound, "Executor: no array bound for '", v->name, "'");
    v->info->dtype = array->dtype();
    input_arrays.push_back(v->name);
  }
  if (every_array)
    for (const auto* dict : {&args, &aux})
      for (const auto& [name, array] : *dict)
        if (g.find_value(name) == nullptr) {
          g.add_input(name, ops::TensorInfo{array.dtype(), array.shape()});
          input_arrays.push_back(name);
        }
  g.infer_shapes();
  return g;
}

TrainingGraph make_training_graph(graph::Graph inference, const MxnetSymbol& symbol) {
  TrainingGraph out;
  out.graph = std::move(inference);
  Graph& g = out.graph;
  out.num_outputs = static_cast<int>(g.outputs().size());
  out.losses.assign(g.outputs().size(), "");
  for (const MxnetSymbol::Node& node : symbol.nodes) {
    if (node.op == "BatchNorm") batch_norm(g, node, out);
  }
  restore_dropouts(g, symbol, true);
  for (size_t k = 0; k < symbol.heads.size() && k < out.losses.size(); ++k) {
    const MxnetSymbol::Node& node = symbol.nodes.at(static_cast<size_t>(symbol.heads[k].node));
    if (node.op == "SoftmaxOutput" || node.op == "Softmax")
      out.losses[k] = softmax_output_loss(g, symbol, node);
  }
  g.infer_shapes();
  return out;
}

void restore_dropouts(graph::Graph& g, const MxnetSymbol& symbol, bool training) {
  for (const MxnetSymbol::Node& node : symbol.nodes)
    if (node.op == "Dropout") dropout(g, node, training);
}

}  // namespace kiln::mxnet
