// The dependency engine: ordering under concurrency, error propagation, wait semantics.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include "engine/engine.h"
#include "kiln/error.hpp"

namespace kiln::engine {
namespace {

TEST(Engine, WritesToOneVarRunInPushOrder) {
  auto eng = make_threaded_engine(4);
  auto v = new_var();
  std::vector<int> seen;
  for (int i = 0; i < 1000; ++i) eng->push([&seen, i] { seen.push_back(i); }, {}, {v}, "append");
  eng->wait_for_var(v);
  std::vector<int> expected(1000);
  std::iota(expected.begin(), expected.end(), 0);
  EXPECT_EQ(seen, expected);
}

TEST(Engine, ReadsWaitForEarlierWritesAndWritesWaitForEarlierReads) {
  auto eng = make_threaded_engine(4);
  auto v = new_var();
  int value = 0;
  std::atomic<int> sum{0};
  for (int round = 1; round <= 50; ++round) {
    eng->push([&value, round] { value = round; }, {}, {v}, "write");
    for (int r = 0; r < 4; ++r) eng->push([&] { sum += value; }, {v}, {}, "read");
  }
  eng->wait_all();
  // Each round's four reads see that round's value: 4 * (1 + ... + 50).
  EXPECT_EQ(sum.load(), 4 * 50 * 51 / 2);
}

// Two independent ops on two workers meet: each waits for the other to start, which only
// happens if they run at the same time (run one after the other, the first would wait out the
// 30-second limit and the test fails).
TEST(Engine, IndependentOpsRunConcurrently) {
  auto eng = make_threaded_engine(2);
  std::mutex mutex;
  std::condition_variable arrived;
  int started = 0;
  std::atomic<int> met{0};
  auto body = [&] {
    std::unique_lock lock(mutex);
    ++started;
    arrived.notify_all();
    if (arrived.wait_for(lock, std::chrono::seconds(30), [&] { return started == 2; })) ++met;
  };
  eng->push(body, {}, {new_var()}, "a");
  eng->push(body, {}, {new_var()}, "b");
  eng->wait_all();
  EXPECT_EQ(met.load(), 2);
}

TEST(Engine, ManyThreadsPushingGiveTheSequentialResult) {
  auto eng = make_threaded_engine(3);
  constexpr int kThreads = 8, kOps = 400;
  std::vector<VarPtr> vars;
  for (int i = 0; i < 4; ++i) vars.push_back(new_var());
  // Each pushing thread keeps its own running list per var; the engine must apply each
  // thread's pushes to a var in that thread's order, interleaved with other threads' whole ops.
  std::vector<std::vector<std::pair<int, int>>> log(4);  // (thread, sequence number) per var
  std::vector<std::thread> pushers;
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&, t] {
      for (int k = 0; k < kOps; ++k) {
        const size_t target = static_cast<size_t>((t + k) % 4), source = static_cast<size_t>((t + k + 1) % 4);
        eng->push([&log, target, t, k] { log[target].emplace_back(t, k); }, {vars[source]}, {vars[target]},
                  "append");
      }
    });
  }
  for (auto& p : pushers) p.join();
  eng->wait_all();
  size_t total = 0;
  for (const auto& entries : log) {
    total += entries.size();
    std::vector<int> last(kThreads, -1);
    for (auto [t, k] : entries) {
      EXPECT_GT(k, last[static_cast<size_t>(t)]) << "thread " << t << "'s writes ran out of order";
      last[static_cast<size_t>(t)] = k;
    }
  }
  EXPECT_EQ(total, static_cast<size_t>(kThreads * kOps));
}

