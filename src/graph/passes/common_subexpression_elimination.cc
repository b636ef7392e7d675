// Common-subexpression elimination: two nodes with the same op, the same input values and the
// same attributes compute the same outputs, so the second one's readers are pointed at the first
// and it is removed. Initializers with the same dtype, shape and bytes are merged first, which
// lets nodes reading equal copies of a constant merge too.
//
// Attributes are compared after binding (an explicit default equals an absent attribute) and
// exactly: floats by their bits, tensors by dtype, shape and bytes. Nodes are visited in
// topological order, so by the time a node is looked at its inputs are already merged.
// Nondeterministic nodes (random ops, Dropout in training mode) are never merged.
#include <algorithm>
#include <bit>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

size_t combine(size_t seed, size_t h) {
  return seed ^ (h + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

std::string_view bytes_of(const Tensor& contiguous) {
  return {static_cast<const char*>(contiguous.raw_data()), contiguous.nbytes()};
}

bool same_tensor(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return bytes_of(a.contiguous()) == bytes_of(b.contiguous());
}

bool same_bits(double a, double b) {
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.type() != b.type()) return false;
  return std::visit(
      [&](const auto& x) {
        using X = std::decay_t<decltype(x)>;
        const X& y = std::get<X>(b.variant());
        if constexpr (std::is_same_v<X, Tensor>) {
          return same_tensor(x, y);
        } else if constexpr (std::is_same_v<X, double>) {
          return same_bits(x, y);
        } else if constexpr (std::is_same_v<X, std::vector<double>>) {
          return x.size() == y.size() && std::equal(x.begin(), x.end(), y.begin(), same_bits);
        } else {
          return x == y;
        }
      },
      a.variant());
}

bool same_attrs(const Attrs& a, const Attrs& b) {
  return a.values().size() == b.values().size() &&
         std::equal(a.values().begin(), a.values().end(), b.values().begin(),
                    [](const auto& x, const auto& y) {
                      return x.first == y.first && same_attr(x.second, y.second);
                    });
}

size_t constant_hash(const Tensor& t) {
  size_t h = std::hash<int>{}(static_cast<int>(t.dtype()));
  for (int64_t d : t.shape()) h = combine(h, std::hash<int64_t>{}(d));
  return combine(h, std::hash<std::string_view>{}(bytes_of(t)));
}

bool merge_constants(Graph& graph) {
  std::unordered_map<size_t, std::vector<Value*>> seen;
  bool changed = false;
  for (Value* v : graph.initializers()) {
    if (!is_fixed_constant(graph, v)) continue;
    auto& bucket = seen[constant_hash(v->constant)];
    auto same = std::find_if(bucket.begin(), bucket.end(),
                             [&](const Value* s) { return same_tensor(s->constant, v->constant); });
    // A graph output keeps its own name, so it is never the copy that goes away.
    if (same == bucket.end() || is_graph_output(graph, v)) {
      bucket.push_back(v);
      continue;
    }
    graph.replace_all_uses(v, *same);
    changed = true;
  }
  if (changed) graph.remove_unused_values();
  return changed;
}

// What a node computes, in a form that can be hashed and compared.
struct NodeKey {
  Node* node;
  Attrs attrs;  // bound, so defaults are explicit
  size_t hash;
};

NodeKey key_of(Node& n) {
  NodeKey key{&n, n.schema().bind(n.attrs), std::hash<std::string>{}(n.op)};
  for (const Value* in : n.inputs) key.hash = combine(key.hash, std::hash<const Value*>{}(in));
  key.hash = combine(key.hash, n.outputs.size());
  for (const auto& [name, value] : key.attrs.values())
    key.hash = combine(combine(key.hash, std::hash<std::string>{}(name)), static_cast<size_t>(value.type()));
  return key;
}

bool same_computation(const NodeKey& a, const NodeKey& b) {
  // Control-flow nodes are the same only when they run the very same subgraphs.
  return a.node->op == b.node->op && a.node->inputs == b.node->inputs &&
         a.node->outputs.size() == b.node->outputs.size() && same_attrs(a.attrs, b.attrs) &&
         a.node->subgraphs == b.node->subgraphs && a.node->num_captured == b.node->num_captured;
}

bool merge_nodes(Graph& graph) {
  std::unordered_map<size_t, std::vector<NodeKey>> seen;
  bool changed = false;
  for (Node* n : graph.topological_order()) {
    if (is_nondeterministic(graph, *n)) continue;
    NodeKey key = key_of(*n);
    auto& bucket = seen[key.hash];
    auto same = std::find_if(bucket.begin(), bucket.end(),
                             [&](const NodeKey& k) { return same_computation(k, key); });
    if (same == bucket.end()) {
      bucket.push_back(std::move(key));
      continue;
    }
    Node* kept = same->node;
    // Usually n goes; when n's output is a graph output and the kept node's is too, neither name
    // can be given up, so both stay.
    if (remove_node_replacing(graph, n, kept->outputs)) changed = true;
  }
  return changed;
}

bool eliminate_common_subexpressions(Graph& graph) {
  const bool constants = merge_constants(graph);
  return merge_nodes(graph) || constants;
}

}  // namespace

Pass common_subexpression_elimination_pass() {
  return Pass{"common_subexpression_elimination", {}, {}, eliminate_common_subexpressions};
}

}  // namespace kiln::graph
