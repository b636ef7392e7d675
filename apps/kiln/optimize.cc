// kiln optimize MODEL --steps fuse,prune=0.3,bf16,int8 [--calib DIR] [--val DIR [--labels FILE]]
// [--max-degradation P] [--report report.md] -o OUT.onnx: runs the steps in order and prints the
// stage table (stage, median ms at batch 1 and 8 or --bench-batches, speedup over the original, bytes of
// weights, accuracy change), with ONNX Runtime on the original model as a reference row.
//
// Steps: fuse (the graph passes at level all; the saved graph keeps the folded form and the
// Predictor fuses again at load), prune=R (structured channel pruning, include/kiln/prune.hpp; each
// pruned Conv keeps a multiple of --channel-multiple channels),
// bf16 / fp16 (mixed precision, include/kiln/mixed_precision.hpp), int8 (static quantization
// calibrated on --calib, include/kiln/quantize.hpp). Once bf16 or fp16 has run, later steps apply
// to the float32 model and the conversion is made again after them: int8 after bf16 quantizes the
// float32 graph and then converts what stays float (outside the QDQ borders) to bf16. Each stage
// runs in a Predictor at opt level all once fuse or int8 has run (basic before). With --val, each
// stage is checked against the original (include/kiln/accuracy.hpp); the last stage's
// degradation is a warning above --warn-degradation (2 points) and an error (exit 1, the model
// not written) above --max-degradation.
//
// Each stage is timed against the previous one in interleaved rounds (--rounds); a step that makes
// the model slower than the stage before it (in every round, by more than the noise margin) at a
// batch size gets a warning, and with --skip-slower a step that is slower at every batch size timed
// is dropped: the model keeps the previous stage's graph and the next step starts from it.
// --min-step-speedup asks more of a step than not being slower.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "cli.h"
#include "deploy/model_loading.h"
#include "frontends/onnx/export.h"
#include "graph/pass_manager.h"
#include "graph/passes/passes.h"
#include "kiln/accuracy.hpp"
#include "kiln/error.hpp"
#include "kiln/mixed_precision.hpp"
#include "kiln/prune.hpp"
#include "kiln/quantize.hpp"
#include "kiln/threading.hpp"
#include "progress.h"
#include "stage_table.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

struct OptimizeArgs {
  std::string model, steps, calib, val, labels, report, out;
  std::string calib_mode = "entropy";
  double max_degradation = -1, warn_degradation = 2.0;
  std::vector<std::string> fp32_ops, fp32_nodes;
  int iterations = 20, threads = 0, rounds = 5;
  bool skip_slower = false;
  double min_step_speedup = 1.0;
  int64_t channel_multiple = kDefaultChannelMultiple;
  std::vector<int64_t> bench_batches = {1, 8};
  std::string ort_python;
  bool skip_onnxruntime = false;
};

struct Step {
  std::string name;  // fuse | prune | bf16 | fp16 | int8
  double ratio = 0.3;
  std::string label() const {
    if (name != "prune") return name;
    std::ostringstream out;
    out << "prune=" << ratio;
    return out.str();
  }
};

std::vector<Step> parse_steps(const std::string& text) {
  std::vector<Step> steps;
  std::istringstream parts(text);
  for (std::string part; std::getline(parts, part, ',');) {
    Step step;
    const size_t eq = part.find('=');
    step.name = part.substr(0, eq);
    if (step.name == "prune" && eq != std::string::npos) {
      try {
        size_t used = 0;
        step.ratio = std::stod(part.substr(eq + 1), &used);
        if (used != part.size() - eq - 1) throw std::invalid_argument(part);
      } catch (const std::exception&) {
        throw UsageError("--steps: '" + part + "': expected prune=R with R a number in [0, 1)");
      }
      if (!(step.ratio >= 0 && step.ratio < 1))
        throw UsageError("--steps: '" + part + "': the ratio must be in [0, 1)");
    } else if (eq != std::string::npos ||
               (step.name != "fuse" && step.name != "prune" && step.name != "bf16" && step.name != "fp16" &&
                step.name != "int8")) {
      throw UsageError("--steps: unknown step '" + part + "' (fuse, prune=R, bf16, fp16, int8)");
    }
    steps.push_back(step);
  }
  if (steps.empty()) throw UsageError("--steps: no steps given");
  return steps;
}

