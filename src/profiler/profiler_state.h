// The profiler's process-wide object: configuration, state, the per-thread event buffers and the
// continuous-dump writer. Created on first use and never destroyed.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "kiln/profiler.hpp"
#include "profiler/aggregate.h"
#include "profiler/chrome_trace.h"
#include "profiler/event.h"

namespace kiln::profiler {

// What one thread recorded. Its thread takes the mutex for every event and dump() takes it to move
// the events out, so it is almost never contended.
struct ThreadBuffer {
  int tid = 0;
  std::mutex mutex;
  std::string name;
  std::vector<Event> events;
  Aggregate stats;
};

class Profiler {
 public:
  static Profiler& get();

  // Recording, from any thread.
  static ThreadBuffer& this_thread();
  int64_t epoch_ns() const { return epoch_ns_; }
  bool aggregate_stats() const { return aggregate_stats_.load(std::memory_order_relaxed); }
  bool profile_memory() const { return profile_memory_.load(std::memory_order_relaxed); }
  uint64_t next_async_id() { return next_async_id_.fetch_add(1, std::memory_order_relaxed); }

  // Control: the public functions of profiler.hpp.
  void set_config(const Config& config);
  Config config();
  void set_state(State state);
  State state();
  void set_paused(bool paused);
  void dump(bool finished);
  std::string dumps(bool reset);

 private:
  Profiler();
  std::shared_ptr<ThreadBuffer> add_thread();

  struct Drained {
    std::vector<Event> events;  // sorted by time
    std::map<int, std::string> thread_names;
  };
  // Moves every buffer's events out, and forgets buffers of exited threads that hold nothing.
  Drained drain();
  static void write(TraceWriter& writer, const Drained& drained);
  // These need stream_mutex_.
  void write_pending_locked();
  void finish_stream_locked();

  void writer_loop();
  void stop_writer();
  void update_recording();

  const int64_t epoch_ns_;
  std::atomic<bool> aggregate_stats_{false}, profile_memory_{false};
  std::atomic<uint64_t> next_async_id_{1};

  std::mutex control_mutex_;  // taken first: configuration, state, the writer thread
  Config config_;
  State state_ = State::kStop;
  bool paused_ = false;
  std::thread writer_;

  std::mutex stream_mutex_;  // then this: the open continuous-dump file
  std::unique_ptr<TraceWriter> stream_;
  std::condition_variable writer_cv_;
  bool writer_stop_ = false;

  std::mutex registry_mutex_;  // then this: the buffers, and then a buffer's own mutex
  std::vector<std::shared_ptr<ThreadBuffer>> buffers_;
};

}  // namespace kiln::profiler
