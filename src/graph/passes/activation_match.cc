// match_activation (activation_match.h): the activation ops a fused op can take in.
#include "graph/passes/activation_match.h"

#include <cmath>
#include <set>

#include "graph/passes/passes.h"

namespace kiln::graph {
std::optional<MatchedActivation> match_activation(const Graph& graph, Value* v) {
  if (v->users.empty() || is_graph_output(graph, v)) return std::nullopt;
  if (v->users.size() == 2) {  // SiLU: Mul(v, Sigmoid(v))
    Node* a = v->users[0];
    Node* b = v->users[1];
    Node* sigmoid = a->op == "Sigmoid" ? a : b->op == "Sigmoid" ? b : nullptr;
    Node* mul = sigmoid == a ? b : a;
    if (!sigmoid || mul->op != "Mul" || other_input(*mul, v) != sigmoid->outputs[0]) return std::nullopt;
    if (sole_reader(graph, sigmoid->outputs[0]) != mul) return std::nullopt;
    return MatchedActivation{"SiLU", {}, {sigmoid, mul}, mul->outputs[0]};
  }
  if (v->users.size() != 1) return std::nullopt;
  Node* n = v->users[0];
  if (n->inputs.empty() || n->inputs[0] != v) return std::nullopt;
  const Attrs attrs = n->schema().bind(n->attrs);
  static const std::set<std::string> kPlain{"Relu", "Sigmoid", "Tanh", "HardSwish"};
  if (kPlain.count(n->op)) return MatchedActivation{n->op, {}, {n}, n->outputs[0]};
  if (n->op == "LeakyRelu" || n->op == "Elu")
    return MatchedActivation{n->op, {attrs.get_float("alpha")}, {n}, n->outputs[0]};
  if (n->op == "HardSigmoid")
    return MatchedActivation{n->op, {attrs.get_float("alpha"), attrs.get_float("beta")}, {n}, n->outputs[0]};
  if (n->op == "Gelu")
    return MatchedActivation{
        attrs.get_string("approximate") == "tanh" ? "GeluTanh" : "Gelu", {}, {n}, n->outputs[0]};
  if (n->op == "Clip") {
    const Value* lo = n->inputs.size() > 1 ? n->inputs[1] : nullptr;
    const Value* hi = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
    const auto min = lo ? constant_scalar(graph, lo) : std::optional<double>(-INFINITY);
    const auto max = hi ? constant_scalar(graph, hi) : std::optional<double>(INFINITY);
    if (!min || !max) return std::nullopt;
    return MatchedActivation{"Clip", {*min, *max}, {n}, n->outputs[0]};
  }
  return std::nullopt;
}

}  // namespace kiln::graph
