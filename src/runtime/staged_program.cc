// StagedProgram: the cut (head, decided nodes, tail) made once, and runs over it.
#include "runtime/staged_program.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "runtime/graph_checks.h"

namespace kiln::runtime {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

bool concrete(const Value* v) {
  return v->info.has_value() && v->info->shape.is_known();
}

// The element count of `shape`, or -1 when it does not fit in int64.
int64_t checked_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape.dims())
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

// A new graph's copy of `node`, reading `inputs` (already in that graph).
void copy_node(Graph& g, const Node& node, std::vector<Value*> inputs) {
  std::vector<std::string> output_names;
  for (const Value* out : node.outputs) output_names.push_back(out->name);
  Node* copy = g.add_node_with_outputs(node.op, std::move(inputs), node.attrs, node.name, output_names);
  copy->subgraphs = node.subgraphs;
  copy->num_captured = node.num_captured;
}

}  // namespace

void check_dynamic_size(const std::string& where, const std::string& what, const Shape& shape,
                        int64_t max_elements) {
  const int64_t n = checked_numel(shape);
  KILN_CHECK(n >= 0 && n <= max_elements, ErrorCode::kOutOfRange, where, ": ", what, " would have shape ",
             shape, " (", n < 0 ? std::string("more than 2^63") : std::to_string(n),
             " elements), over max_dynamic_elements = ", max_elements);
}

