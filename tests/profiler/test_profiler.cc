// The profiler: NDArray ops traced through the engine, the Chrome trace JSON it writes, the event
// kinds, memory counters, stopped and paused states, aggregate statistics, continuous dumps and
// concurrent recording.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/error.hpp"
#include "kiln/ndarray.hpp"
#include "kiln/profiler.hpp"

namespace kiln {
namespace {

namespace prof = profiler;
using nlohmann::json;

class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kiln_profiler_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    std::filesystem::create_directories(dir_);
    prof::set_state(prof::State::kStop);
    prof::resume();
    nd::waitall();
    // Drop whatever earlier tests left in the buffers and statistics.
    prof::set_config({.filename = path("discarded.json")});
    prof::dump();
    prof::dumps(true);
  }

  void TearDown() override {
    nd::waitall();
    prof::set_state(prof::State::kStop);
    prof::resume();
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static json load(const std::string& file) {
    std::ifstream in(file);
    EXPECT_TRUE(in.good()) << file;
    return json::parse(in);  // throws on invalid JSON
  }

  // Starts the profiler with `config` writing to `name`, runs `work`, waits for the engine,
  // stops, dumps and returns the parsed trace.
  template <class Fn>
  json profile(prof::Config config, const std::string& name, Fn&& work) {
    config.filename = path(name);
    prof::set_config(config);
    prof::set_state(prof::State::kRun);
    work();
    nd::waitall();
    prof::set_state(prof::State::kStop);
    prof::dump();
    return load(config.filename);
  }

  std::filesystem::path dir_;
};

std::vector<json> events_where(const json& trace, const std::string& ph, const std::string& name = "") {
  std::vector<json> out;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == ph && (name.empty() || e.at("name") == name)) out.push_back(e);
  return out;
}

// Per thread, duration events are in time order in the file and either nest or do not overlap.
void expect_consistent_per_thread(const json& trace) {
  std::map<int, std::vector<json>> by_thread;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") == "X") by_thread[e.at("tid").get<int>()].push_back(e);
  for (const auto& [tid, events] : by_thread) {
    std::vector<double> open_ends;  // the ends of the spans enclosing the current time
    double last_ts = -1;
    for (const auto& e : events) {
      const double ts = e.at("ts").get<double>(), end = ts + e.at("dur").get<double>();
      EXPECT_GE(ts, last_ts) << "thread " << tid << ": events out of order at " << e.dump();
      last_ts = ts;
      while (!open_ends.empty() && open_ends.back() <= ts) open_ends.pop_back();
      if (!open_ends.empty()) {
        EXPECT_LE(end, open_ends.back() + 1e-3) << "thread " << tid << ": overlapping spans at " << e.dump();
      }
      open_ends.push_back(end);
    }
  }
}

// The count column of the row named `name` in the first table of `dumps()` that has one.
int64_t table_count(const std::string& table, const std::string& name) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(name + " ")) continue;
    std::istringstream rest(line.substr(name.size()));
    int64_t count = 0;
    if (rest >> count) return count;
  }
  return -1;
}

TEST_F(ProfilerTest, EveryOpBecomesADurationEventInAValidChromeTrace) {
  const json trace = profile({}, "ops.json", [] {
    NDArray a = nd::ones({32, 32});
    NDArray b = a + a;
    NDArray c = nd::dot(a, b);
    NDArray d = nd::relu(c);
    d.wait_to_read();
  });
  EXPECT_EQ(trace.at("displayTimeUnit"), "ms");
  for (const std::string op : {"ConstantOfShape", "Add", "MatMul", "Relu"}) {
    const auto events = events_where(trace, "X", op);
    ASSERT_EQ(events.size(), 1u) << op;
    const json& e = events[0];
    EXPECT_EQ(e.at("cat"), "operator");
    EXPECT_GE(e.at("ts").get<double>(), 0);
    EXPECT_GE(e.at("dur").get<double>(), 0);
    EXPECT_TRUE(e.at("pid").is_number_integer());
    EXPECT_TRUE(e.at("tid").is_number_integer());
  }
  // Metadata names the process and every thread that recorded.
  EXPECT_EQ(events_where(trace, "M", "process_name").at(0).at("args").at("name"), "kiln");
  std::set<int> named;
  for (const auto& m : events_where(trace, "M", "thread_name")) named.insert(m.at("tid").get<int>());
  for (const auto& e : events_where(trace, "X")) EXPECT_TRUE(named.contains(e.at("tid").get<int>()));
  expect_consistent_per_thread(trace);
}

