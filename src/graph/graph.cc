#include "graph.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace kiln::graph {

namespace {

ops::SubgraphSignature signature_of(const Graph& g) {
  ops::SubgraphSignature s;
  for (const Value* v : g.inputs()) s.inputs.push_back(v->info);
  for (const Value* v : g.outputs()) s.outputs.push_back(v->info);
  return s;
}

}  // namespace

std::map<std::string, ops::SubgraphSignature> Node::subgraph_signatures() const {
  std::map<std::string, ops::SubgraphSignature> signatures;
  std::vector<std::optional<TensorInfo>> node_inputs;
  for (const Value* in : inputs) node_inputs.push_back(in ? in->info : std::nullopt);
  const Attrs bound = schema().bind(attrs);
  for (const auto& [attr, subgraph] : subgraphs) {
    ops::SubgraphSignature& s = signatures.emplace(attr, signature_of(*subgraph)).first->second;
    Graph g = subgraph->clone();
    for (size_t k = 0; k < g.inputs().size(); ++k) {
      Value* v = g.inputs()[k];
      const std::optional<TensorInfo> given =
          ops::subgraph_input_info(op, bound, node_inputs, static_cast<size_t>(num_captured), k);
      if (given && (!v->info || v->info->dtype == given->dtype)) v->info = given;
    }
    try {
      g.infer_shapes(/*allow_unknown=*/true);
    } catch (const Error&) {
      continue;  // a branch not taken for these inputs need not infer for them: it says so if it runs
    }
    for (size_t i = 0; i < g.outputs().size(); ++i)
      if (g.outputs()[i]->info) s.outputs[i] = g.outputs()[i]->info;
  }
  return signatures;
}

const ops::OpSchema& Node::schema() const {
  return ops::OpRegistry::global().get(op);
}

std::string Node::label() const {
  return op + " '" + name + "'";
}

Value* Graph::new_value(const std::string& requested) {
  const std::string value_name = requested.empty() ? fresh_name("v") : requested;
  KILN_CHECK(!values_by_name_.count(value_name), ErrorCode::kInvalidArgument, "graph '", name,
             "': a value named '", value_name, "' already exists");
  values_.push_back(std::make_unique<Value>());
  Value* v = values_.back().get();
  v->name = value_name;
  values_by_name_[value_name] = v;
  return v;
}

std::string Graph::fresh_name(const std::string& prefix) {
  for (;;) {
    std::string candidate = prefix + "_" + std::to_string(next_fresh_++);
    if (!values_by_name_.count(candidate) && !nodes_by_name_.count(candidate)) return candidate;
  }
}

Value* Graph::add_input(const std::string& input_name, std::optional<TensorInfo> info) {
  Value* v = new_value(input_name);
  v->info = std::move(info);
  inputs_.push_back(v);
  return v;
}

Value* Graph::add_initializer(const std::string& init_name, Tensor data) {
  KILN_CHECK(data.defined(), ErrorCode::kInvalidArgument, "initializer '", init_name, "' has no data");
  Value* v = new_value(init_name);
  v->info = ops::info_of(data);
  v->constant = data.contiguous();
  return v;
}

Node* Graph::add_node(const std::string& op, std::vector<Value*> node_inputs, AttrMap attrs,
                      const std::string& node_name, int num_outputs) {
  const ops::OpSchema& schema = ops::OpRegistry::global().get(op);
  const std::string nm = node_name.empty() ? fresh_name(op) : node_name;
  if (num_outputs < 0) {
    num_outputs = 0;
    for (const auto& out : schema.outputs())
      if (out.arity != ops::Arity::kOptional) ++num_outputs;
  }
  std::vector<std::string> output_names;
  for (int i = 0; i < num_outputs; ++i)
    output_names.push_back(num_outputs == 1 ? nm + "_output" : nm + "_output" + std::to_string(i));
  return add_node_with_outputs(op, std::move(node_inputs), std::move(attrs), nm, output_names);
}