bool has_type(const graph::Graph& g, DType dtype) {
  for (const graph::Value* v : g.initializers())
    if (v->constant.dtype() == dtype) return true;
  for (const graph::Node* n : g.nodes())
    for (const graph::Value* v : n->outputs)
      if (v->info && v->info->dtype == dtype) return true;
  return false;
}

std::string points(double value) {
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(2) << value;
  return out.str();
}

std::string percent(double share) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(2) << 100 * share << "%";
  return out.str();
}

class Optimizer {
 public:
  explicit Optimizer(const OptimizeArgs& args) : args_(args), steps_(parse_steps(args.steps)) {
    for (const Step& step : steps_)
      if (step.name == "int8" && args.calib.empty()) throw UsageError("the int8 step needs --calib DIR");
    if (!args.labels.empty() && args.val.empty()) throw UsageError("--labels needs --val DIR");
    if (!args.labels.empty()) labels_ = accuracy::read_labels(args.labels);
    original_ = deploy::load_graph(args.model);
    model_ = original_.clone();
  }

  void run() {
    const Predictor original = predictor(original_, "basic");
    table_.batches = args_.bench_batches;
    table_.rows.push_back({.stage = "original (fp32)",
                           .weight_bytes = weight_bytes(original_),
                           .accuracy = original_accuracy(original),
                           .vs_previous = "-"});
    // The stage each step is timed against: the last one kept.
    const Predictor* previous = &original;
    std::string previous_stage = "the original";
    std::optional<Predictor> kept;
    for (const Step& step : steps_) {
      ModelState before = state();
      apply(step);
      Predictor stage = predictor(model_, run_at_level_all_ ? "all" : "basic");
      const std::vector<LatencyComparison> timing =
          compare_latencies(*previous, stage, args_.bench_batches, calls_per_round(), args_.rounds);
      if (table_.rows.size() == 1)
        for (const LatencyComparison& c : timing) table_.rows[0].ms.push_back(c.before_ms);
      StageRow row{.stage = "+ " + step.label(), .weight_bytes = weight_bytes(model_)};
      for (const LatencyComparison& c : timing) row.ms.push_back(c.after_ms);
      std::optional<accuracy::AccuracyReport> report;
      if (!args_.val.empty()) report = validate(original, stage, step.label());
      row.accuracy = report ? accuracy_text(*report) : "-";
      const bool skip = args_.skip_slower && short_at_every_batch(timing);
      row.vs_previous = vs_previous_text(timing, skip);
      warn_if_short(step, previous_stage, timing, skip);
      if (skip) {
        restore(std::move(before));
      } else {
        if (report) last_report_ = report;
        kept.emplace(std::move(stage));
        previous = &*kept;
        previous_stage = row.stage;
      }
      table_.rows.push_back(row);
    }
    if (!args_.skip_onnxruntime) add_onnxruntime_row(original);
    std::cout << "\n" << table_.to_text();
    if (!args_.report.empty()) write_report();
    if (last_report_) {
      std::cout << "accuracy: " << last_report_->summary() << "\n";
      const std::string message =
          accuracy::check_degradation(*last_report_, args_.max_degradation, args_.warn_degradation);
      if (!message.empty()) std::cerr << "kiln: " << message << "\n";
    }
    const bool low = has_type(model_, DType::kBFloat16);
    // ONNX's Conv, pooling and friends take bf16 from opset 22 on.
    onnx::export_model(model_, args_.out, {.opset = low ? 22 : 17});
    std::cout << "wrote " << args_.out << " (ONNX opset " << (low ? 22 : 17) << ")\n";
  }

 private:
  Predictor predictor(const graph::Graph& g, const std::string& opt_level) const {
    return Predictor(g.clone(), {.threads = args_.threads, .opt_level = opt_level});
  }

