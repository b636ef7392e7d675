// Chrome trace JSON output. The format:
// https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU
#include "profiler/chrome_trace.h"

#include <unistd.h>

#include <charconv>
#include <cinttypes>
#include <cmath>

#include "kiln/error.hpp"

namespace kiln::profiler {

void append_json_string(std::string& out, std::string_view text) {
  out += '"';
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {  // control characters, which JSON escapes
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
}

void append_json_number(std::string& out, double value) {
  if (!std::isfinite(value)) {
    append_json_string(out, std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf"));
    return;
  }
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  out.append(text, end);
}

namespace {

// Nanoseconds as microseconds with three decimals: the trace's unit without losing precision.
void append_us(std::string& out, int64_t ns) {
  char text[32];
  const char* sign = ns < 0 ? "-" : "";
  const int64_t magnitude = ns < 0 ? -ns : ns;
  std::snprintf(text, sizeof text, "%s%" PRId64 ".%03" PRId64, sign, magnitude / 1000, magnitude % 1000);
  out += text;
}

}  // namespace

TraceWriter::TraceWriter(const std::string& filename)
    : filename_(filename), pid_(static_cast<int>(getpid())) {
  file_ = std::fopen(filename.c_str(), "w");
  KILN_CHECK(file_ != nullptr, ErrorCode::kIo, "profiler: cannot create the trace file '", filename, "'");
  pending_ = "{\"traceEvents\": [\n";
  append_metadata("process_name", 0, "kiln");
}

TraceWriter::~TraceWriter() {
  if (file_) std::fclose(file_);
}

void TraceWriter::append_metadata(const char* kind, int tid, std::string_view name) {
  pending_ += "{\"name\":\"";
  pending_ += kind;
  pending_ += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(tid) +
              ",\"args\":{\"name\":";
  append_json_string(pending_, name);
  pending_ += "}},\n";
}

void TraceWriter::write(const Event& event, const std::string& thread_name) {
  auto named = thread_names_.find(event.tid);
  if (named == thread_names_.end() || named->second != thread_name) {
    thread_names_[event.tid] = thread_name;
    append_metadata("thread_name", event.tid, thread_name);
  }
  std::string& out = pending_;
  out += "{\"name\":";
  append_json_string(out, event.name);
  out += ",\"cat\":";
  append_json_string(out, event.category);
  out += ",\"ph\":\"";
  out += event.phase;
  out += "\",\"ts\":";
  append_us(out, event.ts_ns);
  if (event.phase == 'X') {
    out += ",\"dur\":";
    append_us(out, event.dur_ns);
  } else if (event.phase == 'i') {
    out += ",\"s\":\"";
    out += event.scope;
    out += '"';
  } else if (event.phase == 'b' || event.phase == 'e') {
    out += ",\"id\":" + std::to_string(event.id);
  }
  out += ",\"pid\":" + std::to_string(pid_) + ",\"tid\":" + std::to_string(event.tid);
  if (!event.args.empty()) out += ",\"args\":{" + event.args + "}";
  out += "},\n";
}

void TraceWriter::flush() {
  std::fwrite(pending_.data(), 1, pending_.size(), file_);
  pending_.clear();
  std::fflush(file_);
}

void TraceWriter::finish() {
  // Every event ends with ",\n"; the process name event keeps the array non-empty.
  pending_ += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(pid_) +
              ",\"tid\":0,\"args\":{\"sort_index\":0}}\n],\n\"displayTimeUnit\": \"ms\"}\n";
  flush();
  const bool failed = std::ferror(file_) != 0;
  const bool close_failed = std::fclose(file_) != 0;
  file_ = nullptr;
  KILN_CHECK(!failed && !close_failed, ErrorCode::kIo, "profiler: writing the trace file '", filename_,
             "' failed");
}

}  // namespace kiln::profiler
