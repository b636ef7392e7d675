// Executor: runs one Plan, again and again. It owns the workspace: the arena (allocated once,
// when the Executor is made) and a Tensor view for every intermediate, made once too. A run
// binds the caller's inputs, allocates the graph outputs (the only allocations of a run) and
// calls each step's kernel with the preallocated views.
//
// Threading: a Plan is shared by any number of Executors on any threads; an Executor itself
// runs one call at a time (it is a workspace, not a service). Give each thread its own
// Executor; a concurrent call on one Executor is detected and refused with a kiln::Error.
#pragma once

#include <atomic>
#include <memory>
#include <vector>

#include "kiln/storage.hpp"
#include "kiln/tensor.hpp"
#include "runtime/plan.h"

namespace kiln::runtime {

class Executor {
 public:
  explicit Executor(std::shared_ptr<const Plan> plan);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // `inputs` holds one tensor per graph input, in Plan::inputs order, with exactly the dtype
  // and shape the plan was compiled for (non-contiguous inputs are copied first). Returns one
  // tensor per graph output, owned by the caller. A bad input throws a kiln::Error that names
  // it and gives the expected and actual dtype and shape; a failing kernel throws one naming
  // its node. Either way the Executor stays usable.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs);

  const Plan& plan() const { return *plan_; }
  const std::shared_ptr<const Plan>& shared_plan() const { return plan_; }
  size_t workspace_bytes() const { return plan_->arena_bytes; }

 private:
  // Where a value bound per run (a graph input or a graph output) appears among the steps.
  struct Slot {
    int step;
    int index;
    bool is_output;
  };

  void check_inputs(const std::vector<Tensor>& inputs) const;
  void bind(int value, const Tensor& tensor);
  void unbind_all();

  std::shared_ptr<const Plan> plan_;
  std::shared_ptr<Storage> arena_;
  std::vector<std::vector<Tensor>> step_inputs_;           // per step, what its kernel reads
  std::vector<std::vector<Tensor>> step_outputs_;          // per step, what its kernel writes
  std::vector<std::unique_ptr<ops::KernelState>> states_;  // per step, when its kernel keeps one
  std::vector<std::vector<Slot>> slots_;                   // per value id
  std::vector<int> first_position_;                        // per graph output: its value's first position
  std::atomic<bool> running_{false};
};

}  // namespace kiln::runtime