TEST(Engine, ChainsThroughVarsKeepDataDependencies) {
  // a -> b -> c pipelines: c must see the final b, which must see the final a.
  auto eng = make_threaded_engine(4);
  auto a = new_var(), b = new_var(), c = new_var();
  int va = 0, vb = 0, vc = 0;
  for (int i = 1; i <= 200; ++i) {
    eng->push([&va, i] { va = i; }, {}, {a}, "set a");
    eng->push([&] { vb = va * 2; }, {a}, {b}, "b from a");
    eng->push([&] { vc = vb + 1; }, {b}, {c}, "c from b");
    eng->wait_for_var(c);
    ASSERT_EQ(vc, 2 * i + 1);
  }
}

TEST(Engine, ErrorSurfacesAtTheWrittenVarWithTheOpName) {
  auto eng = make_threaded_engine(2);
  auto bad = new_var(), downstream = new_var(), unrelated = new_var();
  bool downstream_ran = false;
  eng->push([] { throw Error(ErrorCode::kShapeMismatch, "boom"); }, {}, {bad}, "Exploder");
  eng->push([&] { downstream_ran = true; }, {bad}, {downstream}, "Consumer");
  int unrelated_value = 0;
  eng->push([&] { unrelated_value = 7; }, {}, {unrelated}, "Fine");
  try {
    eng->wait_for_var(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kShapeMismatch);
    EXPECT_NE(std::string(e.what()).find("Exploder"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("boom"), std::string::npos) << e.what();
  }
  // The consumer did not run, and its output carries the same error.
  EXPECT_THROW(eng->wait_for_var(downstream), Error);
  EXPECT_FALSE(downstream_ran);
  eng->wait_for_var(unrelated);
  EXPECT_EQ(unrelated_value, 7);
  EXPECT_THROW(eng->wait_all(), Error);
  // The engine keeps working, and a successful write clears the error.
  eng->push([] {}, {}, {bad}, "Overwrite");
  EXPECT_NO_THROW(eng->wait_for_var(bad));
  EXPECT_NO_THROW(eng->wait_all());
}

// try_wait_for_var answers without blocking: false while a write is pending or running, true
// (or the writer's error) once it is done; readers do not count.
TEST(Engine, TryWaitForVarDoesNotBlock) {
  auto eng = make_threaded_engine(2);
  auto v = new_var(), failed = new_var();
  EXPECT_TRUE(eng->try_wait_for_var(v));
  std::atomic<bool> release{false};
  eng->push(
      [&] {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      {}, {v}, "held writer");
  EXPECT_FALSE(eng->try_wait_for_var(v));
  release = true;
  eng->wait_for_var(v);
  EXPECT_TRUE(eng->try_wait_for_var(v));
  release = false;
  eng->push(
      [&] {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      },
      {v}, {}, "held reader");
  EXPECT_TRUE(eng->try_wait_for_var(v));
  release = true;
  eng->push([] { throw Error(ErrorCode::kInvalidArgument, "bad write"); }, {}, {failed}, "Failing");
  EXPECT_THROW(eng->wait_for_var(failed), Error);
  EXPECT_THROW(eng->try_wait_for_var(failed), Error);  // the error stays with the variable
  EXPECT_THROW(eng->wait_all(), Error);
}

TEST(Engine, WaitToWriteWaitsForReaders) {
  auto eng = make_threaded_engine(2);
  auto v = new_var();
  std::atomic<bool> reader_done{false};
  eng->push(
      [&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
        reader_done = true;
      },
      {v}, {}, "slow reader");
  eng->wait_for_var_write(v);
  EXPECT_TRUE(reader_done.load());
}

TEST(Engine, SmallWorkOnFreeVarsRunsOnThePushingThread) {
  auto eng = make_threaded_engine(2);
  auto in = new_var(), out = new_var();
  std::thread::id ran_on;
  eng->push([&] { ran_on = std::this_thread::get_id(); }, {in}, {out}, "small", WorkSize::kSmall);
  EXPECT_EQ(ran_on, std::this_thread::get_id());  // already ran: push() ran it
  EXPECT_EQ(eng->stats().ops_run_by_pusher, 1u);
  eng->wait_for_var(out);
}

TEST(Engine, SmallWorkBehindABusyVarWaitsItsTurnOnAWorker) {
  auto eng = make_threaded_engine(2);
  auto v = new_var(), out = new_var();
  std::atomic<bool> release{false};
  int value = 0, seen = -1;
  std::thread::id ran_on;
  eng->push(
      [&] {
        while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        value = 42;
      },
      {}, {v}, "blocking writer");
  // The small reader cannot run yet, so push() must return without running (or waiting for) it.
  eng->push(
      [&] {
        seen = value;
        ran_on = std::this_thread::get_id();
      },
      {v}, {out}, "small reader", WorkSize::kSmall);
  EXPECT_EQ(eng->stats().ops_run_by_pusher, 0u);
  release = true;
  eng->wait_for_var(out);
  EXPECT_EQ(seen, 42);
  EXPECT_NE(ran_on, std::this_thread::get_id());
}

TEST(Engine, SmallWorkErrorsSurfaceAtWaitsNotAtPush) {
  auto eng = make_threaded_engine(2);
  auto bad = new_var(), downstream = new_var();
  bool downstream_ran = false;
  EXPECT_NO_THROW(eng->push([] { throw Error(ErrorCode::kShapeMismatch, "small boom"); }, {}, {bad},
                            "SmallExploder", WorkSize::kSmall));
  EXPECT_NO_THROW(
      eng->push([&] { downstream_ran = true; }, {bad}, {downstream}, "SmallConsumer", WorkSize::kSmall));
  try {
    eng->wait_for_var(downstream);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("SmallExploder"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(downstream_ran);
  EXPECT_THROW(eng->wait_all(), Error);
  eng->push([] {}, {}, {bad}, "SmallOverwrite", WorkSize::kSmall);
  EXPECT_NO_THROW(eng->wait_for_var(bad));
}

TEST(Engine, SmallAndLongWorkFromManyThreadsKeepsEachThreadsOrder) {
  auto eng = make_threaded_engine(2);
  constexpr int kThreads = 4, kOps = 300;
  auto v = new_var(), other = new_var();
  std::vector<std::pair<int, int>> log;  // (thread, sequence number), appended by writers of v
  std::vector<std::thread> pushers;
  for (int t = 0; t < kThreads; ++t) {
    pushers.emplace_back([&, t] {
      for (int k = 0; k < kOps; ++k) {
        // Mixed sizes: some run on this thread, others on workers, all in one order per var.
        const WorkSize size = (t + k) % 3 == 0 ? WorkSize::kUnknown : WorkSize::kSmall;
        eng->push([&log, t, k] { log.emplace_back(t, k); }, {other}, {v}, "append", size);
      }
    });
  }
  for (auto& p : pushers) p.join();
  eng->wait_all();
  ASSERT_EQ(log.size(), static_cast<size_t>(kThreads * kOps));
  std::vector<int> last(kThreads, -1);
  for (auto [t, k] : log) {
    EXPECT_GT(k, last[static_cast<size_t>(t)]) << "thread " << t << "'s writes ran out of order";
    last[static_cast<size_t>(t)] = k;
  }
}

TEST(Engine, NaiveEngineRunsInline) {
  auto eng = make_naive_engine();
  auto v = new_var();
  int x = 0;
  eng->push([&] { x = 5; }, {}, {v}, "set");
  EXPECT_EQ(x, 5);
  eng->push([] { throw std::runtime_error("plain"); }, {}, {v}, "Thrower");
  try {
    eng->wait_for_var(v);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kRuntime);
    EXPECT_NE(std::string(e.what()).find("Thrower"), std::string::npos);
  }
}

TEST(Engine, DuplicateVarsInReadAndWriteSetsDoNotDeadlock) {
  auto eng = make_threaded_engine(2);
  auto v = new_var();
  int x = 1;
  eng->push([&] { x += 1; }, {v, v}, {v, v}, "self");
  eng->wait_for_var(v);
  EXPECT_EQ(x, 2);
}

}  // namespace
}  // namespace kiln::engine
