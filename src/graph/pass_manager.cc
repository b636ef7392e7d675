// The pass manager: levels, property tracking ("shapes" is re-established by inference), per-pass
// verification and statistics, and sweeping to a fixed point.
#include "graph/pass_manager.h"

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <set>
#include <sstream>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

// Enough for the rewrites of real models to settle; a pass list that still changes the graph
// after this many sweeps is oscillating, and stopping keeps compile time bounded.
constexpr int kMaxSweepsForAll = 10;

// Runs fn, prefixing any kiln::Error with the pass's name (and `what` it was doing).
template <class F>
decltype(auto) in_pass(const Pass& pass, const std::string& what, F&& fn) {
  try {
    return fn();
  } catch (const Error& e) {
    throw Error(e.code(), "pass '" + pass.name + "'" + what + ": " + e.what());
  }
}

}  // namespace

OptLevel parse_opt_level(const std::string& text) {
  if (text == "none") return OptLevel::kNone;
  if (text == "basic") return OptLevel::kBasic;
  if (text == "all") return OptLevel::kAll;
  raise(ErrorCode::kInvalidArgument, "unknown optimization level '", text, "': expected none, basic or all");
}

const char* opt_level_name(OptLevel level) {
  switch (level) {
    case OptLevel::kNone:
      return "none";
    case OptLevel::kBasic:
      return "basic";
    case OptLevel::kAll:
      return "all";
  }
  raise(ErrorCode::kInternal, "opt_level_name: invalid level ", static_cast<int>(level));
}

PassManager PassManager::for_level(OptLevel level, PassManagerOptions options) {
  options.max_sweeps = level == OptLevel::kAll ? kMaxSweepsForAll : 1;
  PassManager pm(options);
  if (level == OptLevel::kNone) return pm;
  // Folding first: it turns shape arithmetic into constants, which reveals no-op Reshapes to
  // identity elimination; dead-node elimination last sweeps up what both left behind.
  pm.add(constant_folding_pass()).add(inline_constant_if_pass()).add(identity_elimination_pass());
  if (level == OptLevel::kAll)
    pm.add(common_subexpression_elimination_pass())
        .add(reshape_copied_dims_pass())
        .add(fold_conv_batchnorm_pass())
        .add(fuse_gelu_pass());
  // Fusion only once the graph is at its fixed point: a fused op hides its parts from the
  // other passes (two Convs that CSE would merge once their BatchNormalizations fold).
  // QDQ pairs into int8 ops first: post-op fusion would otherwise take the Relu after a Conv that
  // a quantized convolution needs.
  pm.add_final(fuse_quantized_ops_pass());
  if (level == OptLevel::kAll) pm.add_final(fuse_post_ops_pass()).add_final(fuse_matmul_scale_add_pass());
  pm.add(dead_node_elimination_pass());
  return pm;
}

PassManager& PassManager::add(Pass pass) {
  KILN_CHECK(static_cast<bool>(pass.run), ErrorCode::kInvalidArgument, "pass '", pass.name,
             "' has no run function");
  passes_.push_back(std::move(pass));
  return *this;
}

PassManager& PassManager::add_final(Pass pass) {
  KILN_CHECK(static_cast<bool>(pass.run), ErrorCode::kInvalidArgument, "pass '", pass.name,
             "' has no run function");
  final_passes_.push_back(std::move(pass));
  return *this;
}

bool PassManager::run_one(const Pass& pass, int sweep, Graph& graph, std::set<std::string>& holds) {
  for (const std::string& need : pass.needs) {
    if (holds.count(need)) continue;
    KILN_CHECK(need == kShapesProperty, ErrorCode::kInvalidArgument, "pass '", pass.name, "' needs '", need,
               "', which no earlier pass provides");
    in_pass(pass, " (inferring the shapes it needs)", [&] { graph.infer_shapes(/*allow_unknown=*/true); });
    holds.insert(need);
  }
  PassStats st{pass.name, sweep, graph.num_nodes()};
  const auto start = std::chrono::steady_clock::now();
  st.changed = in_pass(pass, "", [&] { return pass.run(graph); });
  st.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  st.nodes_after = graph.num_nodes();
  if (st.changed) holds.clear();
  holds.insert(pass.provides.begin(), pass.provides.end());
  if (options_.verify) {
    try {
      graph.verify();
    } catch (const Error& e) {
      raise(ErrorCode::kInternal, "pass '", pass.name, "' left an invalid graph: ", e.what());
    }
  }
  const bool changed = st.changed;
  stats_.push_back(std::move(st));
  return changed;
}

bool PassManager::run(Graph& graph) {
  stats_.clear();
  sweeps_run_ = 0;
  std::set<std::string> holds;  // properties known to hold for the graph as it is now
  bool any_change = false;
  for (int sweep = 0; sweep < std::max(1, options_.max_sweeps); ++sweep) {
    ++sweeps_run_;
    bool sweep_changed = false;
    for (const Pass& pass : passes_) sweep_changed |= run_one(pass, sweep, graph, holds);
    any_change |= sweep_changed;
    if (!sweep_changed) break;
  }
  for (const Pass& pass : final_passes_) any_change |= run_one(pass, sweeps_run_, graph, holds);
  return any_change;
}

std::string PassManager::stats_report() const {
  std::ostringstream os;
  for (const PassStats& st : stats_)
    os << "sweep " << st.sweep << "  " << std::left << std::setw(34) << st.pass << std::right << std::setw(6)
       << st.nodes_before << " -> " << std::setw(6) << st.nodes_after << " nodes  " << std::fixed
       << std::setprecision(3) << st.milliseconds << " ms" << (st.changed ? "" : "  (no change)") << '\n';
  return os.str();
}

}  // namespace kiln::graph
