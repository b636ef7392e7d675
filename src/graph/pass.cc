// Helpers the passes share: what a value is to the graph's interface, which ops must not be
// evaluated ahead of time, and removing a node while keeping the graph's output names.
#include "graph/pass.h"

#include <algorithm>
#include <array>
#include <set>
#include <string_view>

namespace kiln::graph {

bool is_graph_input(const Graph& graph, const Value* value) {
  const auto& inputs = graph.inputs();
  return std::find(inputs.begin(), inputs.end(), value) != inputs.end();
}

bool is_graph_output(const Graph& graph, const Value* value) {
  const auto& outputs = graph.outputs();
  return std::find(outputs.begin(), outputs.end(), value) != outputs.end();
}

bool is_fixed_constant(const Graph& graph, const Value* value) {
  return value && value->is_constant() && !is_graph_input(graph, value);
}

std::optional<double> constant_scalar(const Graph& graph, const Value* value) {
  if (!value || !is_fixed_constant(graph, value) || value->constant.numel() != 1) return std::nullopt;
  return value->constant.cast(DType::kFloat64).to_vector<double>()[0];
}

Node* sole_reader(const Graph& graph, const Value* value) {
  if (value->users.size() != 1 || is_graph_output(graph, value)) return nullptr;
  return value->users[0];
}

Value* other_input(const Node& binary, const Value* value) {
  if (binary.inputs.size() != 2) return nullptr;
  if (binary.inputs[0] == value) return binary.inputs[1];
  return binary.inputs[1] == value ? binary.inputs[0] : nullptr;
}

bool is_nondeterministic(const Graph& graph, const Node& node) {
  // ONNX's random generators and Kiln's Sample* ops (src/ops/random.cc), by name: the graph layer
  // sits below the op registry.
  static constexpr std::array<std::string_view, 14> kRandomOps = {"RandomNormal",
                                                                  "RandomUniform",
                                                                  "RandomNormalLike",
                                                                  "RandomUniformLike",
                                                                  "Multinomial",
                                                                  "Bernoulli",
                                                                  "SampleUniform",
                                                                  "SampleNormal",
                                                                  "SampleGamma",
                                                                  "SampleExponential",
                                                                  "SamplePoisson",
                                                                  "SampleNegativeBinomial",
                                                                  "SampleGeneralizedNegativeBinomial",
                                                                  "SampleRandint"};
  if (std::find(kRandomOps.begin(), kRandomOps.end(), node.op) != kRandomOps.end()) return true;
  if (node.op != "Dropout") return false;
  // Dropout draws only in training mode, and training_mode is only known when it is a constant.
  const Value* training = node.inputs.size() > 2 ? node.inputs[2] : nullptr;
  return training && !is_constant_filled_with(graph, training, 0.0);
}

bool is_constant_filled_with(const Graph& graph, const Value* value, double scalar) {
  if (!is_fixed_constant(graph, value)) return false;
  const Tensor& t = value->constant;
  return dispatch_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = t.data<T>();
    return std::all_of(p, p + t.numel(), [&](const T& v) { return convert_value<double>(v) == scalar; });
  });
}

bool remove_node_replacing(Graph& graph, Node* node, const std::vector<Value*>& replacements) {
  KILN_CHECK(replacements.size() == node->outputs.size(), ErrorCode::kInternal, node->label(), ": ",
             replacements.size(), " replacements for ", node->outputs.size(), " outputs");
  std::vector<std::string> kept_names(replacements.size());
  std::set<const Value*> renamed;
  for (size_t i = 0; i < replacements.size(); ++i) {
    Value* out = node->outputs[i];
    Value* repl = replacements[i];
    if (!repl) {
      if (!out->users.empty() || is_graph_output(graph, out)) return false;
      continue;
    }
    if (!is_graph_output(graph, out)) continue;
    // A value can take only one name, so it can stand in for only one graph output.
    const bool renamable = repl->producer && repl->producer != node && !is_graph_output(graph, repl) &&
                           renamed.insert(repl).second;
    if (!renamable) return false;
    kept_names[i] = out->name;
  }
  for (size_t i = 0; i < replacements.size(); ++i)
    if (replacements[i]) graph.replace_all_uses(node->outputs[i], replacements[i]);
  graph.remove_node(node);
  for (size_t i = 0; i < replacements.size(); ++i)
    if (!kept_names[i].empty()) graph.rename_value(replacements[i], kept_names[i]);
  return true;
}

}  // namespace kiln::graph