  void apply(const Step& step) {
    std::cerr << "step " << step.label() << "\n";
    if (step.name == "bf16" || step.name == "fp16") {
      if (!low_) before_low_ = model_.clone();
      low_ = step.name;
      model_ = convert_low();
      return;
    }
    graph::Graph& target = low_ ? before_low_ : model_;
    if (step.name == "fuse") {
      // Fused ops are Kiln's own: the saved graph keeps what the passes folded and removed, in
      // ONNX ops, and the Predictor fuses it again at load.
      graph::PassManager::for_level(graph::OptLevel::kAll).run(target);
      graph::expand_fused_ops_pass().run(target);
      target.infer_shapes(/*allow_unknown=*/true);
      run_at_level_all_ = true;
    } else if (step.name == "prune") {
      pruning::PruneReport report;
      target = pruning::prune_channels(
          std::move(target), {.ratio = step.ratio, .channel_multiple = args_.channel_multiple}, &report);
      std::cerr << "  parameters " << report.params_before << " -> " << report.params_after << ", FLOPs "
                << report.flops_before << " -> " << report.flops_after << "\n";
    } else if (step.name == "int8") {
      quantization::CalibrationBatches batches = quantization::npy_folder_batches(args_.calib);
      auto bar = std::make_shared<ProgressBar>("  calibration", count_batches(args_.calib));
      quantization::CalibrationResult result;
      // A model of fixed batch size takes each calibration batch in slices of that size.
      const Predictor sizes = predictor(target, "none");
      target = quantization::quantize_model(
          std::move(target), accuracy::model_sized(sizes, with_progress(std::move(batches), bar)),
          {.calib_mode = args_.calib_mode}, &result);
      bar.reset();
      std::cerr << "  " << result.thresholds.size() << " activations quantized (" << args_.calib_mode << ", "
                << result.batches << " batches)\n";
      run_at_level_all_ = true;  // the QDQ pairs become int8 kernels at opt level all
    }
    if (low_) model_ = convert_low();
  }

  // --iters split among the rounds, at least one call each.
  int calls_per_round() const { return (args_.iterations + args_.rounds - 1) / args_.rounds; }

  // What a step changes, so that a step dropped by --skip-slower can be undone.
  struct ModelState {
    graph::Graph model, before_low;
    std::optional<std::string> low;
    bool run_at_level_all;
  };
  ModelState state() const { return {model_.clone(), before_low_.clone(), low_, run_at_level_all_}; }
  void restore(ModelState saved) {
    model_ = std::move(saved.model);
    before_low_ = std::move(saved.before_low);
    low_ = std::move(saved.low);
    run_at_level_all_ = saved.run_at_level_all;
  }

  // Whether a stage falls short of --min-step-speedup at every batch size that was timed.
  bool short_at_every_batch(const std::vector<LatencyComparison>& timing) const {
    bool measured = false;
    for (const LatencyComparison& c : timing) {
      if (c.speedups.empty()) continue;
      if (!c.short_of(args_.min_step_speedup)) return false;
      measured = true;
    }
    return measured;
  }

  // The stage's speedup over the previous one per batch size (the rounds' range), marked when short.
  std::string vs_previous_text(const std::vector<LatencyComparison>& timing, bool skipped) const {
    std::string text;
    bool short_somewhere = false;
    for (const LatencyComparison& c : timing) {
      text += (text.empty() ? "" : ", ") + c.speedup_text();
      short_somewhere |= c.short_of(args_.min_step_speedup);
    }
    if (skipped) return text + " (skipped)";
    return short_somewhere ? text + " (" + short_word() + ")" : text;
  }

  std::string short_word() const {
    if (args_.min_step_speedup == 1.0) return "slower";
    std::ostringstream out;
    out << "under " << args_.min_step_speedup << "x";
    return out.str();
  }

  // A warning (stderr and under the table) naming the batch sizes where the step fell short.
  void warn_if_short(const Step& step, const std::string& previous_stage,
                     const std::vector<LatencyComparison>& timing, bool skipped) {
    std::string where;
    for (size_t i = 0; i < timing.size(); ++i) {
      if (!timing[i].short_of(args_.min_step_speedup)) continue;
      where += (where.empty() ? "" : ", ") + std::string("batch ") + std::to_string(args_.bench_batches[i]) +
               " (" + timing[i].speedup_text() + ")";
    }
    if (where.empty()) return;
    std::ostringstream out;
    out << "warning: step " << step.label();
    if (args_.min_step_speedup == 1.0)
      out << " made the model slower than " << previous_stage;
    else
      out << " sped the model up less than " << args_.min_step_speedup << "x over " << previous_stage;
    out << " at " << where << " in " << args_.rounds << " interleaved rounds; "
        << (skipped ? "skipped (--skip-slower): the model keeps the previous stage's graph"
                    : "--skip-slower drops such a step");
    std::cerr << "kiln: " << out.str() << "\n";
    table_.warnings.push_back(out.str());
  }

