// The hot path: validate, bind, run the steps. Nothing here allocates except the graph
// outputs returned to the caller (and a copy of an input that is not contiguous).
#include "runtime/executor.h"

#include <optional>
#include <string_view>

#include "kiln/profiler.hpp"

namespace kiln::runtime {

namespace {

// Refuses a second concurrent run on one Executor, and clears the flag however run() ends.
class RunGuard {
 public:
  explicit RunGuard(std::atomic<bool>& running, const Plan& plan) : running_(running) {
    KILN_CHECK(!running_.exchange(true, std::memory_order_acquire), ErrorCode::kInvalidArgument, plan.label(),
               ": Executor::run called while another run is in progress; use one Executor per thread");
  }
  ~RunGuard() { running_.store(false, std::memory_order_release); }
  RunGuard(const RunGuard&) = delete;
  RunGuard& operator=(const RunGuard&) = delete;

 private:
  std::atomic<bool>& running_;
};

// The node name inside a step label ("Conv 'conv1'" -> "conv1"), for the profiler.
std::string_view node_name(std::string_view label) {
  const size_t first = label.find('\''), last = label.rfind('\'');
  return first < last ? label.substr(first + 1, last - first - 1) : label;
}

std::string describe(DType dtype, const Shape& shape) {
  return std::string(dtype_name(dtype)) + " " + shape.to_string();
}

}  // namespace

Executor::Executor(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {
  KILN_CHECK(plan_ != nullptr, ErrorCode::kInvalidArgument, "Executor: no plan");
  const Plan& p = *plan_;
  arena_ = Storage::allocate(p.arena_bytes, cpu());
  std::vector<Tensor> fixed(p.values.size());  // what every step sees of constants and intermediates
  for (size_t id = 0; id < p.values.size(); ++id) {
    const PlanValue& v = p.values[id];
    if (v.kind == PlanValue::Kind::kConstant) fixed[id] = p.constants[static_cast<size_t>(v.index)];
    if (v.kind == PlanValue::Kind::kArena)
      fixed[id] = Tensor(arena_, v.info.shape, v.info.dtype, {},
                         static_cast<int64_t>(v.offset / dtype_size(v.info.dtype)));
  }
  // Graph inputs and outputs are bound per run: remember where each appears.
  const auto per_run = [&](int id) {
    const PlanValue::Kind kind = p.values[static_cast<size_t>(id)].kind;
    return kind == PlanValue::Kind::kInput || kind == PlanValue::Kind::kOutput;
  };
  slots_.resize(p.values.size());
  states_.resize(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s)
    if (p.steps[s].make_state) states_[s] = p.steps[s].make_state();
  step_inputs_.resize(p.steps.size());
  step_outputs_.resize(p.steps.size());
  for (size_t s = 0; s < p.steps.size(); ++s) {
    const PlanStep& step = p.steps[s];
    for (size_t i = 0; i < step.inputs.size(); ++i) {
      const int id = step.inputs[i];
      step_inputs_[s].push_back(id >= 0 ? fixed[static_cast<size_t>(id)] : Tensor());
      if (id >= 0 && per_run(id))
        slots_[static_cast<size_t>(id)].push_back({static_cast<int>(s), static_cast<int>(i), false});
    }
    for (size_t i = 0; i < step.outputs.size(); ++i) {
      const int id = step.outputs[i];
      step_outputs_[s].push_back(fixed[static_cast<size_t>(id)]);
      if (per_run(id))
        slots_[static_cast<size_t>(id)].push_back({static_cast<int>(s), static_cast<int>(i), true});
    }
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    size_t first = 0;
    while (p.outputs[first] != p.outputs[i]) ++first;
    first_position_.push_back(static_cast<int>(first));
  }
}

void Executor::check_inputs(const std::vector<Tensor>& inputs) const {
  const Plan& p = *plan_;
  if (inputs.size() != p.inputs.size()) {
    std::string names;
    for (int id : p.inputs)
      names += (names.empty() ? "'" : ", '") + p.values[static_cast<size_t>(id)].name + "'";
    std::string which;
    if (inputs.size() < p.inputs.size()) {
      which = "input '" + p.values[static_cast<size_t>(p.inputs[inputs.size()])].name + "' is missing";
    } else {
      which = std::to_string(inputs.size() - p.inputs.size()) + " extra tensor(s)";
    }
    raise(ErrorCode::kInvalidArgument, p.label(), ": expected ", p.inputs.size(), " input(s) (", names,
          "), got ", inputs.size(), ": ", which);
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    const PlanValue& v = p.values[static_cast<size_t>(p.inputs[k])];
    const Tensor& t = inputs[k];
    KILN_CHECK(t.defined(), ErrorCode::kInvalidArgument, p.label(), ": input '", v.name, "': expected ",
               describe(v.info.dtype, v.info.shape), ", got an undefined tensor");
    KILN_CHECK(t.dtype() == v.info.dtype, ErrorCode::kTypeMismatch, p.label(), ": input '", v.name,
               "': expected ", describe(v.info.dtype, v.info.shape), ", got ",
               describe(t.dtype(), t.shape()));
    KILN_CHECK(t.shape() == v.info.shape, ErrorCode::kShapeMismatch, p.label(), ": input '", v.name,
               "': expected ", describe(v.info.dtype, v.info.shape), ", got ", describe(t.dtype(), t.shape()),
               " (compile again for other shapes)");
    KILN_CHECK(t.device() == cpu(), ErrorCode::kInvalidArgument, p.label(), ": input '", v.name,
               "': expected a tensor on ", cpu(), ", got one on ", t.device());
  }
}

void Executor::bind(int value, const Tensor& tensor) {
  for (const Slot& slot : slots_[static_cast<size_t>(value)]) {
    auto& list = slot.is_output ? step_outputs_ : step_inputs_;
    list[static_cast<size_t>(slot.step)][static_cast<size_t>(slot.index)] = tensor;
  }
}

// Drops the references to the caller's tensors, so that a finished run holds on to nothing.
void Executor::unbind_all() {
  static const Tensor kNone;
  for (int id : plan_->inputs) bind(id, kNone);
  for (int id : plan_->outputs) bind(id, kNone);
}

std::vector<Tensor> Executor::run(const std::vector<Tensor>& inputs) {
  const Plan& p = *plan_;
  RunGuard guard(running_, p);
  check_inputs(inputs);

  struct Unbind {
    Executor& self;
    ~Unbind() { self.unbind_all(); }
  } unbind{*this};
  for (size_t k = 0; k < inputs.size(); ++k)
    bind(p.inputs[k], inputs[k].is_contiguous() ? inputs[k] : inputs[k].contiguous());

  std::vector<Tensor> outputs;
  outputs.reserve(p.outputs.size());
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const int id = p.outputs[i];
    const PlanValue& v = p.values[static_cast<size_t>(id)];
    if (first_position_[i] != static_cast<int>(i)) {
      const Tensor same = outputs[static_cast<size_t>(first_position_[i])];  // a repeated output
      outputs.push_back(same);
    } else if (v.kind == PlanValue::Kind::kOutput) {
      outputs.push_back(Tensor::empty(v.info.shape, v.info.dtype));
      bind(id, outputs.back());
    } else if (v.kind == PlanValue::Kind::kInput) {
      outputs.push_back(inputs[static_cast<size_t>(v.index)].clone());
    } else {
      outputs.push_back(p.constants[static_cast<size_t>(v.index)].clone());
    }
  }

  for (size_t s = 0; s < p.steps.size(); ++s) {
    const PlanStep& step = p.steps[s];
    ops::KernelContext ctx{step.attrs, step_inputs_[s], step_outputs_[s], states_[s].get()};
    std::optional<profiler::OpScope> timed;  // one Duration event per step while profiling
    if (profiler::is_running()) timed.emplace(node_name(step.label), step.schema->name());
    try {
      step.kernel(ctx);
    } catch (const Error& e) {
      throw Error(e.code(), p.label() + ": " + step.label + ": " + e.what());
    }
  }
  return outputs;
}

}  // namespace kiln::runtime