TEST_F(ProfilerTest, UserScopesNestAndCarryArguments) {
  const json trace = profile({}, "scopes.json", [] {
    prof::Scope step("step", "train");
    step.arg("batch", 32.0).arg("phase", "forward \"quoted\"\n");
    for (int i = 0; i < 3; ++i) {
      prof::Scope inner("layer" + std::to_string(i));
      NDArray x = nd::ones({8, 8});
      nd::relu(x).wait_to_read();
    }
  });
  const auto step = events_where(trace, "X", "step");
  ASSERT_EQ(step.size(), 1u);
  EXPECT_EQ(step[0].at("cat"), "train");
  EXPECT_EQ(step[0].at("args").at("batch"), 32);
  EXPECT_EQ(step[0].at("args").at("phase"), "forward \"quoted\"\n");
  const auto layer = events_where(trace, "X", "layer1");
  ASSERT_EQ(layer.size(), 1u);
  EXPECT_EQ(layer[0].at("cat"), "user");
  EXPECT_EQ(layer[0].at("tid"), step[0].at("tid"));
  EXPECT_GE(layer[0].at("ts").get<double>(), step[0].at("ts").get<double>());
  EXPECT_EQ(events_where(trace, "X", "Relu").size(), 3u);
  expect_consistent_per_thread(trace);
}

TEST_F(ProfilerTest, InstantCounterAndAsyncEventsHaveTheirPhases) {
  uint64_t id = 0;
  const json trace = profile({}, "kinds.json", [&] {
    prof::mark("checkpoint", prof::MarkScope::kThread);
    prof::mark("epoch");
    prof::counter("queue depth", 3);
    prof::counter("queue depth", 1.5);
    prof::AsyncSpan request("request", "serve");
    id = request.id();
    // The span ends on another thread, as a request handed to a worker would.
    std::thread([span = std::move(request)]() mutable { span.end(); }).join();
  });
  const auto marks = events_where(trace, "i");
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0].at("name"), "checkpoint");
  EXPECT_EQ(marks[0].at("s"), "t");
  EXPECT_EQ(marks[1].at("s"), "p");
  const auto counters = events_where(trace, "C", "queue depth");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0].at("args").at("queue depth"), 3);
  EXPECT_EQ(counters[1].at("args").at("queue depth"), 1.5);
  const auto begins = events_where(trace, "b"), ends = events_where(trace, "e");
  ASSERT_EQ(begins.size(), 1u);
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_NE(id, 0u);
  EXPECT_EQ(begins[0].at("id"), id);
  EXPECT_EQ(ends[0].at("id"), id);
  EXPECT_EQ(ends[0].at("cat"), "serve");
  EXPECT_EQ(ends[0].at("name"), "request");
  EXPECT_NE(ends[0].at("tid"), begins[0].at("tid"));
  EXPECT_LE(begins[0].at("ts").get<double>(), ends[0].at("ts").get<double>());
  EXPECT_THROW(prof::counter("bad", std::nan("")), Error);
}

TEST_F(ProfilerTest, MemoryCountersFollowEachOpWhenEnabled) {
  auto work = [] {
    NDArray a = nd::ones({64, 64});
    NDArray b = nd::exp(a) * 2;
    b.wait_to_read();
  };
  const json with = profile({.profile_memory = true}, "memory.json", work);
  const auto ops = events_where(with, "X");
  const auto counters = events_where(with, "C", "cpu memory");
  ASSERT_EQ(ops.size(), 3u);
  ASSERT_EQ(counters.size(), ops.size());
  for (const auto& c : counters) {
    EXPECT_EQ(c.at("cat"), "memory");
    // At least the 16 KiB of the array the op wrote is in use.
    EXPECT_GE(c.at("args").at("bytes_in_use").get<int64_t>(), 64 * 64 * 4);
  }
  const json without = profile({}, "no_memory.json", work);
  EXPECT_EQ(events_where(without, "X").size(), 3u);
  EXPECT_TRUE(events_where(without, "C").empty());
}

