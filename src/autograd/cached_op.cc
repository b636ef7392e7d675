// CachedOp: see cached_op.h. Each cache entry is one (mode, input signature): the bound graph,
// its compiled plan, and per set of inputs that need gradients the compiled gradient graphs
// (a forward plan that also outputs the values the backward reads, and the backward plan).
#include "autograd/cached_op.h"

#include <algorithm>
#include <list>
#include <map>
#include <optional>
#include <sstream>
#include <unordered_map>

#include "autograd/graph_gradient.h"
#include "autograd/tape.h"
#include "kiln/autograd.hpp"
#include "kiln/error.hpp"
#include "ndarray/autograd_hook.h"
#include "ops/op_schema.h"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace kiln::autograd {

namespace {

std::shared_ptr<const runtime::Plan> compile_fast(const graph::Graph& g) {
  runtime::CompileOptions options;
  options.providers = runtime::registered_kernel_providers();
  return runtime::compile(g, options);
}

bool needs_grad(const NDArray& a) {
  return a.defined() && is_floating(a.dtype()) && a.autograd_entry() != nullptr &&
         a.autograd_entry()->node->requires_grad;
}

std::vector<Tensor> tensors_of(const std::vector<NDArray>& arrays) {
  std::vector<Tensor> tensors;
  for (const NDArray& a : arrays) tensors.push_back(a.tensor().contiguous());
  return tensors;
}

// The compiled gradient of one entry for one set of inputs that need gradients. Executors are
// workspaces used one call at a time; CachedOp, like a Block, is used by one thread.
struct CompiledGradient {
  GradientGraphs graphs;
  std::vector<int> wrt;  // the input each backward output is the gradient of
  runtime::Executor forward;
  runtime::Executor backward;

  CompiledGradient(GradientGraphs g, std::vector<int> w)
      : graphs(std::move(g)),
        wrt(std::move(w)),
        forward(compile_fast(graphs.forward)),
        backward(compile_fast(graphs.backward)) {}
};

// One recorded call: the values its backward reads.
class CachedOpCall final : public TapeFunction {
 public:
  CachedOpCall(std::string label, std::shared_ptr<CompiledGradient> gradient, std::vector<Tensor> inputs,
               std::vector<Tensor> outputs)
      : label_(std::move(label)),
        gradient_(std::move(gradient)),
        inputs_(std::move(inputs)),
        outputs_(std::move(outputs)) {}

  std::string label() const override { return label_; }

  std::vector<NDArray> backward(const std::vector<NDArray>& output_grads, const std::vector<bool>&) override {
    using Kind = GradientGraphs::Source::Kind;
    std::vector<Tensor> feed;
    for (const auto& source : gradient_->graphs.backward_inputs) {
      const size_t i = static_cast<size_t>(source.index);
      switch (source.kind) {
        case Kind::kForwardInput:
          feed.push_back(inputs_.at(i));
          break;
        case Kind::kForwardOutput:
          feed.push_back(outputs_.at(i));
          break;
        case Kind::kHeadGrad: {
          const Tensor& out = outputs_.at(i);
          const NDArray& g = i < output_grads.size() ? output_grads[i] : NDArray();
          feed.push_back(g.defined() ? g.tensor().contiguous() : Tensor::full(out.shape(), 0, out.dtype()));
          break;
        }
      }
    }
    std::vector<Tensor> grads = gradient_->backward.run(feed);
    std::vector<NDArray> result(inputs_.size());
    for (size_t k = 0; k < grads.size(); ++k)
      result[static_cast<size_t>(gradient_->wrt[k])] = NDArray(std::move(grads[k]));
    return result;
  }

