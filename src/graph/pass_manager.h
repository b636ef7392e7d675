// PassManager: runs a list of passes over a Graph, establishing what each pass needs (shape
// inference when it needs "shapes" and the graph changed since), optionally verifying the graph
// after every pass, iterating to a fixed point, and recording what each run did.
//
// Levels, as other engines name them:
//   none   no passes
//   basic  identity elimination, constant folding, dead-node elimination (one sweep); then QDQ
//          pairs into int8 ops (FusedQLinearConv) once
//   all    basic + common-subexpression elimination + Reshape shapes that copy input dims +
//          Conv/BatchNormalization folding + Gelu recognition, swept
//          until no pass changes the graph; then int8 fusion as
//          in basic and post-op fusion (FusedConv, FusedGemm, FusedMatMul) once
#pragma once

#include <set>
#include <string>
#include <vector>

#include "graph/pass.h"

namespace kiln::graph {

enum class OptLevel { kNone, kBasic, kAll };

// "none" | "basic" | "all"; anything else is a kiln::Error(kInvalidArgument).
OptLevel parse_opt_level(const std::string& text);
const char* opt_level_name(OptLevel level);

struct PassManagerOptions {
#ifdef NDEBUG
  bool verify = false;  // Graph::verify() after every pass that changed the graph
#else
  bool verify = true;
#endif
  int max_sweeps = 1;  // sweeps over the pass list; later sweeps run only while something changes
};

// One run of one pass.
struct PassStats {
  std::string pass;
  int sweep = 0;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  bool changed = false;
  double milliseconds = 0;  // the pass itself, without inference or verification
};

class PassManager {
 public:
  explicit PassManager(PassManagerOptions options = {}) : options_(options) {}

  // The passes of a level; `options.max_sweeps` is set by the level.
  static PassManager for_level(OptLevel level, PassManagerOptions options = {});

  PassManager& add(Pass pass);
  // A pass run once, after the sweeps over the others have reached their fixed point (fusion:
  // lowering that would hide patterns from the other passes).
  PassManager& add_final(Pass pass);
  const std::vector<Pass>& passes() const { return passes_; }
  const std::vector<Pass>& final_passes() const { return final_passes_; }
  const PassManagerOptions& options() const { return options_; }

  // Runs the passes; returns whether the graph changed. Errors from a pass, or from verifying
  // the graph it left, name the pass.
  bool run(Graph& graph);

  // Every pass run of the last run(), in order.
  const std::vector<PassStats>& stats() const { return stats_; }
  int sweeps_run() const { return sweeps_run_; }
  std::string stats_report() const;  // one line per pass run, for logs

 private:
  bool run_one(const Pass& pass, int sweep, Graph& graph, std::set<std::string>& holds);

  PassManagerOptions options_;
  std::vector<Pass> passes_;
  std::vector<Pass> final_passes_;
  std::vector<PassStats> stats_;
  int sweeps_run_ = 0;
};

}  // namespace kiln::graph