Node* Graph::add_node_with_outputs(const std::string& op, std::vector<Value*> node_inputs, AttrMap attrs,
                                   const std::string& node_name,
                                   const std::vector<std::string>& output_names) {
  ops::OpRegistry::global().get(op);
  const std::string nm = node_name.empty() ? fresh_name(op) : node_name;
  KILN_CHECK(!nodes_by_name_.count(nm), ErrorCode::kInvalidArgument, "graph '", name, "': a node named '", nm,
             "' already exists");
  for (const std::string& out_name : output_names) {
    KILN_CHECK(out_name.empty() || !values_by_name_.count(out_name), ErrorCode::kInvalidArgument, "graph '",
               name, "': node '", nm, "' outputs '", out_name, "', a name another value already has");
  }
  nodes_.push_back(std::make_unique<Node>());
  Node* n = nodes_.back().get();
  n->name = nm;
  n->op = op;
  n->attrs = std::move(attrs);
  n->inputs = std::move(node_inputs);
  for (Value* in : n->inputs)
    if (in) in->users.push_back(n);
  for (size_t i = 0; i < output_names.size(); ++i) {
    Value* out = new_value(output_names[i].empty() ? fresh_name(nm + "_output") : output_names[i]);
    out->producer = n;
    out->producer_output = static_cast<int>(i);
    n->outputs.push_back(out);
  }
  nodes_by_name_[nm] = n;
  return n;
}

std::vector<Value*> Graph::initializers() const {
  std::vector<Value*> out;
  for (const auto& v : values_)
    if (v->is_constant()) out.push_back(v.get());
  return out;
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Node* Graph::find_node(const std::string& node_name) const {
  auto it = nodes_by_name_.find(node_name);
  return it == nodes_by_name_.end() ? nullptr : it->second;
}

Value* Graph::find_value(const std::string& value_name) const {
  auto it = values_by_name_.find(value_name);
  return it == values_by_name_.end() ? nullptr : it->second;
}

namespace {
void erase_one(std::vector<Node*>& users, Node* n) {
  auto it = std::find(users.begin(), users.end(), n);
  if (it != users.end()) users.erase(it);
}
}  // namespace

void Graph::set_input(Node* node, int slot, Value* value) {
  Value*& in = node->inputs.at(static_cast<size_t>(slot));
  if (in) erase_one(in->users, node);
  in = value;
  if (value) value->users.push_back(node);
}

void Graph::replace_all_uses(Value* old_value, Value* new_value) {
  if (old_value == new_value) return;
  const std::vector<Node*> users = old_value->users;
  for (Node* n : users)
    for (size_t i = 0; i < n->inputs.size(); ++i)
      if (n->inputs[i] == old_value) set_input(n, static_cast<int>(i), new_value);
  for (Value*& out : outputs_)
    if (out == old_value) out = new_value;
}

void Graph::remove_node(Node* node) {
  for (Value* out : node->outputs) {
    KILN_CHECK(out->users.empty(), ErrorCode::kInternal, "remove_node: ", node->label(), " output '",
               out->name, "' is still read by ", out->users.front()->label());
    KILN_CHECK(std::find(outputs_.begin(), outputs_.end(), out) == outputs_.end(), ErrorCode::kInternal,
               "remove_node: ", node->label(), " output '", out->name, "' is a graph output");
  }
  for (Value* in : node->inputs)
    if (in) erase_one(in->users, node);
  std::set<const Value*> dead(node->outputs.begin(), node->outputs.end());
  for (Value* out : node->outputs) values_by_name_.erase(out->name);
  values_.erase(
      std::remove_if(values_.begin(), values_.end(), [&](const auto& v) { return dead.count(v.get()); }),
      values_.end());
  nodes_by_name_.erase(node->name);
  nodes_.erase(std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == node; }));
}

void Graph::remove_unused_values(bool inputs_too) {
  auto unused = [&](const Value* v) {
    if (!v->users.empty() || v->producer) return false;
    if (std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end()) return false;
    const bool is_input = std::find(inputs_.begin(), inputs_.end(), v) != inputs_.end();
    return v->is_constant() ? !is_input || inputs_too : is_input && inputs_too;
  };
  std::set<const Value*> dead;
  for (const auto& v : values_)
    if (unused(v.get())) dead.insert(v.get());
  inputs_.erase(std::remove_if(inputs_.begin(), inputs_.end(), [&](Value* v) { return dead.count(v); }),
                inputs_.end());
  for (const Value* v : dead) values_by_name_.erase(v->name);
  values_.erase(
      std::remove_if(values_.begin(), values_.end(), [&](const auto& v) { return dead.count(v.get()); }),
      values_.end());
}