  // The compiled backward reads values the forward plan computed, which the tape cannot see as
  // functions of the inputs, so a gradient of it would miss their dependence. Instead the forward
  // graph is replayed op by op on the recorded inputs and differentiated by the tape like any
  // imperative code. Random ops take the forward run's draws (the same function is
  // differentiated); state updates (BatchNorm's running statistics) are computed but not written.
  std::vector<NDArray> recorded_backward(const std::vector<NDArray>& inputs,
                                         const std::vector<NDArray>& output_grads,
                                         const std::vector<bool>& wanted) override {
    const graph::Graph& g = gradient_->graphs.forward;
    std::unordered_map<const graph::Value*, size_t> saved;  // forward outputs the run kept
    for (size_t k = 0; k < g.outputs().size(); ++k) saved.emplace(g.outputs()[k], k);
    std::unordered_map<const graph::Value*, NDArray> values;
    std::vector<NDArray> targets(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      // The gradient is read at a recorded copy of each input, where the walk stops.
      if (wanted[i]) targets[i] = nd::invoke("Identity", {inputs[i]}).at(0);
      values[g.inputs()[i]] = wanted[i] ? targets[i] : inputs[i];
    }
    const auto value_of = [&](const graph::Value* v) -> NDArray {
      if (v == nullptr) return NDArray();
      if (const auto it = values.find(v); it != values.end()) return it->second;
      KILN_CHECK(v->is_constant(), ErrorCode::kInternal, label_, ": no value for '", v->name,
                 "' in the replay");
      return values[v] = NDArray(v->constant);
    };
    for (const graph::Node* node : g.topological_order()) {
      std::vector<NDArray> args;
      for (const graph::Value* v : node->inputs) args.push_back(value_of(v));
      std::vector<NDArray> outs;
      if (ops::OpRegistry::global().get(node->op).is_random()) {
        for (const graph::Value* v : node->outputs)
          outs.push_back(v != nullptr ? NDArray(outputs_.at(saved.at(v))) : NDArray());
        if (detail::t_op_recorder != nullptr)
          detail::t_op_recorder->record(node->op, node->attrs, args, outs);
      } else {
        outs = nd::invoke(node->op, args, node->attrs, static_cast<int>(node->outputs.size()));
      }
      for (size_t k = 0; k < node->outputs.size(); ++k)
        if (node->outputs[k] != nullptr) values[node->outputs[k]] = outs.at(k);
    }
    std::vector<NDArray> heads, head_grads;
    for (size_t k = 0; k < output_grads.size(); ++k) {
      const NDArray out = value_of(g.outputs().at(k));
      if (!output_grads[k].defined() || out.autograd_entry() == nullptr) continue;
      heads.push_back(out);
      head_grads.push_back(output_grads[k]);
    }
    return recorded_gradients(heads, head_grads, targets);
  }

 private:
  std::string label_;
  std::shared_ptr<CompiledGradient> gradient_;
  std::vector<Tensor> inputs_;
  std::vector<Tensor> outputs_;  // every forward output, the saved values included
};

struct Entry {
  std::string key;
  TracedGraph traced;  // with the signature's shapes bound
  runtime::Executor forward;
  std::map<std::vector<bool>, std::shared_ptr<CompiledGradient>> gradients;  // by inputs needing one

  Entry(std::string k, TracedGraph t)
      : key(std::move(k)), traced(std::move(t)), forward(compile_fast(traced.graph)) {}
};

std::string signature_of(const std::vector<NDArray>& inputs, bool training) {
  std::ostringstream os;
  os << (training ? "train" : "predict");
  for (const NDArray& a : inputs) os << ';' << a.dtype() << a.shape();
  return os.str();
}

}  // namespace

struct CachedOp::Impl {
  TracedFunction fn;                 // empty for a given graph
  std::vector<TraceInput> inputs;    // for a traced function
  std::optional<TracedGraph> given;  // for a given graph
  CachedOpOptions options;
  std::list<Entry> entries;  // most recently used first

  std::string label() const {
    const std::string& name = given ? given->graph.name : std::string();
    return name.empty() ? "CachedOp" : "CachedOp '" + name + "'";
  }

  void check_inputs(const std::vector<NDArray>& arrays) const {
    const size_t expected = given ? given->graph.inputs().size() : inputs.size();
    KILN_CHECK(arrays.size() == expected, ErrorCode::kInvalidArgument, label(), ": ", arrays.size(),
               " inputs given, expected ", expected);
    for (size_t i = 0; i < arrays.size(); ++i)
      KILN_CHECK(arrays[i].defined(), ErrorCode::kInvalidArgument, label(), ": input ", i, " is undefined");
  }

  TracedGraph make_graph(const std::vector<NDArray>& arrays, bool training) const {
    TracedGraph source = given ? TracedGraph{given->graph.clone(), given->num_outputs, given->state_updates}
                               : trace(fn, inputs, arrays, training);
    std::map<std::string, Shape> shapes;
    for (size_t i = 0; i < arrays.size(); ++i) shapes[source.graph.inputs()[i]->name] = arrays[i].shape();
    graph::Graph bound = runtime::bind_input_shapes(source.graph, shapes);
    return TracedGraph{std::move(bound), source.num_outputs, source.state_updates};
  }

  Entry& entry_for(const std::vector<NDArray>& arrays, bool training) {
    const std::string key = signature_of(arrays, given ? false : training);
    for (auto it = entries.begin(); it != entries.end(); ++it)
      if (it->key == key) {
        entries.splice(entries.begin(), entries, it);
        return entries.front();
      }
    entries.emplace_front(key, make_graph(arrays, training));
    const size_t limit = std::max<size_t>(1, options.max_cached_signatures) * 2;  // both modes
    while (entries.size() > limit) entries.pop_back();
    return entries.front();
  }