TEST_F(ProfilerTest, NothingIsRecordedWhileStoppedOrPaused) {
  prof::set_config({.filename = path("stopped.json"), .aggregate_stats = true});
  {
    prof::Scope scope("stopped scope");
    prof::AsyncSpan span("stopped span");
    EXPECT_EQ(span.id(), 0u);
    prof::mark("stopped mark");
    prof::counter("stopped counter", 1);
    (nd::ones({4}) + 1).wait_to_read();
  }
  prof::set_state(prof::State::kRun);
  EXPECT_TRUE(prof::is_running());
  prof::pause();
  EXPECT_FALSE(prof::is_running());
  EXPECT_EQ(prof::state(), prof::State::kRun);
  (nd::ones({4}) - 1).wait_to_read();
  prof::mark("paused mark");
  prof::resume();
  (nd::ones({4}) * 3).wait_to_read();
  prof::set_state(prof::State::kStop);
  prof::dump();
  const json trace = load(path("stopped.json"));
  std::vector<std::string> recorded;
  for (const auto& e : trace.at("traceEvents"))
    if (e.at("ph") != "M") recorded.push_back(e.at("name"));
  // Only what ran between resume() and stop: the ones() fill and the Mul.
  EXPECT_EQ(recorded, (std::vector<std::string>{"ConstantOfShape", "Mul"}));
  const std::string table = prof::dumps();
  EXPECT_EQ(table_count(table, "Mul"), 1);
  EXPECT_EQ(table_count(table, "Add"), -1);
  EXPECT_EQ(table_count(table, "Sub"), -1);
}

TEST_F(ProfilerTest, AggregateCountsEqualTheOpsRun) {
  profile({.aggregate_stats = true}, "aggregate.json", [] {
    NDArray a = nd::ones({16, 16});
    NDArray acc = nd::zeros({16, 16});
    for (int i = 0; i < 7; ++i) acc = acc + a;
    for (int i = 0; i < 3; ++i) acc = nd::dot(acc, a);
    acc.wait_to_read();
    prof::Scope scope("user work");
  });
  const std::string table = prof::dumps(true);
  EXPECT_EQ(table_count(table, "Add"), 7) << table;
  EXPECT_EQ(table_count(table, "MatMul"), 3) << table;
  EXPECT_EQ(table_count(table, "ConstantOfShape"), 2) << table;
  EXPECT_EQ(table_count(table, "user work"), 1) << table;
  EXPECT_NE(table.find("operator\n========"), std::string::npos) << table;
  // The columns line up: the rows of the operator table are as long as its header.
  const size_t header = table.find("Name", table.find("operator\n"));
  ASSERT_NE(header, std::string::npos) << table;
  std::istringstream rows(table.substr(header));
  std::string first_line;
  std::getline(rows, first_line);
  EXPECT_NE(first_line.find("Share (%)"), std::string::npos) << table;
  for (std::string row; std::getline(rows, row) && !row.empty();)
    EXPECT_EQ(row.size(), first_line.size()) << row;
  EXPECT_EQ(table_count(prof::dumps(), "Add"), -1) << "reset did not clear the statistics";
}

TEST_F(ProfilerTest, NodeNamesAreAggregatedByNameAndByOpType) {
  const json trace = profile({.aggregate_stats = true}, "nodes.json", [] {
    for (const char* node : {"stage1/conv", "stage2/conv", "stage2/conv"}) prof::OpScope timed(node, "Conv");
  });
  const auto events = events_where(trace, "X", "stage2/conv");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].at("args").at("op"), "Conv");
  const std::string table = prof::dumps(true);
  EXPECT_NE(table.find("operator (by op type)"), std::string::npos) << table;
  EXPECT_NE(table.find("operator (by name)"), std::string::npos) << table;
  EXPECT_EQ(table_count(table, "Conv"), 3) << table;
  EXPECT_EQ(table_count(table, "stage1/conv"), 1) << table;
  EXPECT_EQ(table_count(table, "stage2/conv"), 2) << table;
}