  graph::Graph convert_low() const {
    mixed_precision::MixedPrecisionReport report;
    graph::Graph converted =
        mixed_precision::convert_float(before_low_.clone(),
                                       {.low_type = mixed_precision::parse_low_type(*low_),
                                        .fp32_op_types = args_.fp32_ops,
                                        .fp32_node_names = args_.fp32_nodes},
                                       &report);
    std::cerr << "  " << *low_ << ": " << report.low_nodes << " nodes in " << *low_ << ", "
              << report.fp32_nodes.size() << " kept in fp32, " << report.casts << " casts\n";
    constexpr size_t kListed = 16;
    if (!report.fp32_nodes.empty() && report.fp32_nodes.size() <= kListed) {
      std::cerr << "  in fp32:";
      for (const std::string& label : report.fp32_nodes) std::cerr << " " << label;
      std::cerr << "\n";
    }
    return converted;
  }

  std::string original_accuracy(const Predictor& original) {
    if (args_.val.empty() || labels_.empty()) return args_.val.empty() ? "-" : "reference";
    const accuracy::AccuracyReport self = validate(original, original, "original");
    if (self.reference_map50 >= 0) return "mAP@0.5 " + percent(self.reference_map50);
    return percent(self.reference_accuracy);
  }

  accuracy::AccuracyReport validate(const Predictor& original, const Predictor& stage,
                                    const std::string& label) {
    ProgressBar bar("  validation (" + label + ")", count_batches(args_.val));
    return accuracy::compare(original, stage, quantization::npy_folder_batches(args_.val), labels_,
                             [&](int64_t done) { bar.update(done); });
  }

  static std::string accuracy_text(const accuracy::AccuracyReport& r) {
    if (r.candidate_accuracy >= 0)
      return percent(r.candidate_accuracy) + " (" +
             points(100 * (r.candidate_accuracy - r.reference_accuracy)) + ")";
    if (r.candidate_map50 >= 0)
      return "mAP@0.5 " + percent(r.candidate_map50) + " (" +
             points(100 * (r.candidate_map50 - r.reference_map50)) + ")";
    if (r.top1_agreement >= 0) return "top-1 agreement " + percent(r.top1_agreement);
    if (r.map50 >= 0) return "mAP@0.5 vs original " + percent(r.map50);
    std::ostringstream out;
    out << "max |diff| " << std::setprecision(3) << (r.errors.empty() ? 0.0 : r.errors[0].max_abs);
    return out.str();
  }

  void add_onnxruntime_row(const Predictor& original) {
    const fs::path work = fs::temp_directory_path() / ("kiln_optimize_" + std::to_string(::getpid()));
    fs::create_directories(work);
    std::string onnx_path = args_.model;
    if (fs::path(onnx_path).extension() != ".onnx") {
      onnx_path = (work / "original.onnx").string();
      onnx::export_model(original_, onnx_path);
    }
    // The Python of the peer benchmarks (scripts/setup-models.sh), else the test one (scripts/setup.sh):
    // both have onnxruntime.
    const std::string source = KILN_SOURCE_DIR;
    const char* env = std::getenv("KILN_ORT_PYTHON");
    std::string python = !args_.ort_python.empty() ? args_.ort_python : env ? env : "";
    if (python.empty())
      python = fs::exists(source + "/.venv-models/bin/python") ? source + "/.venv-models/bin/python"
                                                               : source + "/.venv/bin/python";
    std::cerr << "ONNX Runtime on the original model\n";
    table_.onnxruntime = onnxruntime_row(original, args_.bench_batches, onnx_path, python,
                                         source + "/bench/runtimes/runner.py", work.string(),
                                         args_.iterations, table_.onnxruntime_note);
    fs::remove_all(work);
  }

  void write_report() const {
    std::ofstream out(args_.report);
    if (!out) throw Error(ErrorCode::kIo, "--report: cannot write '" + args_.report + "'");
    out << "# kiln optimize " << fs::path(args_.model).filename().string() << "\n\nSteps: " << args_.steps
        << ". Median latency per batch size, " << num_threads()
        << " threads, each stage timed against the previous one in " << args_.rounds
        << " interleaved rounds of " << calls_per_round()
        << " calls; speedup over the original and (per round, per batch size) over the previous "
           "stage; weights: bytes of initializers";
    if (!args_.val.empty())
      out << "; accuracy on " << args_.val
          << (labels_.empty() ? " against the original's outputs" : " with labels");
    out << ".\n\n" << table_.to_markdown();
    if (last_report_) out << "\nLast stage against the original: " << last_report_->summary() << ".\n";
    std::cout << "wrote " << args_.report << "\n";
  }

