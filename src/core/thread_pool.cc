#include "thread_pool.h"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "core/environment.h"
#include "kiln/error.hpp"
#include "kiln/threading.hpp"

namespace kiln {

namespace {
thread_local bool t_in_region = false;

struct RegionFlag {
  RegionFlag() { t_in_region = true; }
  ~RegionFlag() { t_in_region = false; }
};

int default_num_threads() {
  if (const auto n = env::num_threads()) return static_cast<int>(*n);
  return std::max(1u, std::thread::hardware_concurrency());
}
}  // namespace

bool in_parallel_region() {
  return t_in_region;
}

// One parallel region. Workers hold it through a shared_ptr, so a worker that wakes late finds
// no chunks left instead of a dangling job.
struct ThreadPool::Job {
  const RangeFn* fn = nullptr;
  int64_t begin = 0, end = 0, chunk = 0, num_chunks = 0;
  std::atomic<int64_t> next{0};
  std::atomic<int64_t> remaining{0};
  std::mutex done_mutex;
  std::condition_variable done;
  std::exception_ptr error;
};

ThreadPool::ThreadPool(int num_threads) {
  for (int i = 1; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::work_on(Job& job) {
  RegionFlag flag;
  for (;;) {
    const int64_t c = job.next.fetch_add(1);
    if (c >= job.num_chunks) return;
    const int64_t b = job.begin + c * job.chunk;
    const int64_t e = std::min(job.end, b + job.chunk);
    try {
      (*job.fn)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(job.done_mutex);
      if (!job.error) job.error = std::current_exception();
    }
    if (job.remaining.fetch_sub(1) == 1) {
      std::lock_guard<std::mutex> lock(job.done_mutex);
      job.done.notify_all();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    if (job) work_on(*job);
  }
}

void ThreadPool::run(int64_t begin, int64_t end, int64_t grain, const RangeFn& fn) {
  std::unique_lock<std::mutex> region(region_, std::try_to_lock);
  if (!region.owns_lock() || workers_.empty()) {  // another region is running: do it alone
    RegionFlag flag;
    fn(begin, end);
    return;
  }
  auto job = std::make_shared<Job>();
  const int64_t n = end - begin;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(grain, 1));
  // A few chunks per thread balance uneven work without much scheduling overhead.
  job->num_chunks = std::min<int64_t>(max_chunks, 4 * static_cast<int64_t>(num_threads()));
  job->chunk = (n + job->num_chunks - 1) / job->num_chunks;
  job->num_chunks = (n + job->chunk - 1) / job->chunk;
  job->fn = &fn;
  job->begin = begin;
  job->end = end;
  job->remaining = job->num_chunks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = job;
    ++generation_;
  }
  wake_.notify_all();
  work_on(*job);
  {
    std::unique_lock<std::mutex> lock(job->done_mutex);
    job->done.wait(lock, [&] { return job->remaining.load() == 0; });
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_.reset();
  }
  if (job->error) std::rethrow_exception(job->error);
}

namespace {
std::mutex g_pool_mutex;

std::shared_ptr<ThreadPool>& pool_slot() {
  // Never destroyed: worker threads must not be joined during static destruction, when
  // other threads may still be finishing ops that use the pool.
  static auto& slot = *new std::shared_ptr<ThreadPool>(std::make_shared<ThreadPool>(default_num_threads()));
  return slot;
}
}  // namespace

std::shared_ptr<ThreadPool> compute_pool() {
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  return pool_slot();
}

int num_threads() {
  return compute_pool()->num_threads();
}

void set_num_threads(int n) {
  KILN_CHECK(n >= 1, ErrorCode::kInvalidArgument, "set_num_threads: expected at least 1 thread, got ", n);
  std::lock_guard<std::mutex> lock(g_pool_mutex);
  auto& slot = pool_slot();
  if (slot->num_threads() == n) return;
  slot = std::make_shared<ThreadPool>(n);
}

}  // namespace kiln