TEST_F(ProfilerTest, ConcurrentRecordingFromEightThreadsLosesNoEvents) {
  constexpr int kThreads = 8, kPerThread = 500, kOpsPerThread = 20;
  json early;
  const json trace = profile({.aggregate_stats = true}, "concurrent.json", [&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([t] {
        prof::set_thread_name("recorder " + std::to_string(t));
        NDArray x = nd::ones({8});
        for (int i = 0; i < kPerThread; ++i) {
          prof::Scope scope("work");
          prof::AsyncSpan span("async work");
          prof::mark("tick", prof::MarkScope::kThread);
          prof::counter("progress", i);
          if (i < kOpsPerThread) x = x + 1;
        }
        x.wait_to_read();
      });
    }
    // A dump while the threads record: the events it takes count with the rest.
    prof::dump();
    early = load(path("concurrent.json"));
    for (auto& thread : threads) thread.join();
  });
  auto count = [&](const std::string& ph, const std::string& name) {
    return events_where(early, ph, name).size() + events_where(trace, ph, name).size();
  };
  const size_t events = kThreads * kPerThread;
  EXPECT_EQ(count("X", "work"), events);
  EXPECT_EQ(count("b", "async work"), events);
  EXPECT_EQ(count("e", "async work"), events);
  EXPECT_EQ(count("i", "tick"), events);
  EXPECT_EQ(count("C", "progress"), events);
  EXPECT_EQ(count("X", "Add"), static_cast<size_t>(kThreads * kOpsPerThread));
  std::set<std::string> names;
  for (const json* t : std::initializer_list<const json*>{&early, &trace})
    for (const auto& m : events_where(*t, "M", "thread_name")) names.insert(m.at("args").at("name"));
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(names.contains("recorder " + std::to_string(t)));
  expect_consistent_per_thread(early);
  expect_consistent_per_thread(trace);
  const std::string table = prof::dumps(true);
  EXPECT_EQ(table_count(table, "work"), static_cast<int64_t>(events)) << table;
  EXPECT_EQ(table_count(table, "Add"), kThreads * kOpsPerThread) << table;
}

TEST_F(ProfilerTest, ContinuousDumpWritesEventsBeforeDumpAndEndsAsValidJson) {
  const std::string file = path("continuous.json");
  prof::set_config({.filename = file, .continuous_dump = true});
  prof::set_state(prof::State::kRun);
  (nd::ones({4}) + 1).wait_to_read();
  auto contents = [&] {
    std::ifstream in(file);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (contents().find("\"Add\"") == std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_NE(contents().find("\"Add\""), std::string::npos) << "the Add event was not written while running";
  EXPECT_THROW({ [[maybe_unused]] const json parsed = json::parse(contents()); },
               json::parse_error);  // still open
  (nd::ones({4}) * 2).wait_to_read();
  prof::set_state(prof::State::kStop);
  prof::dump();
  const json trace = load(file);
  EXPECT_EQ(events_where(trace, "X", "Add").size(), 1u);
  EXPECT_EQ(events_where(trace, "X", "Mul").size(), 1u);
  EXPECT_EQ(events_where(trace, "X", "ConstantOfShape").size(), 2u);
  expect_consistent_per_thread(trace);
}

TEST_F(ProfilerTest, BadConfigurationAndUnwritableFilesAreErrors) {
  try {
    prof::set_config({.filename = ""});
    FAIL() << "an empty filename was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
  prof::set_config({.filename = path("running.json")});
  prof::set_state(prof::State::kRun);
  EXPECT_THROW(prof::set_config({}), Error);
  prof::set_state(prof::State::kStop);
  prof::set_config({.filename = path("no/such/dir/trace.json")});
  try {
    prof::dump();
    FAIL() << "dump into a missing folder succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kIo);
    EXPECT_NE(std::string(e.what()).find("no/such/dir"), std::string::npos);
  }
}

}  // namespace
}  // namespace kiln
