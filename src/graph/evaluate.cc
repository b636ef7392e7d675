// The reference interpreter. Each intermediate tensor is dropped after its last reader has run,
// so memory stays near the graph's live set rather than its total.
#include "graph/evaluate.h"

#include <algorithm>
#include <unordered_map>

namespace kiln::graph {
namespace {

// Checks a fed tensor against the input's declared dtype and (possibly partial) shape.
void check_fed_input(const Graph& graph, const Value& v, const Tensor& t) {
  KILN_CHECK(t.defined(), ErrorCode::kInvalidArgument, "graph '", graph.name, "' input '", v.name,
             "': the tensor has no data");
  if (!v.info) return;
  const Shape& want = v.info->shape;
  bool fits = t.dtype() == v.info->dtype && t.shape().ndim() == want.ndim();
  for (int a = 0; fits && a < want.ndim(); ++a) fits = want[a] == Shape::kUnknown || want[a] == t.shape()[a];
  KILN_CHECK(fits, ErrorCode::kShapeMismatch, "graph '", graph.name, "' input '", v.name, "': expected ",
             v.info->dtype, " ", want, ", got ", t.dtype(), " ", t.shape());
}

}  // namespace

std::vector<Tensor> evaluate(const Graph& graph, const std::map<std::string, Tensor>& inputs) {
  std::unordered_map<const Value*, Tensor> live;
  for (const auto& [name, tensor] : inputs) {
    const Value* v = graph.find_value(name);
    const auto& declared = graph.inputs();
    KILN_CHECK(v && std::find(declared.begin(), declared.end(), v) != declared.end(), ErrorCode::kNotFound,
               "graph '", graph.name, "' has no input named '", name, "'");
    check_fed_input(graph, *v, tensor);
    live[v] = tensor;
  }
  for (const Value* v : graph.inputs())
    KILN_CHECK(live.count(v) || v->is_constant(), ErrorCode::kInvalidArgument, "graph '", graph.name,
               "': input '", v->name, "' was not given");
  auto tensor_of = [&](const Value* v) -> const Tensor& {
    auto it = live.find(v);
    return it != live.end() ? it->second : v->constant;
  };

  std::unordered_map<const Value*, size_t> pending_reads;
  for (const Node* n : graph.nodes())
    for (const Value* in : n->inputs)
      if (in && in->producer) ++pending_reads[in];
  const auto& outputs = graph.outputs();
  for (const Node* n : graph.topological_order()) {
    std::vector<Tensor> args;
    for (const Value* in : n->inputs) args.push_back(in ? tensor_of(in) : Tensor());
    std::vector<Tensor> results;
    try {
      results =
          n->schema().run_reference(n->schema().bind(n->attrs), args, static_cast<int>(n->outputs.size()));
    } catch (const Error& e) {
      throw Error(e.code(), "graph '" + graph.name + "': " + n->label() + ": " + e.what());
    }
    for (size_t i = 0; i < n->outputs.size(); ++i) live[n->outputs[i]] = std::move(results[i]);
    for (const Value* in : n->inputs) {
      if (!in || !in->producer || --pending_reads[in] > 0) continue;
      if (std::find(outputs.begin(), outputs.end(), in) == outputs.end()) live.erase(in);
    }
  }
  std::vector<Tensor> result;
  for (const Value* out : outputs) result.push_back(tensor_of(out));
  return result;
}

}  // namespace kiln::graph
