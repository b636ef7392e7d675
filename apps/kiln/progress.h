// A progress bar on stderr for the long loops of `kiln optimize` and `kiln quantize` (calibration,
// validation), and batches from a folder that move one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "kiln/quantize.hpp"

namespace kiln::cli {

class ProgressBar {
 public:
  // `total` <= 0: unknown (a count without a bar).
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();  // draws the last state if it was not drawn, and ends the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(int64_t done);

 private:
  void draw();

  std::string label_;
  int64_t total_;
  int64_t done_ = 0;
  bool terminal_;  // stderr is a terminal: redraw in place on each update; else draw once at the end
  bool drawn_ = false;
};

// The entries of a folder of .npy batches (files, or folders of files), as npy_folder_batches reads.
int64_t count_batches(const std::string& folder);

// `batches` moving `bar` one step per batch. Make the batches first (npy_folder_batches checks the
// folder), then the bar, so that a refused folder draws no empty bar.
quantization::CalibrationBatches with_progress(quantization::CalibrationBatches batches,
                                               std::shared_ptr<ProgressBar> bar);

}  // namespace kiln::cli
