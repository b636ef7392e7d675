// The progress bar of `kiln optimize`; see progress.h.
#include "progress.h"

#include <algorithm>
#include <iostream>

namespace kiln::cli {

ProgressBar::ProgressBar(std::string label, int64_t total) : label_(std::move(label)), total_(total) {}

ProgressBar::~ProgressBar() {
  if (drawn_) std::cerr << "\n";
}

void ProgressBar::update(int64_t done) {
  constexpr int kWidth = 30;
  std::cerr << "\r" << label_ << " ";
  if (total_ > 0) {
    const int filled = static_cast<int>(kWidth * std::min(done, total_) / total_);
    std::cerr << "[" << std::string(static_cast<size_t>(filled), '#')
              << std::string(static_cast<size_t>(kWidth - filled), '.') << "] " << done << "/" << total_;
  } else {
    std::cerr << done;
  }
  std::cerr << std::flush;
  drawn_ = true;
}

}  // namespace kiln::cli
