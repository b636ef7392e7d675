// trace(): see cached_op.h. A TraceRecorder is the thread's op recorder while the function runs;
// it knows each traced array by its storage chunk and view, so a parameter the function reads
// itself is recognised like the argument it was given, and a copy without autograd entry
// (detach) stays traced. Traced arrays also carry an autograd entry (of a node that needs no
// gradient), so that views taken of them are reported as the ops they equal.
#include <algorithm>
#include <exception>
#include <map>

#include "autograd/cached_op.h"
#include "autograd/tape.h"
#include "kiln/autograd.hpp"
#include "kiln/error.hpp"

namespace kiln::autograd {

namespace {

bool same_view(const Tensor& a, const Tensor& b) {
  return a.storage() == b.storage() && a.offset() == b.offset() && a.shape() == b.shape() &&
         a.strides() == b.strides() && a.dtype() == b.dtype();
}

class TraceRecorder final : public detail::OpRecorder {
 public:
  explicit TraceRecorder(graph::Graph& g) : graph_(g), marker_(std::make_shared<TapeNode>()) {}

  bool discards_values() const override { return true; }

  // Makes `array` stand for `value` from now on (it may have stood for another one before).
  void bind(NDArray& array, graph::Value* value) {
    array.set_autograd_entry(std::make_shared<detail::AutogradEntry>(detail::AutogradEntry{marker_, 0}));
    auto& views = traced_[array.chunk().get()];
    for (auto& [view, v] : views)
      if (same_view(view, array.view())) {
        v = value;
        return;
      }
    views.emplace_back(array.view(), value);
    chunks_.push_back(array.chunk());  // keeps the chunk's address from being reused
  }

  graph::Value* find(const NDArray& array) const {
    if (!array.defined()) return nullptr;
    auto it = traced_.find(array.chunk().get());
    if (it == traced_.end()) return nullptr;
    for (const auto& [view, v] : it->second)
      if (same_view(view, array.view())) return v;
    raise(ErrorCode::kUnsupported, "trace: an array of shape ", array.shape(),
          " is a view of a traced array taken while it was not traced (e.g. of a parameter read directly); "
          "pass the parameter as an argument, or take the view from the argument");
  }

  // The traced value of `array`, or a constant holding its current contents.
  graph::Value* value_of(const NDArray& array) {
    if (!array.defined()) return nullptr;
    if (graph::Value* v = find(array)) return v;
    return graph_.add_initializer(graph_.fresh_name("const"), array.tensor().clone());
  }

  void record(const std::string& op, const AttrMap& attrs, const std::vector<NDArray>& inputs,
              std::vector<NDArray>& outputs) override {
    // A call on constants only is a constant, its results folded in when used; unless it draws
    // random numbers, which the traced graph must draw anew on every run.
    if (!ops::OpRegistry::global().get(op).is_random() &&
        std::none_of(inputs.begin(), inputs.end(), [&](const NDArray& a) { return find(a) != nullptr; }))
      return;
    std::vector<graph::Value*> values;
    for (const NDArray& in : inputs) values.push_back(value_of(in));
    graph::Node* node = graph_.add_node(op, values, attrs, "", static_cast<int>(outputs.size()));
    for (size_t k = 0; k < outputs.size(); ++k) {
      node->outputs[k]->info = ops::TensorInfo{outputs[k].dtype(), outputs[k].shape()};
      bind(outputs[k], node->outputs[k]);
    }
  }

  void check_write(const std::string& op, const std::vector<NDArray>& inputs,
                   const std::vector<NDArray>& outputs) override {
    const bool reads_traced =
        std::any_of(inputs.begin(), inputs.end(), [&](const NDArray& a) { return find(a) != nullptr; });
    const bool writes_traced =
        std::any_of(outputs.begin(), outputs.end(), [&](const NDArray& a) { return find(a) != nullptr; });
    if (!reads_traced && !writes_traced) return;  // constants computed in place
    const ops::OpSchema& schema = ops::OpRegistry::global().get(op);
    // Only attribute-free ops can be replayed: the recorder is not told the attributes of a write.
    KILN_CHECK(schema.attrs().empty() && outputs.size() == 1, ErrorCode::kUnsupported, "trace: ", op,
               " writes into an existing array",
               " that is traced or from traced values; only ops without attributes (Identity, Add, Mul, ...) "
               "writing one array can be traced this way; compute a new array instead");
    NDArray target = outputs[0];
    save_state(target);
    graph::Value* result = nullptr;
    if (op == "Identity") {
      result = value_of(inputs.at(0));
    } else {
      std::vector<graph::Value*> values;
      for (const NDArray& in : inputs) values.push_back(value_of(in));
      graph::Node* node = graph_.add_node(op, values, {}, "", 1);
      node->outputs[0]->info = ops::TensorInfo{target.dtype(), target.shape()};
      result = node->outputs[0];
    }
    written_[target.chunk().get()] = {target, result};
    bind(target, result);
  }

