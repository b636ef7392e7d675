// PlanProgram's Executor pool, and make_program: a plan when every shape is known, else stages.
#include "runtime/program.h"

#include "runtime/graph_checks.h"
#include "runtime/staged_program.h"

namespace kiln::runtime {

std::vector<Tensor> PlanProgram::run(const std::vector<Tensor>& inputs) const {
  std::unique_ptr<Executor> executor;
  {
    std::lock_guard lock(pool_mutex_);
    if (!idle_.empty()) {
      executor = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (!executor) executor = std::make_unique<Executor>(plan_);  // its arena is allocated outside the lock

  // The Executor goes back to the pool however the run ends: a failed run leaves it usable.
  struct GiveBack {
    const PlanProgram& program;
    std::unique_ptr<Executor>& executor;
    ~GiveBack() {
      std::lock_guard lock(program.pool_mutex_);
      program.idle_.push_back(std::move(executor));
    }
  } give_back{*this, executor};
  return executor->run(inputs);
}

std::shared_ptr<const Program> make_program(graph::Graph bound, const ProgramOptions& options,
                                            bool sized_by_values, const PlanCompiler& compile_plan) {
  bool all_known = true;
  for (const graph::Value* v : bound.inputs()) all_known &= fits_in_plan(*v);
  for (const graph::Node* n : bound.nodes()) {
    all_known &= fits_in_plan(*n);  // control flow and sequences are staged: they run per call
    for (const graph::Value* out : n->outputs) {
      if (!out->info || !out->info->shape.is_known()) {
        all_known = false;
      } else if (sized_by_values) {
        check_dynamic_size(graph_label(bound) + ": " + n->label(), "output '" + out->name + "'",
                           out->info->shape, options.max_dynamic_elements);
      }
    }
  }
  if (!all_known) return std::make_shared<StagedProgram>(std::move(bound), options);
  std::shared_ptr<const Plan> plan =
      compile_plan ? compile_plan(std::move(bound)) : compile(bound, options.compile);
  return std::make_shared<PlanProgram>(std::move(plan));
}

}  // namespace kiln::runtime
