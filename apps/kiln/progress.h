// A progress bar on stderr for the long loops of `kiln optimize` (calibration, validation).
#pragma once

#include <cstdint>
#include <string>

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

}  // namespace kiln::cli
