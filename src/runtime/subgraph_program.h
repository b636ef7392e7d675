// SubgraphProgram: a subgraph of a control-flow node (If's branches, a Loop's or Scan's body),
// run on whatever its inputs are at each call. A loop-carried value may change its shape from one
// iteration to the next and a branch sees the shapes of the model's inputs, so the subgraph is
// bound, optimized and compiled per input signature (shapes and element types), the programs kept
// in a bounded cache like the Predictor's: a Loop whose shapes repeat plans its body once.
//
// Values that decide shapes inside the subgraph (an iteration number used as a Slice bound) are
// not keyed on: a program is staged around them (StagedProgram), so a loop does not compile once
// per iteration.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "runtime/program_cache.h"

namespace kiln::runtime {

class SubgraphProgram {
 public:
  // `where` names the subgraph in errors ("graph 'm': Loop 'decode' subgraph 'body'").
  SubgraphProgram(const graph::Graph& subgraph, const ProgramOptions& options, std::string where);

  // One tensor per subgraph input, in its order; an element type other than the declared one is
  // kiln::Error(kTypeMismatch) naming the input.
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const;

  size_t num_cached_programs() const { return programs_.size(); }

 private:
  graph::Graph graph_;  // the subgraph, its inputs' declared shapes dropped: each call binds its own
  std::vector<std::optional<ops::TensorInfo>> declared_;  // per input, as the subgraph declares it
  ProgramOptions options_;
  std::string where_;
  mutable ProgramCache programs_;
};

}  // namespace kiln::runtime
