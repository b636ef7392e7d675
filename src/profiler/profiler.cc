// The profiler's state, configuration and output: set_config/set_state/pause/dump/dumps.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iterator>

#include "kiln/error.hpp"
#include "profiler/profiler_state.h"

namespace kiln::profiler {

namespace detail {
constinit std::atomic<bool> recording{false};
}  // namespace detail

namespace {
// How often a continuous dump hands new events to the file.
constexpr auto kFlushInterval = std::chrono::milliseconds(100);
}  // namespace

Profiler& Profiler::get() {
  // Never destroyed: ops may still run, and record, while the process exits.
  static Profiler& profiler = *new Profiler;
  return profiler;
}

Profiler::Profiler() : epoch_ns_(detail::now_ns()) {}

ThreadBuffer& Profiler::this_thread() {
  // The registry shares ownership, so the events outlive the thread until they are dumped.
  thread_local const std::shared_ptr<ThreadBuffer> buffer = get().add_thread();
  return *buffer;
}

std::shared_ptr<ThreadBuffer> Profiler::add_thread() {
  auto buffer = std::make_shared<ThreadBuffer>();
  buffer->tid = static_cast<int>(gettid());
  buffer->name = buffer->tid == getpid() ? "main" : "thread " + std::to_string(buffer->tid);
  std::lock_guard<std::mutex> lock(registry_mutex_);
  buffers_.push_back(buffer);
  return buffer;
}

Profiler::Drained Profiler::drain() {
  Drained out;
  {
    std::lock_guard<std::mutex> lock(registry_mutex_);
    for (auto it = buffers_.begin(); it != buffers_.end();) {
      ThreadBuffer& buffer = **it;
      std::unique_lock<std::mutex> buffer_lock(buffer.mutex);
      if (!buffer.events.empty()) {
        out.thread_names[buffer.tid] = buffer.name;
        std::move(buffer.events.begin(), buffer.events.end(), std::back_inserter(out.events));
        buffer.events.clear();  // keeps its capacity: the thread records again without reallocating
      }
      // Only the registry holds the buffer of a thread that has exited.
      const bool forget = it->use_count() == 1 && buffer.stats.empty();
      buffer_lock.unlock();
      it = forget ? buffers_.erase(it) : std::next(it);
    }
  }
  // By time, and an enclosing span before the spans it contains when they start together.
  std::stable_sort(out.events.begin(), out.events.end(), [](const Event& a, const Event& b) {
    return a.ts_ns < b.ts_ns || (a.ts_ns == b.ts_ns && a.dur_ns > b.dur_ns);
  });
  return out;
}

void Profiler::write(TraceWriter& writer, const Drained& drained) {
  for (const Event& event : drained.events) writer.write(event, drained.thread_names.at(event.tid));
}

void Profiler::write_pending_locked() {
  if (!stream_) return;
  write(*stream_, drain());
  stream_->flush();
}

void Profiler::finish_stream_locked() {
  const auto stream = std::move(stream_);
  stream->finish();
}

void Profiler::writer_loop() {
  std::unique_lock<std::mutex> lock(stream_mutex_);
  while (!writer_stop_) {
    writer_cv_.wait_for(lock, kFlushInterval, [this] { return writer_stop_; });
    write_pending_locked();
  }
}

void Profiler::stop_writer() {
  if (!writer_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(stream_mutex_);
    writer_stop_ = true;
  }
  writer_cv_.notify_all();
  writer_.join();
}

void Profiler::update_recording() {
  detail::recording.store(state_ == State::kRun && !paused_, std::memory_order_relaxed);
}

void Profiler::set_config(const Config& config) {
  KILN_CHECK(!config.filename.empty(), ErrorCode::kInvalidArgument, "profiler: Config::filename is empty");
  std::lock_guard<std::mutex> lock(control_mutex_);
  KILN_CHECK(state_ != State::kRun, ErrorCode::kInvalidArgument,
             "profiler: set_config while the profiler runs; call set_state(State::kStop) first");
  {
    // A continuous dump still open belongs to the old configuration: complete it.
    std::lock_guard<std::mutex> stream_lock(stream_mutex_);
    if (stream_) {
      write_pending_locked();
      finish_stream_locked();
    }
  }
  config_ = config;
  aggregate_stats_.store(config.aggregate_stats, std::memory_order_relaxed);
  profile_memory_.store(config.profile_memory, std::memory_order_relaxed);
}

Config Profiler::config() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  return config_;
}

void Profiler::set_state(State state) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  if (state == state_) return;
  if (state == State::kRun && config_.continuous_dump) {
    {
      std::lock_guard<std::mutex> stream_lock(stream_mutex_);
      if (!stream_) stream_ = std::make_unique<TraceWriter>(config_.filename);
      writer_stop_ = false;
    }
    writer_ = std::thread([this] { writer_loop(); });
  }
  state_ = state;
  update_recording();
  if (state == State::kStop) {
    stop_writer();
    std::lock_guard<std::mutex> stream_lock(stream_mutex_);
    write_pending_locked();
  }
}

State Profiler::state() {
  std::lock_guard<std::mutex> lock(control_mutex_);
  return state_;
}

void Profiler::set_paused(bool paused) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  paused_ = paused;
  update_recording();
}

void Profiler::dump(bool finished) {
  std::lock_guard<std::mutex> lock(control_mutex_);
  std::lock_guard<std::mutex> stream_lock(stream_mutex_);
  if (config_.continuous_dump) {
    if (!stream_) stream_ = std::make_unique<TraceWriter>(config_.filename);
    write_pending_locked();
    if (finished) finish_stream_locked();
    return;
  }
  TraceWriter writer(config_.filename);
  write(writer, drain());
  writer.finish();
}

std::string Profiler::dumps(bool reset) {
  Aggregate total;
  std::lock_guard<std::mutex> lock(registry_mutex_);
  for (const auto& buffer : buffers_) {
    std::lock_guard<std::mutex> buffer_lock(buffer->mutex);
    total.merge(buffer->stats);
    if (reset) buffer->stats = Aggregate();
  }
  return total.table();
}

void set_config(const Config& config) {
  Profiler::get().set_config(config);
}
Config config() {
  return Profiler::get().config();
}
void set_state(State state) {
  Profiler::get().set_state(state);
}
State state() {
  return Profiler::get().state();
}
void pause() {
  Profiler::get().set_paused(true);
}
void resume() {
  Profiler::get().set_paused(false);
}
void dump(bool finished) {
  Profiler::get().dump(finished);
}
std::string dumps(bool reset) {
  return Profiler::get().dumps(reset);
}

}  // namespace kiln::profiler
