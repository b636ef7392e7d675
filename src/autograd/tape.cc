// Recording: the per-thread recording and training state, the scopes that set it, the recorder
// nd::invoke reports op calls to, and variables (attach_grad).
#include <algorithm>
#include <utility>

#include "autograd/tape.h"
#include "kiln/autograd.hpp"
#include "ndarray/autograd_hook.h"

namespace kiln::autograd {

namespace {

thread_local bool t_training = false;
thread_local bool t_recording = false;
thread_local detail::OpRecorder* t_tracer = nullptr;

bool requires_grad(const NDArray& a) {
  return a.defined() && a.autograd_entry() != nullptr && a.autograd_entry()->node->requires_grad;
}

// The value alone: saved on the tape without the entry that would point back at the node.
NDArray value_of(const NDArray& a) {
  return a.defined() ? NDArray(a.chunk(), a.view()) : NDArray();
}

std::string describe(const NDArray& a) {
  return "an NDArray of shape " + a.shape().to_string() + " " + dtype_name(a.dtype());
}

// Points the node at its inputs' entries and gives the floating-point outputs entries naming it.
void link(const std::shared_ptr<TapeNode>& node, const std::vector<NDArray>& inputs,
          std::vector<NDArray>& outputs) {
  node->requires_grad = true;
  for (const NDArray& in : inputs) {
    node->inputs.push_back(value_of(in));
    // Integer and bool inputs (indices, shapes, masks) carry no gradient.
    const bool flows = requires_grad(in) && is_floating(in.dtype());
    node->input_entries.push_back(flows ? in.autograd_entry() : nullptr);
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    node->outputs.push_back(value_of(outputs[k]));
    if (is_floating(outputs[k].dtype()))
      outputs[k].set_autograd_entry(
          std::make_shared<detail::AutogradEntry>(detail::AutogradEntry{node, static_cast<int>(k)}));
  }
}

class Tape final : public detail::OpRecorder {
 public:
  void record(const std::string& op, const AttrMap& attrs, const std::vector<NDArray>& inputs,
              std::vector<NDArray>& outputs) override {
    if (std::none_of(inputs.begin(), inputs.end(), requires_grad)) return;
    const ops::OpSchema& schema = ops::OpRegistry::global().get(op);
    auto node = std::make_shared<TapeNode>();
    node->schema = &schema;
    node->attrs = schema.bind(attrs);
    link(node, inputs, outputs);
  }

  void check_write(const std::string& op, const std::vector<NDArray>& inputs,
                   const std::vector<NDArray>& outputs) override {
    auto refuse = [&](const char* role, size_t i, const NDArray& a) {
      raise(
          ErrorCode::kUnsupported, "autograd: ", op,
          " writes into an existing array while recording, and its ", role, " ", i, " (", describe(a),
          ") is part of the recorded graph; in-place updates of recorded arrays are not supported (compute a "
          "new array, or write under autograd::pause())");
    };
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].autograd_entry() != nullptr) refuse("output", i, outputs[i]);
    for (size_t i = 0; i < inputs.size(); ++i)
      if (requires_grad(inputs[i])) refuse("input", i, inputs[i]);
  }
};

Tape& tape() {
  static Tape instance;
  return instance;
}

// A trace sees every op call; otherwise the tape sees them while recording.
void update_recorder() {
  detail::t_op_recorder = t_tracer != nullptr ? t_tracer : t_recording ? &tape() : nullptr;
}

}  // namespace

bool is_recording() {
  return t_recording;
}

bool is_training() {
  return t_training;
}

bool set_recording(bool recording) {
  const bool previous = std::exchange(t_recording, recording);
  update_recorder();
  return previous;
}

bool set_training(bool training) {
  return std::exchange(t_training, training);
}

Scope::Scope(bool recording, bool training)
    : was_recording_(set_recording(recording)), was_training_(set_training(training)) {}

Scope::~Scope() {
  set_recording(was_recording_);
  set_training(was_training_);
}

Scope record(bool train_mode) {
  return Scope(true, train_mode);
}
Scope pause(bool train_mode) {
  return Scope(false, train_mode);
}
Scope train_mode() {
  return Scope(is_recording(), true);
}
Scope predict_mode() {
  return Scope(is_recording(), false);
}

void record_function(std::shared_ptr<TapeFunction> function, const std::vector<NDArray>& inputs,
                     std::vector<NDArray>& outputs) {
  if (!t_recording || std::none_of(inputs.begin(), inputs.end(), requires_grad)) return;
  auto node = std::make_shared<TapeNode>();
  node->function = std::move(function);
  link(node, inputs, outputs);
}

detail::OpRecorder* set_tracer(detail::OpRecorder* tracer) {
  detail::OpRecorder* previous = std::exchange(t_tracer, tracer);
  update_recorder();
  return previous;
}

bool is_tracing() {
  return t_tracer != nullptr;
}

void attach_grad(NDArray& array, GradReq req) {
  KILN_CHECK(array.defined(), ErrorCode::kInvalidArgument, "autograd::attach_grad: the array is undefined");
  KILN_CHECK(is_floating(array.dtype()), ErrorCode::kTypeMismatch, "autograd::attach_grad: ", describe(array),
             " cannot have a gradient; expected a floating-point dtype");
  auto node = std::make_shared<TapeNode>();
  node->grad_req = req;
  node->requires_grad = req != GradReq::kNull;
  if (req != GradReq::kNull) {
    auto paused = pause(is_training());  // the zeros are not part of any graph
    node->grad = nd::zeros(array.shape(), array.dtype(), array.device());
  }
  array.set_autograd_entry(
      std::make_shared<detail::AutogradEntry>(detail::AutogradEntry{std::move(node), 0}));
}

NDArray grad(const NDArray& array) {
  const auto& entry = array.autograd_entry();
  KILN_CHECK(entry != nullptr && entry->node->is_variable() && entry->node->grad.defined(),
             ErrorCode::kInvalidArgument, "autograd::grad: ", array.defined() ? describe(array) : "the array",
             " has no gradient buffer; call attach_grad() on it (with kWrite or kAdd) before recording");
  return entry->node->grad;
}

}  // namespace kiln::autograd

namespace kiln {

void NDArray::attach_grad(GradReq req) {
  autograd::attach_grad(*this, req);
}

NDArray NDArray::grad() const {
  return autograd::grad(*this);
}

void NDArray::backward(const NDArray& head_grad, bool retain_graph) const {
  autograd::backward({*this}, head_grad.defined() ? std::vector<NDArray>{head_grad} : std::vector<NDArray>{},
                     retain_graph);
}

}  // namespace kiln
