// A progress bar on stderr for the long loops of `kiln optimize` (calibration, validation).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::cli {

class ProgressBar {
 public:
  // `total` <= 0: unknown (a count without a bar).
  ProgressBar(std::string label, int64_t total);
  ~ProgressBar();  // ends the line
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  void update(int64_t done);

 private:
  std::string label_;
  int64_t total_;
  bool drawn_ = false;
};

}  // namespace kiln::cli
