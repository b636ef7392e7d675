// The compute pool that kernels split their outer loops across. The calling thread takes part,
// so a region never waits on a busy pool: a nested region, or one started while another is
// running, simply runs on the caller alone. That keeps threads == cores (no oversubscription).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

using RangeFn = std::function<void(int64_t, int64_t)>;

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }
  // Calls fn on disjoint chunks covering [begin, end), each about `grain` or more long.
  void run(int64_t begin, int64_t end, int64_t grain, const RangeFn& fn);

 private:
  struct Job;
  void worker_loop();
  static void work_on(Job& job);

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::shared_ptr<Job> job_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::mutex region_;  // one parallel region at a time
};

// The process-wide compute pool. Callers hold it for the length of a region, so resizing the
// pool (set_num_threads) never pulls it from under a running region.
std::shared_ptr<ThreadPool> compute_pool();

// True while the current thread is inside a parallel region (nested regions run serially).
bool in_parallel_region();

// Splits [begin, end) across the compute pool. Ranges shorter than two grains run inline.
template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, F&& fn) {
  if (end <= begin) return;
  if (end - begin < 2 * grain || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  compute_pool()->run(begin, end, grain, RangeFn(std::forward<F>(fn)));
}

}  // namespace kiln
