// The progress bar of `kiln optimize` and `kiln quantize`, and batches that move it; see progress.h.
#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
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

int64_t count_batches(const std::string& folder) {
  namespace fs = std::filesystem;
  int64_t count = 0;
  std::error_code ec;
  if (fs::is_directory(folder, ec))
    for (const auto& e : fs::directory_iterator(folder, ec))
      count += e.is_directory() || e.path().extension() == ".npy";
  return count;
}

quantization::CalibrationBatches with_progress(quantization::CalibrationBatches batches,
                                               std::shared_ptr<ProgressBar> bar) {
  auto done = std::make_shared<int64_t>(0);
  return [batches, bar, done](std::map<std::string, Tensor>& batch) {
    const bool more = batches(batch);
    if (more) bar->update(++*done);
    return more;
  };
}

}  // namespace kiln::cli