StagedProgram::StagedProgram(Graph bound, const ProgramOptions& options)
    : label_(graph_label(bound)), options_(options) {
  // Head: nodes whose every input is at hand before the decided nodes and whose every output
  // shape is known. Decided: nodes whose inputs are at hand but some output shape is not.
  // Everything else is the tail.
  std::unordered_set<const Value*> at_hand;
  for (const Value* v : bound.inputs()) at_hand.insert(v);
  for (const Value* v : bound.initializers()) at_hand.insert(v);
  std::vector<const Node*> head_nodes, decided_nodes, tail_nodes;
  for (const Node* n : bound.topological_order()) {
    bool inputs_at_hand = true, outputs_known = true;
    for (const Value* in : n->inputs) inputs_at_hand &= in == nullptr || at_hand.count(in) > 0;
    for (const Value* out : n->outputs) outputs_known &= concrete(out);
    outputs_known &= fits_in_plan(*n);  // control flow and sequences run node by node, never in a plan
    if (inputs_at_hand && outputs_known) {
      head_nodes.push_back(n);
      for (const Value* out : n->outputs) at_hand.insert(out);
    } else if (inputs_at_hand) {
      decided_nodes.push_back(n);
    } else {
      tail_nodes.push_back(n);
    }
  }
  // Which values of the head the decided nodes, the tail or the graph outputs read.
  std::unordered_map<const Value*, Source> source;
  for (size_t i = 0; i < bound.inputs().size(); ++i) {
    const Value* v = bound.inputs()[i];
    source[v] = v->is_constant() ? Source{Source::From::kConstant, 0, 0, v->constant}
                                 : Source{Source::From::kInput, i, 0, {}};
  }
  for (const Value* v : bound.initializers())
    if (!source.count(v)) source[v] = Source{Source::From::kConstant, 0, 0, v->constant};
  std::vector<const Value*> head_outputs;
  const auto read = [&](const Value* v) {
    if (v == nullptr || source.count(v)) return;
    // Not yet placed: a head output (decided and tail outputs are placed before they are read).
    source[v] = Source{Source::From::kHead, head_outputs.size(), 0, {}};
    head_outputs.push_back(v);
  };
  for (const Node* n : decided_nodes)
    for (const Value* in : n->inputs) read(in);
  for (size_t k = 0; k < decided_nodes.size(); ++k)
    for (size_t o = 0; o < decided_nodes[k]->outputs.size(); ++o)
      source[decided_nodes[k]->outputs[o]] = Source{Source::From::kDecided, k, o, {}};
  std::unordered_set<const Value*> made_in_tail;
  for (const Node* n : tail_nodes)
    for (const Value* out : n->outputs) made_in_tail.insert(out);
  for (const Node* n : tail_nodes)
    for (const Value* in : n->inputs)
      if (in != nullptr && !made_in_tail.count(in)) read(in);
  for (const Value* out : bound.outputs())
    if (!made_in_tail.count(out)) read(out);

  // The head plan: every head node (dead ones were removed when the graph was bound), taking the
  // whole feed, giving what the rest reads.
  if (!head_outputs.empty()) {
    Graph head;
    head.name = bound.name;
    std::unordered_map<const Value*, Value*> in_head;
    // The plan takes the inputs that are tensors; a sequence or optional input is read only by
    // nodes that run one by one.
    for (size_t i = 0; i < bound.inputs().size(); ++i) {
      const Value* v = bound.inputs()[i];
      if (!fits_in_plan(*v)) continue;
      in_head[v] = head.add_input(v->name, v->info);
      head_feed_.push_back(i);
    }
    for (const Value* v : bound.initializers())
      if (!in_head.count(v)) in_head[v] = head.add_initializer(v->name, v->constant);
    for (const Node* n : head_nodes) {
      std::vector<Value*> inputs;
      for (const Value* in : n->inputs) inputs.push_back(in ? in_head.at(in) : nullptr);
      copy_node(head, *n, std::move(inputs));
      for (const Value* out : n->outputs) in_head[out] = head.find_value(out->name);
    }
    std::vector<Value*> outputs;
    for (const Value* v : head_outputs) outputs.push_back(in_head.at(v));
    head.set_outputs(std::move(outputs));
    head.remove_unused_values();
    head_ = std::make_unique<PlanProgram>(compile(head, options.compile));
  }

  for (const Node* n : decided_nodes) {
    DecidedNode d;
    d.label = n->label();
    d.schema = &n->schema();
    d.attrs = bind_node_attrs(bound, *n);
    for (const Value* in : n->inputs)
      d.inputs.push_back(in ? std::optional<Source>(source.at(in)) : std::nullopt);
    d.num_outputs = static_cast<int>(n->outputs.size());
    for (const auto& [attr, subgraph] : n->subgraphs)
      d.subgraphs.emplace(
          attr, std::make_shared<SubgraphProgram>(*subgraph, options,
                                                  label_ + ": " + d.label + " subgraph '" + attr + "'"));
    d.signatures = n->subgraph_signatures();
    d.num_captured = static_cast<size_t>(n->num_captured);
    decided_.push_back(std::move(d));
  }

  // The tail: its inputs are the values it reads from before it; constants stay constants.
  if (!tail_nodes.empty()) {
    tail_.name = bound.name;
    std::unordered_map<const Value*, Value*> in_tail;
    for (const Node* n : tail_nodes) {
      std::vector<Value*> inputs;
      for (const Value* in : n->inputs) {
        if (in == nullptr) {
          inputs.push_back(nullptr);
          continue;
        }
        if (!in_tail.count(in)) {
          const Source& s = source.at(in);
          if (s.from == Source::From::kConstant) {
            in_tail[in] = tail_.add_initializer(in->name, s.constant);
          } else {
            const bool decided = s.from == Source::From::kDecided;
            in_tail[in] = tail_.add_input(in->name, decided ? std::nullopt : in->info);
            tail_inputs_.push_back(s);
          }
        }
        inputs.push_back(in_tail.at(in));
      }
      copy_node(tail_, *n, std::move(inputs));
      for (const Value* out : n->outputs) in_tail[out] = tail_.find_value(out->name);
    }
    for (const Value* out : bound.outputs()) {
      if (!made_in_tail.count(out)) continue;
      source[out] = Source{Source::From::kTail, tail_.outputs().size(), 0, {}};
      tail_.add_output(in_tail.at(out));
    }
    tails_ = std::make_unique<ProgramCache>(options.max_cached_plans);
  }
  for (const Value* out : bound.outputs()) outputs_.push_back(source.at(out));
}

const Tensor& StagedProgram::find(const Source& s, const RunValues& values) const {
  switch (s.from) {
    case Source::From::kInput:
      return values.inputs[s.index];
    case Source::From::kConstant:
      return s.constant;
    case Source::From::kHead:
      return values.head[s.index];
    case Source::From::kDecided:
      return values.decided[s.index][s.output];
    case Source::From::kTail:
      return values.tail[s.index];
  }
  raise(ErrorCode::kInternal, label_, ": a value with no source");
}

