// Recording: op durations, user scopes, async spans, instant markers and counters. Each event goes
// into the calling thread's buffer.
#include <chrono>
#include <cmath>

#include "kiln/allocator.hpp"
#include "kiln/error.hpp"
#include "profiler/profiler_state.h"

namespace kiln::profiler {

namespace {

void record(Event&& event) {
  ThreadBuffer& buffer = Profiler::this_thread();
  std::lock_guard<std::mutex> lock(buffer.mutex);
  event.tid = buffer.tid;
  buffer.events.push_back(std::move(event));
}

// Appends a duration event, and its statistics, to the calling thread's buffer; with `memory`, also
// a counter of the CPU allocator's bytes in use at its end.
void record_duration(std::string_view name, std::string_view category, std::string_view op_type,
                     int64_t begin_ns, std::string args, bool memory) {
  const int64_t end_ns = detail::now_ns();
  Profiler& profiler = Profiler::get();
  // Read before taking the buffer's lock: the allocator has a lock of its own.
  const size_t bytes_in_use = memory ? allocator_stats(cpu()).bytes_in_use : 0;
  ThreadBuffer& buffer = Profiler::this_thread();
  std::lock_guard<std::mutex> lock(buffer.mutex);
  buffer.events.push_back(Event{.phase = 'X',
                                .tid = buffer.tid,
                                .ts_ns = begin_ns - profiler.epoch_ns(),
                                .dur_ns = end_ns - begin_ns,
                                .name = std::string(name),
                                .category = std::string(category),
                                .args = std::move(args)});
  if (profiler.aggregate_stats()) buffer.stats.add(category, name, op_type, end_ns - begin_ns);
  if (memory) {
    buffer.events.push_back(Event{.phase = 'C',
                                  .tid = buffer.tid,
                                  .ts_ns = end_ns - profiler.epoch_ns(),
                                  .name = "cpu memory",
                                  .category = "memory",
                                  .args = "\"bytes_in_use\":" + std::to_string(bytes_in_use)});
  }
}

}  // namespace

namespace detail {

int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void record_op(std::string_view name, std::string_view op_type, int64_t begin_ns) {
  std::string args;
  if (!op_type.empty() && op_type != name) {
    args = "\"op\":";
    append_json_string(args, op_type);
  }
  record_duration(name, "operator", op_type, begin_ns, std::move(args), Profiler::get().profile_memory());
}

}  // namespace detail

void set_thread_name(std::string_view name) {
  ThreadBuffer& buffer = Profiler::this_thread();
  std::lock_guard<std::mutex> lock(buffer.mutex);
  buffer.name = name;
}

void mark(std::string_view name, MarkScope scope, std::string_view category) {
  if (!is_running()) return;
  const char scope_code = scope == MarkScope::kThread ? 't' : scope == MarkScope::kProcess ? 'p' : 'g';
  record(Event{.phase = 'i',
               .scope = scope_code,
               .ts_ns = detail::now_ns() - Profiler::get().epoch_ns(),
               .name = std::string(name),
               .category = std::string(category)});
}

void counter(std::string_view name, double value) {
  KILN_CHECK(std::isfinite(value), ErrorCode::kInvalidArgument, "profiler::counter '", name,
             "': the value must be finite, got ", value);
  if (!is_running()) return;
  std::string args;
  append_json_string(args, name);
  args += ':';
  append_json_number(args, value);
  record(Event{.phase = 'C',
               .ts_ns = detail::now_ns() - Profiler::get().epoch_ns(),
               .name = std::string(name),
               .category = "counter",
               .args = std::move(args)});
}

Scope::Scope(std::string_view name, std::string_view category) {
  if (!is_running()) return;
  name_ = name;
  category_ = category;
  begin_ns_ = detail::now_ns();
}

Scope::~Scope() {
  if (begin_ns_ >= 0) record_duration(name_, category_, {}, begin_ns_, std::move(args_), false);
}

Scope& Scope::arg(std::string_view key, std::string_view value) {
  if (begin_ns_ < 0) return *this;
  if (!args_.empty()) args_ += ',';
  append_json_string(args_, key);
  args_ += ':';
  append_json_string(args_, value);
  return *this;
}

Scope& Scope::arg(std::string_view key, double value) {
  if (begin_ns_ < 0) return *this;
  if (!args_.empty()) args_ += ',';
  append_json_string(args_, key);
  args_ += ':';
  append_json_number(args_, value);
  return *this;
}

AsyncSpan::AsyncSpan(std::string_view name, std::string_view category) {
  if (!is_running()) return;
  Profiler& profiler = Profiler::get();
  name_ = name;
  category_ = category;
  id_ = profiler.next_async_id();
  record(Event{.phase = 'b',
               .ts_ns = detail::now_ns() - profiler.epoch_ns(),
               .id = id_,
               .name = name_,
               .category = category_});
}

AsyncSpan::~AsyncSpan() {
  end();
}

AsyncSpan::AsyncSpan(AsyncSpan&& other) noexcept
    : name_(std::move(other.name_)), category_(std::move(other.category_)), id_(other.id_) {
  other.id_ = 0;
}

AsyncSpan& AsyncSpan::operator=(AsyncSpan&& other) noexcept {
  if (this != &other) {
    end();
    name_ = std::move(other.name_);
    category_ = std::move(other.category_);
    id_ = other.id_;
    other.id_ = 0;
  }
  return *this;
}

void AsyncSpan::end() {
  if (id_ == 0) return;
  record(Event{.phase = 'e',
               .ts_ns = detail::now_ns() - Profiler::get().epoch_ns(),
               .id = id_,
               .name = name_,
               .category = category_});
  id_ = 0;
}

}  // namespace kiln::profiler