  std::shared_ptr<CompiledGradient> gradient_for(Entry& entry, const std::vector<bool>& wanted) {
    auto& slot = entry.gradients[wanted];
    if (slot) return slot;
    const graph::Graph& g = entry.traced.graph;
    GradientRequest request;
    std::vector<int> head_outputs;  // the output each head is
    for (int k = 0; k < entry.traced.num_outputs; ++k) {
      const graph::Value* out = g.outputs()[static_cast<size_t>(k)];
      if (!out->info || !is_floating(out->info->dtype)) continue;
      request.heads.push_back({out->name, false});
      head_outputs.push_back(k);
    }
    std::vector<int> wrt;
    for (size_t i = 0; i < wanted.size(); ++i)
      if (wanted[i]) {
        request.wrt.push_back(g.inputs()[i]->name);
        wrt.push_back(static_cast<int>(i));
      }
    GradientGraphs graphs = build_gradient(g, request);
    // Every output of a random op is kept too, for a replay of the same draws (recorded_backward).
    for (const graph::Node* node : graphs.forward.topological_order()) {
      if (!ops::OpRegistry::global().get(node->op).is_random()) continue;
      for (graph::Value* v : node->outputs)
        if (v != nullptr && std::find(graphs.forward.outputs().begin(), graphs.forward.outputs().end(), v) ==
                                graphs.forward.outputs().end())
          graphs.forward.add_output(v);
    }
    // Head gradients were requested per floating output; number them by output instead.
    for (auto& source : graphs.backward_inputs)
      if (source.kind == GradientGraphs::Source::Kind::kHeadGrad)
        source.index = head_outputs[static_cast<size_t>(source.index)];
    slot = std::make_shared<CompiledGradient>(std::move(graphs), std::move(wrt));
    return slot;
  }

  void write_states(const Entry& entry, const std::vector<NDArray>& arrays,
                    const std::vector<Tensor>& results) {
    if (entry.traced.state_updates.empty()) return;
    auto paused = pause(is_training());  // state updates are not part of any recorded graph
    for (size_t k = 0; k < entry.traced.state_updates.size(); ++k) {
      const NDArray& state = arrays[static_cast<size_t>(entry.traced.state_updates[k])];
      nd::invoke_into("Identity", {NDArray(results[static_cast<size_t>(entry.traced.num_outputs) + k])},
                      {state});
    }
  }
};

CachedOp::CachedOp(TracedFunction fn, std::vector<TraceInput> inputs, CachedOpOptions options)
    : impl_(std::make_unique<Impl>()) {
  KILN_CHECK(static_cast<bool>(fn), ErrorCode::kInvalidArgument, "CachedOp: the function is empty");
  impl_->fn = std::move(fn);
  impl_->inputs = std::move(inputs);
  impl_->options = options;
}

CachedOp::CachedOp(TracedGraph graph, CachedOpOptions options) : impl_(std::make_unique<Impl>()) {
  graph.graph.verify();
  KILN_CHECK(graph.num_outputs + graph.state_updates.size() == graph.graph.outputs().size(),
             ErrorCode::kInvalidArgument, "CachedOp: graph '", graph.graph.name, "' has ",
             graph.graph.outputs().size(), " outputs, expected ", graph.num_outputs, " plus ",
             graph.state_updates.size(), " state updates");
  impl_->given = std::move(graph);
  impl_->options = options;
}

CachedOp::~CachedOp() = default;

size_t CachedOp::num_cached() const {
  return impl_->entries.size();
}

std::vector<NDArray> CachedOp::operator()(const std::vector<NDArray>& inputs) {
  Impl& impl = *impl_;
  impl.check_inputs(inputs);
  // Inside another trace the function runs op by op, so that the outer trace sees its ops.
  if (is_tracing()) {
    KILN_CHECK(static_cast<bool>(impl.fn), ErrorCode::kUnsupported, impl.label(),
               ": a CachedOp made from a graph cannot run inside a trace");
    return impl.fn(inputs);
  }
  Entry& entry = impl.entry_for(inputs, is_training());
  std::vector<bool> wanted;
  for (const NDArray& a : inputs) wanted.push_back(is_recording() && needs_grad(a));
  const bool records = std::find(wanted.begin(), wanted.end(), true) != wanted.end();

  const std::vector<Tensor> feed = tensors_of(inputs);
  std::shared_ptr<CompiledGradient> gradient = records ? impl.gradient_for(entry, wanted) : nullptr;
  std::vector<Tensor> results = records ? gradient->forward.run(feed) : entry.forward.run(feed);
  impl.write_states(entry, inputs, results);
  std::vector<NDArray> outputs;
  for (int k = 0; k < entry.traced.num_outputs; ++k) outputs.emplace_back(results[static_cast<size_t>(k)]);
  if (records)
    record_function(
        std::make_shared<CachedOpCall>(impl.label(), std::move(gradient), feed, std::move(results)), inputs,
        outputs);
  return outputs;
}

}  // namespace kiln::autograd
