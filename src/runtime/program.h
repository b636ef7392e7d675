// Program: what the Predictor caches per input signature and runs. Most models compile into one
// Plan (PlanProgram: the plan and a pool of Executors). A model some of whose shapes are decided by
// values only computed while it runs (NonZero, NonMaxSuppression, a Reshape whose shape is
// computed from the data) compiles into a StagedProgram (staged_program.h): a plan up to those
// nodes, the nodes themselves, and the rest planned per size it meets.
//
// A Program is immutable once made and thread-safe: any number of callers may run it at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "graph/pass_manager.h"
#include "runtime/executor.h"
#include "runtime/plan.h"

namespace kiln::runtime {

class Program {
 public:
  virtual ~Program() = default;
  // One tensor per graph input, in the graph's order; returns one per graph output.
  virtual std::vector<Tensor> run(const std::vector<Tensor>& inputs) const = 0;
};

// A Plan with a pool of Executors: a run borrows one (or makes one, outside the lock) and gives it
// back however the run ends, so a failed run leaves the pool usable. The pool mutex is held only
// to borrow and to give back.
class PlanProgram final : public Program {
 public:
  explicit PlanProgram(std::shared_ptr<const Plan> plan) : plan_(std::move(plan)) {}
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const override;
  const Plan& plan() const { return *plan_; }

 private:
  std::shared_ptr<const Plan> plan_;
  mutable std::mutex pool_mutex_;
  mutable std::vector<std::unique_ptr<Executor>> idle_;  // Executors not running now
};

struct ProgramOptions {
  CompileOptions compile;
  graph::OptLevel level = graph::OptLevel::kNone;  // passes run again on each bound graph
  size_t max_cached_plans = 16;                    // per stage: the sizes met, planned and kept
  // The most elements a value whose size is decided at run time may have (a data-dependent output,
  // a shape made of given values); larger is a kiln::Error naming the node.
  int64_t max_dynamic_elements = int64_t{1} << 28;
  // The most iterations a Loop runs or a Scan walks; more is a kiln::Error naming the node.
  int64_t max_loop_iterations = int64_t{1} << 20;
};

// Compiles a plan from a graph whose every shape is known (the Predictor's, which lets go of the
// weights its kernels pack); empty: runtime::compile.
using PlanCompiler = std::function<std::shared_ptr<const Plan>(graph::Graph)>;

// Throws kiln::Error(kOutOfRange) when `shape` has more than `max_elements` elements (or more
// than int64 holds): "<where>: <what> would have shape (...) (N elements), over
// max_dynamic_elements = M".
void check_dynamic_size(const std::string& where, const std::string& what, const Shape& shape,
                        int64_t max_elements);

// A Program for `bound` (see bind_inputs): a PlanProgram when every value's shape is known, else a
// StagedProgram. `sized_by_values`: some shapes were decided by values given at run time, so every
// value is checked against options.max_dynamic_elements.
std::shared_ptr<const Program> make_program(graph::Graph bound, const ProgramOptions& options,
                                            bool sized_by_values, const PlanCompiler& compile_plan = {});

}  // namespace kiln::runtime