void Graph::make_constant(Value* value, Tensor data) {
  KILN_CHECK(value->producer != nullptr, ErrorCode::kInternal, "make_constant: '", value->name,
             "' has no producer");
  value->producer = nullptr;
  value->producer_output = 0;
  value->info = ops::info_of(data);
  value->constant = data.contiguous();
}

void Graph::rename_value(Value* value, const std::string& new_name) {
  if (value->name == new_name) return;
  KILN_CHECK(!values_by_name_.count(new_name), ErrorCode::kInvalidArgument, "graph '", name,
             "': cannot rename '", value->name, "' to '", new_name, "': a value with that name exists");
  values_by_name_.erase(value->name);
  value->name = new_name;
  values_by_name_[new_name] = value;
}

std::vector<Node*> Graph::topological_order() const {
  // Kahn's algorithm over node dependencies, keeping insertion order among ready nodes.
  std::unordered_map<const Node*, int> pending;
  for (const auto& n : nodes_) {
    int count = 0;
    for (const Value* in : n->inputs)
      if (in && in->producer) ++count;
    pending[n.get()] = count;
  }
  std::vector<Node*> order;
  std::vector<Node*> ready;
  for (const auto& n : nodes_)
    if (pending[n.get()] == 0) ready.push_back(n.get());
  std::reverse(ready.begin(), ready.end());
  while (!ready.empty()) {
    Node* n = ready.back();
    ready.pop_back();
    order.push_back(n);
    std::vector<Node*> unlocked;
    for (Value* out : n->outputs)
      for (Node* user : out->users)
        if (--pending[user] == 0) unlocked.push_back(user);
    ready.insert(ready.end(), unlocked.rbegin(), unlocked.rend());
  }
  if (order.size() != nodes_.size()) {
    for (const auto& n : nodes_)
      if (pending[n.get()] > 0)
        raise(ErrorCode::kInvalidArgument, "graph '", name, "': ", n->label(),
              " is on a cycle (or depends on one)");
  }
  return order;
}

void Graph::verify() const {
  std::set<const Value*> known;
  for (const auto& v : values_) known.insert(v.get());
  for (const Value* v : inputs_)
    KILN_CHECK(known.count(v), ErrorCode::kInvalidArgument, "graph '", name,
               "': an input is not in the graph");
  for (const auto& n : nodes_) {
    const ops::OpSchema* schema = ops::OpRegistry::global().find(n->op);
    KILN_CHECK(schema != nullptr, ErrorCode::kUnsupported, "graph '", name, "': ", n->label(), ": op '",
               n->op, "' is not supported by Kiln");
    const int count = static_cast<int>(n->inputs.size());
    KILN_CHECK(count >= schema->min_inputs() && (schema->max_inputs() < 0 || count <= schema->max_inputs()),
               ErrorCode::kInvalidArgument, n->label(), ": ", count, " inputs, the op takes ",
               schema->min_inputs(),
               schema->max_inputs() < 0 ? " or more" : " to " + std::to_string(schema->max_inputs()));
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      const Value* in = n->inputs[i];
      if (!in) continue;
      KILN_CHECK(known.count(in), ErrorCode::kInvalidArgument, n->label(), ": input ", i,
                 " refers to a value that is not in the graph (a dangling edge)");
      const bool is_graph_input = std::find(inputs_.begin(), inputs_.end(), in) != inputs_.end();
      KILN_CHECK(in->producer || in->is_constant() || is_graph_input, ErrorCode::kInvalidArgument, n->label(),
                 ": input ", i, " '", in->name,
                 "' has no producer and is neither a graph input nor an initializer");
      KILN_CHECK(std::count(in->users.begin(), in->users.end(), n.get()) ==
                     std::count(n->inputs.begin(), n->inputs.end(), in),
                 ErrorCode::kInternal, n->label(), ": the users list of '", in->name, "' is out of date");
    }
    for (size_t i = 0; i < n->outputs.size(); ++i)
      KILN_CHECK(n->outputs[i]->producer == n.get() && n->outputs[i]->producer_output == static_cast<int>(i),
                 ErrorCode::kInternal, n->label(), ": output ", i, " does not point back at its node");
    if (!n->subgraphs.empty() || ops::is_control_flow(n->op)) verify_subgraphs(*n);
  }
  for (const Value* out : outputs_)
    KILN_CHECK(out && known.count(out), ErrorCode::kInvalidArgument, "graph '", name,
               "': a graph output is not in the graph");
  topological_order();  // throws on a cycle
}

