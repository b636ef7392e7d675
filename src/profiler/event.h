// One recorded trace event, as the profiler keeps it until it is written out.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::profiler {

struct Event {
  char phase = 'X';    // 'X' duration, 'i' instant, 'C' counter, 'b' / 'e' async begin / end
  char scope = 'p';    // instant events: 't' thread, 'p' process, 'g' global
  int tid = 0;         // the recording thread
  int64_t ts_ns = 0;   // since the profiler's epoch
  int64_t dur_ns = 0;  // duration events
  uint64_t id = 0;     // async events
  std::string name, category;
  std::string args;  // JSON object members without braces, e.g. "\"bytes_in_use\":512"
};

}  // namespace kiln::profiler
