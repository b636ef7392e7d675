// The progress bar of `kiln optimize`; see progress.h.
#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <iostream>

namespace kiln::cli {

ProgressBar::ProgressBar(std::string label, int64_t total)
    : label_(std::move(label)), total_(total), terminal_(::isatty(STDERR_FILENO) == 1) {}

ProgressBar::~ProgressBar() {
  if (!terminal_ || !drawn_) draw();
  std::cerr << "\n";
}

void ProgressBar::update(int64_t done) {
  done_ = done;
  if (terminal_) draw();
}

void ProgressBar::draw() {
  constexpr int kWidth = 30;
  std::cerr << (terminal_ ? "\r" : "") << label_ << " ";
  if (total_ > 0) {
    const int filled = static_cast<int>(kWidth * std::min(done_, total_) / total_);
    std::cerr << "[" << std::string(static_cast<size_t>(filled), '#')
              << std::string(static_cast<size_t>(kWidth - filled), '.') << "] " << done_ << "/" << total_;
  } else {
    std::cerr << done_;
  }
  std::cerr << std::flush;
  drawn_ = true;
}

}  // namespace kiln::cli