// A decided node, by its reference kernel: its sizes inferred from its inputs' values, checked
// against the limit, then allocated and computed.
std::vector<Tensor> StagedProgram::run_decided(const DecidedNode& node, const RunValues& values) const {
  std::vector<Tensor> inputs;
  std::vector<std::optional<ops::TensorInfo>> infos;
  std::vector<const Tensor*> known_values;
  for (const auto& s : node.inputs) inputs.push_back(s ? find(*s, values).contiguous() : Tensor());
  for (const Tensor& t : inputs) {
    infos.push_back(t.defined() ? std::optional<ops::TensorInfo>(ops::info_of(t)) : std::nullopt);
    known_values.push_back(t.defined() ? &t : nullptr);
  }
  try {
    if (!node.subgraphs.empty()) return run_control_flow(node, inputs);
    if (std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) {
          return t.defined() && !t.is_sequence() && is_string(t.dtype());
        })) {
      // Strings: the op runs as run_reference runs it (an op that moves strings runs on their ids).
      std::vector<Tensor> outputs = node.schema->run_reference(node.attrs, inputs, node.num_outputs);
      for (size_t i = 0; i < outputs.size(); ++i)
        if (outputs[i].defined() && !outputs[i].is_sequence())
          check_dynamic_size(label_ + ": " + node.label, "output " + std::to_string(i), outputs[i].shape(),
                             options_.max_dynamic_elements);
      return outputs;
    }
    const std::vector<ops::TensorInfo> out_infos =
        node.schema->infer_types(node.attrs, infos, known_values, node.num_outputs);
    std::vector<Tensor> outputs;
    for (int i = 0; i < node.num_outputs; ++i) {
      const ops::TensorInfo& info = out_infos[static_cast<size_t>(i)];
      if (info.is_plain())
        check_dynamic_size(label_ + ": " + node.label, "output " + std::to_string(i), info.shape,
                           options_.max_dynamic_elements);
      outputs.push_back(ops::allocate_output(info));
    }
    const ops::KernelFn& kernel = node.schema->reference_kernel();
    KILN_CHECK(kernel != nullptr, ErrorCode::kUnsupported, label_, ": ", node.label, ": no CPU kernel");
    ops::KernelContext ctx{node.attrs, inputs, outputs};
    kernel(ctx);
    return outputs;
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.rfind(label_, 0) == 0) throw;  // already names the graph and the node
    throw Error(e.code(), label_ + ": " + node.label + ": " + message);
  }
}

// A control-flow node: its subgraphs run as the op says (ops/control_flow.h), each output then
// checked against the limit.
std::vector<Tensor> StagedProgram::run_control_flow(const DecidedNode& node,
                                                    const std::vector<Tensor>& inputs) const {
  const ops::SubgraphRunner run_subgraph = [&](const std::string& name, const std::vector<Tensor>& given) {
    return node.subgraphs.at(name)->run(given);
  };
  const ops::ControlFlowLimits limits{options_.max_loop_iterations, options_.max_dynamic_elements};
  std::vector<Tensor> outputs =
      ops::run_control_flow(node.schema->name(), node.attrs, inputs, node.num_captured,
                            static_cast<size_t>(node.num_outputs), node.signatures, run_subgraph, limits);
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].defined() && !outputs[i].is_sequence())
      check_dynamic_size(label_ + ": " + node.label, "output " + std::to_string(i), outputs[i].shape(),
                         options_.max_dynamic_elements);
  return outputs;
}

std::vector<Tensor> StagedProgram::run(const std::vector<Tensor>& inputs) const {
  RunValues values{inputs, {}, {}, {}};
  if (head_ && head_feed_.size() == inputs.size()) {
    values.head = head_->run(inputs);
  } else if (head_) {
    std::vector<Tensor> feed;
    for (size_t i : head_feed_) feed.push_back(inputs[i]);
    values.head = head_->run(feed);
  }
  values.decided.reserve(decided_.size());
  for (const DecidedNode& node : decided_) values.decided.push_back(run_decided(node, values));
  if (tails_) {
    std::vector<Tensor> feed;
    std::string key;
    InputBinding binding;
    for (size_t i = 0; i < tail_inputs_.size(); ++i) {
      feed.push_back(find(tail_inputs_[i], values));
      if (tail_inputs_[i].from != Source::From::kDecided) continue;
      bind_given(binding, tail_.inputs()[i]->name, feed.back(), /*with_dtype=*/true);
      append_signature(key, feed.back(), /*with_dtype=*/true);
      key += ';';
    }
    values.tail = tails_->run(
        key,
        [&] {
          binding.allow_unknown = true;
          Graph bound = bind_inputs(tail_, binding);
          graph::PassManager::for_level(options_.level).run(bound);
          return make_program(std::move(bound), options_, /*sized_by_values=*/true);
        },
        feed);
  }
  std::vector<Tensor> outputs;
  outputs.reserve(outputs_.size());
  for (const Source& s : outputs_) {
    const bool owned =
        s.from == Source::From::kHead || s.from == Source::From::kDecided || s.from == Source::From::kTail;
    outputs.push_back(owned ? find(s, values) : find(s, values).clone());
  }
  return outputs;
}

}  // namespace kiln::runtime
