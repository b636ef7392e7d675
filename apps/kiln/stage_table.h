// The stage table of `kiln optimize`: per stage, the median latency at batch 1 and 8, the
// speedup over the original, the bytes of weights and the accuracy change; ONNX Runtime on the
// original model as a reference row. Printed as text and written as Markdown.
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
  std::string accuracy;  // the accuracy column's text
};

struct StageTable {
  std::vector<int64_t> batches;  // the batch sizes timed
  std::vector<StageRow> rows;    // rows[0]: the original model
  StageRow onnxruntime;          // empty stage: not run
  std::string onnxruntime_note;

  std::string to_text() const;
  std::string to_markdown() const;
};

// The bytes of the graph's initializers.
int64_t weight_bytes(const graph::Graph& g);

// Median latency (ms) of `predictor` at each of `batches` (random inputs, fixed seed), after
// warm-up calls; -1 where a fixed batch dimension of the model rules a batch out.
std::vector<double> median_latencies(const Predictor& predictor, const std::vector<int64_t>& batches,
                                     int iterations);

// ONNX Runtime on `onnx_path` through bench/runtimes/runner.py with `python` (threads as Kiln's):
// the row, or a row with an empty stage and `note` saying why it was skipped.
StageRow onnxruntime_row(const Predictor& original, const std::vector<int64_t>& batches,
                         const std::string& onnx_path, const std::string& python, const std::string& runner,
                         const std::string& work_dir, int iterations, std::string& note);

}  // namespace kiln::cli