  const OptimizeArgs& args_;
  std::vector<Step> steps_;
  accuracy::Labels labels_;
  graph::Graph original_, model_, before_low_;
  std::optional<std::string> low_;  // "bf16" | "fp16" once converted
  bool run_at_level_all_ = false;   // once fuse or int8 has run
  StageTable table_;
  std::optional<accuracy::AccuracyReport> last_report_;
};

}  // namespace

void add_optimize_command(CLI::App& app) {
  auto args = std::make_shared<OptimizeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "optimize", "fuse, prune, bf16/fp16 and int8 in order, with the stage table and the accuracy gate");
  cmd->add_option("model", args->model, "NAME-symbol.json, a prefix NAME, or a .onnx file")->required();
  cmd->add_option("--steps", args->steps, "comma-separated: fuse, prune=R, bf16, fp16, int8 (in order)")
      ->required();
  cmd->add_option("--channel-multiple", args->channel_multiple, "prune: Convs keep a multiple of N channels")
      ->capture_default_str()
      ->check(whole_number(1));
  cmd->add_option("--calib", args->calib, "folder of .npy calibration batches (int8)");
  cmd->add_option("--calib-mode", args->calib_mode, "int8 calibration: entropy, naive or percentile")
      ->capture_default_str()
      ->check(CLI::IsMember({"entropy", "naive", "percentile"}));
  cmd->add_option("--val", args->val, "folder of .npy validation batches (as --calib)");
  cmd->add_option(
      "--labels", args->labels,
      "labels of the validation samples: classes (.npy of ints, or text) or boxes (.npy (K, 6): image, "
      "label, x1, y1, x2, y2)");
  cmd->add_option("--max-degradation", args->max_degradation,
                  "fail when accuracy drops more than P points (default: warn only)")
      ->check(real_number(0));
  cmd->add_option("--warn-degradation", args->warn_degradation, "warn when accuracy drops more than P points")
      ->capture_default_str()
      ->check(real_number(0));
  cmd->add_option("--fp32-op", args->fp32_ops, "bf16/fp16: keep this op type in fp32 too (repeatable)");
  cmd->add_option("--fp32-node", args->fp32_nodes, "bf16/fp16: keep this node in fp32 (repeatable)");
  cmd->add_option("--iters", args->iterations,
                  "timed calls per stage and batch size (at least one per round)")
      ->capture_default_str()
      ->check(whole_number(1, std::numeric_limits<int>::max()));
  cmd->add_option("--rounds", args->rounds,
                  "interleaved rounds timing each stage against the previous one (--iters calls split "
                  "among them)")
      ->capture_default_str()
      ->check(whole_number(1, std::numeric_limits<int>::max()));
  cmd->add_flag("--skip-slower", args->skip_slower,
                "drop a step that makes the model slower than the previous stage at every batch size "
                "timed (the previous stage's graph is kept)");
  cmd->add_option("--min-step-speedup", args->min_step_speedup,
                  "the speedup over the previous stage below which a step counts as slower")
      ->capture_default_str()
      ->check(real_number(0, std::numeric_limits<double>::max(), true));
  cmd->add_option("--bench-batches", args->bench_batches, "batch sizes timed per stage")
      ->capture_default_str()
      ->delimiter(',')
      ->check(whole_number(1));
  cmd->add_option("--threads", args->threads, "threads each op may use (default: all cores)")
      ->check(whole_number(0, kMaxThreads));
  cmd->add_option("--report", args->report, "also write the stage table as Markdown to this file");
  cmd->add_option("--ort-python", args->ort_python,
                  "Python with onnxruntime for the reference row (default: $KILN_ORT_PYTHON, else "
                  ".venv-models, else .venv)");
  cmd->add_flag("--no-onnxruntime", args->skip_onnxruntime, "leave out the ONNX Runtime row");
  cmd->add_option("-o,--output", args->out, "the optimized model, OUT.onnx")->required();
  cmd->callback([args] {
    prepare_output(args->out, "-o", args->model);
    if (!args->report.empty()) prepare_output(args->report, "--report", args->model);
    if (args->threads > 0) set_num_threads(args->threads);
    Optimizer(*args).run();
  });
}

}  // namespace kiln::cli
