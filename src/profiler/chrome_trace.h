// Writes events as Chrome trace JSON (the format of chrome://tracing and Perfetto's JSON import):
// {"traceEvents": [...], "displayTimeUnit": "ms"}, timestamps in microseconds.
#pragma once

#include <cstdio>
#include <map>
#include <string>
#include <string_view>

#include "profiler/event.h"

namespace kiln::profiler {

// Appends `text` as a quoted JSON string.
void append_json_string(std::string& out, std::string_view text);
// Appends `value` as a JSON number; non-finite values, which JSON lacks, as strings.
void append_json_number(std::string& out, double value);

// One trace file, written in batches. Until finish() the file holds a prefix of the JSON, which
// is what a continuous dump leaves behind when the process ends early.
class TraceWriter {
 public:
  // Creates (truncates) `filename` and writes the header and the process name. Throws
  // kiln::Error (kIo) when the file cannot be created.
  explicit TraceWriter(const std::string& filename);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Writes `event`, preceded by a thread name event the first time its thread appears (or when
  // the name changed).
  void write(const Event& event, const std::string& thread_name);
  // Hands what was written to the operating system.
  void flush();
  // Closes the JSON and the file. Throws kiln::Error (kIo) when any write failed.
  void finish();

 private:
  void append_metadata(const char* kind, int tid, std::string_view name);

  std::string filename_;
  std::FILE* file_ = nullptr;
  std::string pending_;  // text not yet handed to the file
  std::map<int, std::string> thread_names_;
  int pid_;
};

}  // namespace kiln::profiler
