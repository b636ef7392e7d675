// The profiler: records what Kiln runs and writes it as a Chrome trace (chrome://tracing,
// Perfetto) and as an aggregate table, like MXNet's mx.profiler.
//
//   kiln::profiler::set_config({.filename = "profile.json", .aggregate_stats = true});
//   kiln::profiler::set_state(kiln::profiler::State::kRun);
//   ... NDArray ops: each op the engine runs becomes a Duration event in category "operator" ...
//   kiln::profiler::set_state(kiln::profiler::State::kStop);
//   kiln::profiler::dump();                        // writes profile.json
//   std::cout << kiln::profiler::dumps();          // count/total/mean/min/max per op
//
// Event kinds: Duration (operators, Scope), Instant (mark), Counter (counter, memory), Async
// (AsyncSpan). Every thread records into a buffer of its own, so recording takes no global lock;
// dump() merges the buffers. When the profiler is stopped or paused, every hook costs one relaxed
// atomic load. A span (OpScope, Scope, AsyncSpan) is recorded when it began while the profiler was
// recording, even if it ends after stop, so that begin and end stay paired.
//
// Process-wide state: the recording switch below (a constant-initialized atomic, safe to read
// before main() and during exit) and one profiler object, created on first use and never
// destroyed, that holds the configuration and the per-thread buffers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::profiler {

enum class State { kStop, kRun };

struct Config {
  std::string filename = "profile.json";  // where dump() writes the Chrome trace
  bool aggregate_stats = false;           // keep per-name statistics for dumps()
  // Write events to `filename` as they come (a background thread appends them a few times a
  // second) instead of only at dump(); dump() then writes the rest and closes the JSON.
  bool continuous_dump = false;
  // After each op, a Counter event with the CPU allocator's bytes in use.
  bool profile_memory = false;
};

// Replaces the configuration. Throws kiln::Error (kInvalidArgument) while the profiler runs, or
// for an empty filename.
void set_config(const Config& config);
Config config();

void set_state(State state);
State state();

// Stops and restarts recording without changing the state (MXNet's pause/resume).
void pause();
void resume();

namespace detail {
// True while the state is kRun and the profiler is not paused.
extern constinit std::atomic<bool> recording;
}  // namespace detail

// The hot-path check: whether events are being recorded now.
inline bool is_running() noexcept {
  return detail::recording.load(std::memory_order_relaxed);
}

// Writes the events recorded since the previous dump to config().filename as Chrome trace JSON
// ({"traceEvents": [...], "displayTimeUnit": "ms"}), replacing the file. With continuous_dump,
// writes the events not yet written; `finished` closes the JSON (the next run starts a new file),
// otherwise the file stays open for more. Throws kiln::Error (kIo) when the file cannot be written.
void dump(bool finished = true);

// The aggregate statistics (aggregate_stats) as an aligned table: per category, one row per op
// type or name with count, total, mean, min and max in ms and the share of the category's total.
// `reset` clears the statistics afterwards.
std::string dumps(bool reset = false);

// Names the calling thread in the trace (otherwise "main" or "thread <id>").
void set_thread_name(std::string_view name);

enum class MarkScope { kThread, kProcess, kGlobal };

// An Instant event ("i").
void mark(std::string_view name, MarkScope scope = MarkScope::kProcess, std::string_view category = "marker");
// A Counter event ("C"): the series `name` takes `value` from now on.
void counter(std::string_view name, double value);

namespace detail {
int64_t now_ns() noexcept;
void record_op(std::string_view name, std::string_view op_type, int64_t begin_ns);
}  // namespace detail

// Times one op (the engine wraps every op it runs in one): a Duration event named `name` in
// category "operator". `op_type` is the op's type when `name` is a node's name (aggregated both
// ways); empty means `name` is the type. Both strings must outlive the scope.
class OpScope {
 public:
  explicit OpScope(std::string_view name, std::string_view op_type = {}) noexcept
      : name_(name), op_type_(op_type), begin_ns_(is_running() ? detail::now_ns() : -1) {}
  ~OpScope() {
    if (begin_ns_ >= 0) detail::record_op(name_, op_type_, begin_ns_);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

 private:
  std::string_view name_, op_type_;
  int64_t begin_ns_;
};

// A user-defined Duration event (MXNet's profiler.Task / Frame): from construction to destruction,
// in `category`. Arguments added with arg() appear in the trace.
class Scope {
 public:
  explicit Scope(std::string_view name, std::string_view category = "user");
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

  Scope& arg(std::string_view key, std::string_view value);
  Scope& arg(std::string_view key, double value);

 private:
  std::string name_, category_, args_;
  int64_t begin_ns_ = -1;
};

// An Async span ("b" ... "e", matched by id): work that may begin on one thread and end on
// another. Movable; ends at destruction or at end().
class AsyncSpan {
 public:
  explicit AsyncSpan(std::string_view name, std::string_view category = "async");
  ~AsyncSpan();
  AsyncSpan(AsyncSpan&& other) noexcept;
  AsyncSpan& operator=(AsyncSpan&& other) noexcept;
  AsyncSpan(const AsyncSpan&) = delete;
  AsyncSpan& operator=(const AsyncSpan&) = delete;

  void end();
  uint64_t id() const { return id_; }  // 0 when the span was not recorded

 private:
  std::string name_, category_;
  uint64_t id_ = 0;
};

}  // namespace kiln::profiler