void Graph::verify_subgraphs(const Node& n) const {
  for (const auto& [attr, g] : n.subgraphs) {
    try {
      g->verify();
    } catch (const Error& e) {
      throw Error(e.code(), n.label() + " subgraph '" + attr + "': " + e.what());
    }
  }
  std::vector<std::optional<TensorInfo>> inputs;
  for (const Value* in : n.inputs) inputs.push_back(in ? in->info : std::nullopt);
  try {
    ops::check_subgraphs(n.op, n.schema().bind(n.attrs), inputs, n.outputs.size(),
                         static_cast<size_t>(n.num_captured), n.subgraph_signatures());
  } catch (const Error& e) {
    throw Error(e.code(), "graph '" + name + "': " + n.label() + ": " + e.what());
  }
}

void Graph::infer_shapes(bool allow_unknown) {
  for (Node* n : topological_order()) infer_node(n, allow_unknown);
}

bool Graph::infer_node(Node* n, bool allow_unknown) {
  const ops::OpSchema& schema = n->schema();
  std::vector<std::optional<TensorInfo>> infos;
  std::vector<const Tensor*> values;
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    const Value* in = n->inputs[i];
    if (!in) {
      infos.emplace_back(std::nullopt);
      values.push_back(nullptr);
      continue;
    }
    if (!in->info && allow_unknown) return false;
    KILN_CHECK(in->info.has_value(), ErrorCode::kInvalidArgument, n->label(), ": input ", i, " '", in->name,
               "' has no known dtype and shape");
    infos.push_back(in->info);
    values.push_back(in->is_constant() ? &in->constant : nullptr);
  }
  std::vector<TensorInfo> out;
  try {
    const Attrs attrs = schema.bind(n->attrs);
    out = n->subgraphs.empty()
              ? schema.infer_types(attrs, infos, values, static_cast<int>(n->outputs.size()))
              : ops::infer_control_flow(n->op, attrs, infos, n->outputs.size(),
                                        static_cast<size_t>(n->num_captured), n->subgraph_signatures());
  } catch (const Error& e) {
    if (allow_unknown && e.code() == ErrorCode::kUnsupported) return false;
    throw Error(e.code(), "node '" + n->name + "': " + e.what());
  }
  KILN_CHECK(out.size() >= n->outputs.size(), ErrorCode::kInternal, n->label(), ": inference gave ",
             out.size(), " outputs for ", n->outputs.size());
  for (size_t i = 0; i < n->outputs.size(); ++i) n->outputs[i]->info = out[i];
  return true;
}

Graph Graph::clone() const {
  Graph g;
  g.name = name;
  g.next_fresh_ = next_fresh_;
  std::unordered_map<const Value*, Value*> value_map;
  auto copy_value = [&](const Value* v) {
    Value* c = g.new_value(v->name);
    c->info = v->info;
    c->constant = v->constant;
    value_map[v] = c;
    return c;
  };
  for (const Value* v : inputs_) g.inputs_.push_back(copy_value(v));
  for (const auto& v : values_)
    if (!value_map.count(v.get()) && !v->producer) copy_value(v.get());
  for (Node* n : topological_order()) {
    std::vector<Value*> ins;
    for (const Value* in : n->inputs) ins.push_back(in ? value_map.at(in) : nullptr);
    g.nodes_.push_back(std::make_unique<Node>());
    Node* c = g.nodes_.back().get();
    c->name = n->name;
    c->op = n->op;
    c->attrs = n->attrs;
    c->subgraphs = n->subgraphs;
    c->num_captured = n->num_captured;
    c->inputs = ins;
    for (Value* in : ins)
      if (in) in->users.push_back(c);
    for (const Value* out : n->outputs) {
      Value* co = copy_value(out);
      co->producer = c;
      co->producer_output = out->producer_output;
      c->outputs.push_back(co);
    }
    g.nodes_by_name_[c->name] = c;
  }
  for (const Value* out : outputs_) g.outputs_.push_back(value_map.at(out));
  return g;
}

}  // namespace kiln::graph