  // Each array written and the value last written into it.
  std::vector<std::pair<NDArray, graph::Value*>> writes() const {
    std::vector<std::pair<NDArray, graph::Value*>> out;
    for (const auto& [chunk, write] : written_) out.push_back(write);
    return out;
  }

  // Puts back what the trace wrote into arrays that existed before it.
  void restore_states() {
    auto paused = pause(is_training());  // not part of any recorded graph
    for (auto& [array, saved] : saved_states_) nd::invoke_into("Identity", {saved}, {array});
  }

 private:
  void save_state(const NDArray& array) {
    for (const auto& [a, saved] : saved_states_)
      if (same_view(a.view(), array.view())) return;
    saved_states_.emplace_back(array, NDArray(array.tensor().clone()));
  }

  graph::Graph& graph_;
  std::shared_ptr<TapeNode> marker_;  // the node traced arrays' entries name (it needs no gradient)
  std::map<const detail::Chunk*, std::vector<std::pair<Tensor, graph::Value*>>> traced_;
  std::vector<std::shared_ptr<detail::Chunk>> chunks_;
  std::map<const detail::Chunk*, std::pair<NDArray, graph::Value*>> written_;
  std::vector<std::pair<NDArray, NDArray>> saved_states_;
};

// Makes `recorder` the thread's tracer and `training` its training flag until destroyed.
class TraceScope {
 public:
  TraceScope(TraceRecorder& recorder, bool training)
      : previous_(set_tracer(&recorder)), was_training_(set_training(training)) {}
  ~TraceScope() {
    set_tracer(previous_);
    set_training(was_training_);
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  detail::OpRecorder* previous_;
  bool was_training_;
};

}  // namespace

TracedGraph trace(const TracedFunction& fn, const std::vector<TraceInput>& inputs,
                  const std::vector<NDArray>& examples, bool training) {
  KILN_CHECK(inputs.size() == examples.size(), ErrorCode::kInvalidArgument, "trace: ", examples.size(),
             " example arrays for ", inputs.size(), " inputs");
  TracedGraph result;
  graph::Graph& g = result.graph;
  TraceRecorder recorder(g);
  std::vector<NDArray> arguments;
  std::vector<NDArray> originals;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const NDArray& example = examples[i];
    KILN_CHECK(example.defined(), ErrorCode::kInvalidArgument, "trace: input ", i, " ('", inputs[i].name,
               "') is undefined");
    graph::Value* v = g.add_input(inputs[i].name, ops::TensorInfo{example.dtype(), example.shape()});
    NDArray argument(example.chunk(), example.view());
    recorder.bind(argument, v);
    arguments.push_back(argument);
    originals.push_back(argument);
  }
  std::vector<NDArray> outputs;
  std::exception_ptr failure;
  {
    TraceScope scope(recorder, training);
    try {
      outputs = fn(arguments);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  if (failure) {
    recorder.restore_states();
    std::rethrow_exception(failure);
  }
  for (const NDArray& out : outputs) g.add_output(recorder.value_of(out));
  result.num_outputs = static_cast<int>(outputs.size());
  for (const auto& write : recorder.writes()) {
    const NDArray& array = write.first;  // a lambda captures a name, not a structured binding (clang 14)
    const auto it = std::find_if(originals.begin(), originals.end(),
                                 [&](const NDArray& o) { return same_view(o.view(), array.view()); });
    if (it == originals.end()) continue;  // a scratch array of the function's own
    g.add_output(write.second);
    result.state_updates.push_back(static_cast<int>(it - originals.begin()));
  }
  recorder.restore_states();
  g.verify();
  return result;
}

}  // namespace kiln::autograd
