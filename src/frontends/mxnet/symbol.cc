// Symbol: a graph of shared MXNet-style nodes (see include/kiln/symbol.hpp). Composition,
// listing in MXNet's order, conversion to and from MxnetSymbol (and so -symbol.json).
#include "kiln/symbol.hpp"

#include <algorithm>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <unordered_map>

#include "frontends/mxnet/import.h"
#include "frontends/mxnet/symbol_node.h"
#include "kiln/error.hpp"

namespace kiln {

using mxnet::MxnetSymbol;

namespace {

// Nodes reachable from `outputs` in MXNet's depth-first post-order (inputs in order).
std::vector<const Symbol::Node*> dfs_order(const std::vector<Symbol::Output>& outputs) {
  std::vector<const Symbol::Node*> order;
  std::set<const Symbol::Node*> seen;
  std::function<void(const Symbol::Node*)> visit = [&](const Symbol::Node* n) {
    if (!seen.insert(n).second) return;
    for (const Symbol::Output& in : n->inputs) visit(in.node.get());
    order.push_back(n);
  };
  for (const Symbol::Output& out : outputs) visit(out.node.get());
  return order;
}

// Variables that some op uses as an auxiliary state (written by the op, not learned).
std::set<const Symbol::Node*> auxiliary_nodes(const std::vector<const Symbol::Node*>& order) {
  std::set<const Symbol::Node*> aux;
  for (const Symbol::Node* n : order)
    for (int i : mxnet::auxiliary_inputs(n->op))
      if (static_cast<size_t>(i) < n->inputs.size() && n->inputs[static_cast<size_t>(i)].node->op == "null")
        aux.insert(n->inputs[static_cast<size_t>(i)].node.get());
  return aux;
}

}  // namespace

// MXNet's NameManager: the op name in lower case (or a hint) followed by a per-hint counter.
std::string auto_symbol_name(const std::string& hint) {
  static std::mutex mutex;
  static std::map<std::string, int> counters;
  std::string lower = hint;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  const std::lock_guard<std::mutex> lock(mutex);
  return lower + std::to_string(counters[lower]++);
}

Symbol Symbol::Variable(const std::string& name, const std::map<std::string, std::string>& attrs) {
  KILN_CHECK(!name.empty(), ErrorCode::kInvalidArgument, "Symbol::Variable: a variable needs a name");
  auto node = std::make_shared<Node>();
  node->op = "null";
  node->name = name;
  node->attrs = attrs;
  Symbol s;
  s.outputs_.push_back({std::move(node), 0});
  return s;
}

Symbol Symbol::Group(const std::vector<Symbol>& symbols) {
  Symbol s;
  for (const Symbol& part : symbols)
    s.outputs_.insert(s.outputs_.end(), part.outputs_.begin(), part.outputs_.end());
  return s;
}

Symbol Symbol::Create(const std::string& op, const std::vector<Symbol>& inputs,
                      const std::map<std::string, std::string>& attrs, const std::string& name) {
  auto node = std::make_shared<Node>();
  node->op = op;
  node->name = name.empty() ? auto_symbol_name(op) : name;
  node->attrs = attrs;
  for (const Symbol& in : inputs) {
    KILN_CHECK(in.outputs_.size() == 1, ErrorCode::kInvalidArgument, op, " '", node->name,
               "': each input must be a symbol with one output, got one with ", in.outputs_.size());
    node->inputs.push_back(in.outputs_[0]);
  }
  MxnetSymbol::Node probe{op, node->name, attrs, {}};
  Symbol s;
  for (int i = 0; i < mxnet::num_visible_outputs(probe); ++i) s.outputs_.push_back({node, i});
  return s;
}

std::string Symbol::name() const {
  KILN_CHECK(outputs_.size() == 1, ErrorCode::kInvalidArgument, "Symbol::name: a group of ", outputs_.size(),
             " outputs has no single name");
  return outputs_[0].node->name;
}

Symbol Symbol::operator[](int index) const {
  KILN_CHECK(index >= 0 && static_cast<size_t>(index) < outputs_.size(), ErrorCode::kOutOfRange,
             "Symbol: output ", index, " of ", outputs_.size());
  Symbol s;
  s.outputs_.push_back(outputs_[static_cast<size_t>(index)]);
  return s;
}

std::vector<std::string> Symbol::list_inputs() const {
  std::vector<std::string> names;
  for (const Node* n : dfs_order(outputs_))
    if (n->op == "null") names.push_back(n->name);
  return names;
}

std::vector<std::string> Symbol::list_arguments() const {
  const auto order = dfs_order(outputs_);
  const auto aux = auxiliary_nodes(order);
  std::vector<std::string> names;
  for (const Node* n : order)
    if (n->op == "null" && !aux.count(n)) names.push_back(n->name);
  return names;
}

std::vector<std::string> Symbol::list_auxiliary_states() const {
  const auto order = dfs_order(outputs_);
  const auto aux = auxiliary_nodes(order);
  std::vector<std::string> names;
  for (const Node* n : order)
    if (aux.count(n)) names.push_back(n->name);
  return names;
}

std::vector<std::string> Symbol::list_outputs() const {
  std::vector<std::string> names;
  for (const Output& out : outputs_) {
    const MxnetSymbol::Node probe{out.node->op, out.node->name, out.node->attrs, {}};
    names.push_back(mxnet::output_name(probe, out.index));
  }
  return names;
}

MxnetSymbol Symbol::to_mxnet() const {
  MxnetSymbol s;
  std::unordered_map<const Node*, int> index;
  for (const Node* n : dfs_order(outputs_)) {
    MxnetSymbol::Node node{n->op, n->name, n->attrs, {}};
    for (const Output& in : n->inputs) node.inputs.push_back({index.at(in.node.get()), in.index, 0});
    index[n] = static_cast<int>(s.nodes.size());
    if (n->op == "null") s.arg_nodes.push_back(static_cast<int>(s.nodes.size()));
    s.nodes.push_back(std::move(node));
  }
  for (const Output& out : outputs_) s.heads.push_back({index.at(out.node.get()), out.index, 0});
  return s;
}

Symbol Symbol::from_mxnet(const MxnetSymbol& symbol) {
  std::vector<std::shared_ptr<Node>> nodes;
  for (const MxnetSymbol::Node& n : symbol.nodes) {
    auto node = std::make_shared<Node>();
    node->op = n.op;
    node->name = n.name;
    node->attrs = n.attrs;
    for (const MxnetSymbol::Entry& e : n.inputs)
      node->inputs.push_back({nodes.at(static_cast<size_t>(e.node)), e.index});
    nodes.push_back(std::move(node));
  }
  Symbol s;
  for (const MxnetSymbol::Entry& head : symbol.heads)
    s.outputs_.push_back({nodes.at(static_cast<size_t>(head.node)), head.index});
  return s;
}

std::string Symbol::tojson() const {
  return mxnet::to_symbol_json(to_mxnet());
}

void Symbol::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary);
  out << tojson();
  KILN_CHECK(out.good(), ErrorCode::kIo, "Symbol::save: cannot write '", path, "'");
}

Symbol Symbol::load(const std::string& path) {
  return from_mxnet(mxnet::load_symbol_json(path));
}
Symbol Symbol::load_json(const std::string& json) {
  return from_mxnet(mxnet::parse_symbol_json(json, "json"));
}

}  // namespace kiln
