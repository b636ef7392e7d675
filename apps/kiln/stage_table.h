// The stage table of `kiln optimize`: per stage, the median latency at batch 1 and 8, the
// speedup over the original and over the previous stage (timed interleaved with it), the bytes of
// weights and the accuracy change; ONNX Runtime on the original model as a reference row; warnings
// under it. Printed as text and written as Markdown.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kiln/predictor.hpp"

namespace kiln::cli {

struct StageRow {
  std::string stage;
  std::vector<double> ms;  // median ms per batch size of the table; < 0: not measured
  int64_t weight_bytes = -1;
  std::string accuracy;     // the accuracy column's text
  std::string vs_previous;  // the speedup over the previous stage, timed interleaved with it
};

struct StageTable {
  std::vector<int64_t> batches;  // the batch sizes timed
  std::vector<StageRow> rows;    // rows[0]: the original model
  StageRow onnxruntime;          // empty stage: not run
  std::string onnxruntime_note;
  std::vector<std::string> warnings;  // printed under the table ("warning: ...")

  std::string to_text() const;
  std::string to_markdown() const;
};

// The bytes of the graph's initializers.
int64_t weight_bytes(const graph::Graph& g);

// Two stages timed against each other at one batch size, in interleaved rounds (a round times the
// earlier stage, then the later one), so that load that comes and goes hits both alike.
struct LatencyComparison {
  double before_ms = -1, after_ms = -1;  // medians over all rounds' calls; -1: the batch does not fit
  std::vector<double> speedups;          // per round: the earlier stage's median / the later one's

  // A change within this share of the time is noise on a shared machine.
  static constexpr double kNoise = 0.05;
  // Whether the later stage falls short of `min_speedup` (1: "is slower") beyond noise: every
  // round's speedup is below min_speedup / (1 + kNoise). False when not measured.
  bool short_of(double min_speedup) const;
  // The rounds' speedups as text: "0.62x" or "0.55-0.71x".
  std::string speedup_text() const;
};

// `before` and `after` at each of `batches`: `rounds` rounds of `calls` timed calls each (after
// warm-up calls), interleaved.
std::vector<LatencyComparison> compare_latencies(const Predictor& before, const Predictor& after,
                                                 const std::vector<int64_t>& batches, int calls, int rounds);

// ONNX Runtime on `onnx_path` through bench/runtimes/runner.py with `python` (threads as Kiln's):
// the row, or a row with an empty stage and `note` saying why it was skipped.
StageRow onnxruntime_row(const Predictor& original, const std::vector<int64_t>& batches,
                         const std::string& onnx_path, const std::string& python, const std::string& runner,
                         const std::string& work_dir, int iterations, std::string& note);

}  // namespace kiln::cli
