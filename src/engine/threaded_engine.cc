#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <future>
#include <mutex>
#include <string>
#include <thread>

#include "core/environment.h"
#include "core/object_cache.h"
#include "engine.h"
#include "kiln/error.hpp"
#include "kiln/profiler.hpp"

namespace kiln::engine {

VarPtr new_var() {
  return std::make_shared<Var>();
}

struct OpBlock {
  Work fn;
  const char* name = nullptr;  // the pusher's, which outlives the op
  VarList reads, writes;
  bool is_sync = false;          // a wait marker: it neither runs user work nor touches errors
  std::atomic<int> blockers{0};  // vars not yet granted, plus one held by push() itself
};

namespace {

// Grants the front of `var`'s queue; ops whose last blocker this was are appended to `ready`.
// Call with var.mutex held.
void grant(Var& var, std::vector<OpBlock*>& ready) {
  while (var.has_waiting()) {
    auto [op, is_write] = var.front();
    if (is_write) {
      if (var.active_write || var.active_reads > 0) return;
      var.active_write = true;
    } else {
      if (var.active_write) return;
      ++var.active_reads;
    }
    var.pop_front();
    if (op->blockers.fetch_sub(1) == 1) ready.push_back(op);
    if (is_write) return;
  }
}

// Drops null vars, repeated vars and reads of written vars, in place (no allocation: this runs
// on every push).
void remove_duplicates(VarList& reads, VarList& writes) {
  auto contains = [](const VarList& v, const VarPtr& x, size_t end) {
    for (size_t i = 0; i < end; ++i)
      if (v[i] == x) return true;
    return false;
  };
  auto keep = [](VarList& v, size_t i, size_t& kept) {
    if (i != kept) v[kept] = std::move(v[i]);
    ++kept;
  };
  size_t kept_writes = 0;
  for (size_t i = 0; i < writes.size(); ++i)
    if (writes[i] && !contains(writes, writes[i], kept_writes)) keep(writes, i, kept_writes);
  writes.truncate(kept_writes);
  size_t kept_reads = 0;
  for (size_t i = 0; i < reads.size(); ++i)
    if (reads[i] && !contains(writes, reads[i], kept_writes) && !contains(reads, reads[i], kept_reads))
      keep(reads, i, kept_reads);
  reads.truncate(kept_reads);
}

class ThreadedEngine final : public Engine {
 public:
  // num_workers == 0: the naive engine, which runs every op inside push().
  explicit ThreadedEngine(int num_workers) {
    for (int i = 0; i < num_workers; ++i) workers_.emplace_back([this] { worker_loop(); });
  }

  ~ThreadedEngine() override {
    wait_until_idle();
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      stopping_ = true;
    }
    queue_cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  void push(Work fn, VarList&& reads, VarList&& writes, const char* name, WorkSize size) override {
    push_block(std::move(fn), std::move(reads), std::move(writes), name, false, size);
  }

  void wait_for_var(const VarPtr& var) override {
    if (try_wait_for_var(var)) return;
    // A reader of `var` runs after every earlier writer: once it runs, the var is ready.
    wait_on_marker(var, false);
  }

  bool try_wait_for_var(const VarPtr& var) override {
    std::lock_guard<std::mutex> lock(var->mutex);
    if (var->has_waiting() || var->active_write) return false;
    if (var->error) std::rethrow_exception(var->error);
    return true;
  }

  void wait_for_var_write(const VarPtr& var) override {
    {
      std::lock_guard<std::mutex> lock(var->mutex);
      if (!var->has_waiting() && !var->active_write && var->active_reads == 0) {
        if (var->error) std::rethrow_exception(var->error);
        return;
      }
    }
    wait_on_marker(var, true);
  }

  void wait_all() override {
    wait_until_idle();
    std::lock_guard<std::mutex> lock(error_mutex_);
    if (first_error_) {
      auto e = first_error_;
      first_error_ = nullptr;
      std::rethrow_exception(e);
    }
  }

  int num_workers() const override { return static_cast<int>(workers_.size()); }

  EngineStats stats() const override {
    return {pushed_.load(), completed_.load(), failed_.load(), by_pusher_.load()};
  }

 private:
  void wait_on_marker(const VarPtr& var, bool as_writer) {
    std::promise<void> done;
    auto future = done.get_future();
    VarList vars{var}, none;
    push_block([&done] { done.set_value(); }, as_writer ? std::move(none) : std::move(vars),
               as_writer ? std::move(vars) : std::move(none), "wait_for_var", true, WorkSize::kUnknown);
    future.wait();
    std::lock_guard<std::mutex> lock(var->mutex);
    if (var->error) std::rethrow_exception(var->error);
  }

  void push_block(Work fn, VarList&& reads, VarList&& writes, const char* name, bool is_sync, WorkSize size) {
    remove_duplicates(reads, writes);
    // Owned by the engine from here until finish() returns it to the cache.
    OpBlock* op = ObjectCache<OpBlock>::acquire();
    op->fn = std::move(fn);
    op->name = name;
    op->reads = std::move(reads);
    op->writes = std::move(writes);
    op->is_sync = is_sync;
    op->blockers = static_cast<int>(op->reads.size() + op->writes.size()) + 1;
    pending_.fetch_add(1);
    pushed_.fetch_add(1, std::memory_order_relaxed);
    std::vector<OpBlock*> ready;
    {
      // Pushes enter their vars' queues one whole op at a time. Otherwise two threads pushing
      // (read A, write B) and (read B, write A) could each get in first on one var and wait on
      // the other forever; with one push order for all vars, dependencies always form a DAG.
      std::lock_guard<std::mutex> order(push_order_mutex_);
      for (auto& v : op->reads) enqueue(*v, op, false, ready);
      for (auto& v : op->writes) enqueue(*v, op, true, ready);
    }
    if (op->blockers.fetch_sub(1) == 1) {
      if (size == WorkSize::kSmall && !workers_.empty()) {
        // Granted everything at once: running it here is cheaper than waking a worker and later
        // waiting for it. What it unblocks may be long, so that goes to the workers.
        by_pusher_.fetch_add(1, std::memory_order_relaxed);
        execute(op, ready);
      } else {
        ready.push_back(op);
      }
    }
    dispatch(ready);
  }

  static void enqueue(Var& var, OpBlock* op, bool is_write, std::vector<OpBlock*>& ready) {
    std::lock_guard<std::mutex> lock(var.mutex);
    // Nothing waiting and access free: grant it here, as grant() would right after queueing it,
    // without the queue entry. A new array's var is then never queued on (its queue would
    // allocate) unless an op has to wait for it.
    if (!var.has_waiting() && !var.active_write && (!is_write || var.active_reads == 0)) {
      if (is_write) {
        var.active_write = true;
      } else {
        ++var.active_reads;
      }
      if (op->blockers.fetch_sub(1) == 1) ready.push_back(op);
      return;
    }
    var.waiting.emplace_back(op, is_write);
    grant(var, ready);
  }

  void dispatch(std::vector<OpBlock*>& ready) {
    if (ready.empty()) return;
    if (workers_.empty()) {  // naive: run here, including whatever each op unblocks
      while (!ready.empty()) {
        OpBlock* op = ready.back();
        ready.pop_back();
        execute(op, ready);
      }
      return;
    }
    int sleeping;
    {
      std::lock_guard<std::mutex> lock(queue_mutex_);
      for (OpBlock* op : ready) queue_.push_back(op);
      sleeping = sleeping_workers_;
    }
    // Waking a worker costs a system call; busy workers find the new ops on their own.
    if (sleeping > 0) {
      if (ready.size() == 1) {
        queue_cv_.notify_one();
      } else {
        queue_cv_.notify_all();
      }
    }
    ready.clear();
  }

  void worker_loop() {
    std::vector<OpBlock*> ready;
    for (;;) {
      OpBlock* op;
      {
        std::unique_lock<std::mutex> lock(queue_mutex_);
        ++sleeping_workers_;
        queue_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
        --sleeping_workers_;
        if (queue_.empty()) return;
        op = queue_.front();
        queue_.pop_front();
      }
      // Run the op, then directly run one op it unblocked (a chain stays on this thread
      // without a trip through the queue); hand the others to the queue.
      while (op) {
        execute(op, ready);
        op = nullptr;
        if (!ready.empty()) {
          op = ready.back();
          ready.pop_back();
          dispatch(ready);
        }
      }
    }
  }

  // Runs `op` (or skips it when an input holds an error), releases its vars and appends the
  // ops that became ready.
  void execute(OpBlock* op, std::vector<OpBlock*>& ready) {
    if (op->is_sync) {
      op->fn();
      finish(op, ready, nullptr, true);
      return;
    }
    std::exception_ptr error;
    for (auto& v : op->reads) {
      std::lock_guard<std::mutex> lock(v->mutex);
      if (v->error) {
        error = v->error;
        break;
      }
    }
    if (!error) {
      const profiler::OpScope timed(op->name);  // one relaxed atomic load when not profiling
      try {
        op->fn();
      } catch (const Error& e) {
        error = std::make_exception_ptr(
            Error(e.code(), std::string("async op '") + op->name + "' failed: " + e.what()));
      } catch (const std::exception& e) {
        error = std::make_exception_ptr(
            Error(ErrorCode::kRuntime, std::string("async op '") + op->name + "' failed: " + e.what()));
      } catch (...) {
        error =
            std::make_exception_ptr(Error(ErrorCode::kRuntime, std::string("async op '") + op->name +
                                                                   "' failed with a non-standard exception"));
      }
      if (error) {
        failed_.fetch_add(1, std::memory_order_relaxed);
        std::lock_guard<std::mutex> lock(error_mutex_);
        if (!first_error_) first_error_ = error;
      }
    }
    finish(op, ready, error, false);
  }

  // Releases `op`'s vars (recording `error` on what it wrote, unless it is a wait marker) and
  // returns the block to the cache.
  void finish(OpBlock* op, std::vector<OpBlock*>& ready, std::exception_ptr error, bool keep_errors) {
    op->fn.reset();  // release captured arrays before their vars are released
    for (auto& v : op->reads) {
      std::lock_guard<std::mutex> lock(v->mutex);
      --v->active_reads;
      grant(*v, ready);
    }
    for (auto& v : op->writes) {
      std::lock_guard<std::mutex> lock(v->mutex);
      v->active_write = false;
      if (!keep_errors) v->error = error;  // a successful write clears an earlier error
      grant(*v, ready);
    }
    op->reads.clear();
    op->writes.clear();
    ObjectCache<OpBlock>::release(op);
    completed_.fetch_add(1, std::memory_order_relaxed);
    // Most ops that empty the engine (every small op run by its pusher) have no one to wake.
    // Both sides use sequentially consistent atomics: either a waiter registered before this
    // reads idle_waiters_, or the waiter reads pending_ after this decrement and does not sleep.
    if (pending_.fetch_sub(1) == 1 && idle_waiters_.load() > 0) {
      std::lock_guard<std::mutex> lock(idle_mutex_);
      idle_cv_.notify_all();
    }
  }

  void wait_until_idle() {
    std::unique_lock<std::mutex> lock(idle_mutex_);
    idle_waiters_.fetch_add(1);
    idle_cv_.wait(lock, [&] { return pending_.load() == 0; });
    idle_waiters_.fetch_sub(1);
  }

  std::vector<std::thread> workers_;
  std::mutex push_order_mutex_;
  std::mutex queue_mutex_;
  std::condition_variable queue_cv_;
  std::deque<OpBlock*> queue_;
  int sleeping_workers_ = 0;  // workers inside queue_cv_.wait, guarded by queue_mutex_
  bool stopping_ = false;

  std::atomic<int64_t> pending_{0};
  std::mutex idle_mutex_;
  std::condition_variable idle_cv_;
  std::atomic<int> idle_waiters_{0};  // threads in wait_until_idle()

  std::mutex error_mutex_;
  std::exception_ptr first_error_;

  std::atomic<uint64_t> pushed_{0}, completed_{0}, failed_{0}, by_pusher_{0};
};

}  // namespace

std::unique_ptr<Engine> make_threaded_engine(int num_workers) {
  KILN_CHECK(num_workers >= 1, ErrorCode::kInvalidArgument, "engine: expected at least one worker, got ",
             num_workers);
  return std::make_unique<ThreadedEngine>(num_workers);
}

std::unique_ptr<Engine> make_naive_engine() {
  return std::make_unique<ThreadedEngine>(0);
}

Engine& get() {
  // Never destroyed: arrays owned by static objects may push their last ops during exit.
  static Engine& engine = []() -> Engine& {
    if (env::engine() == "naive") return *make_naive_engine().release();
    return *make_threaded_engine(static_cast<int>(env::engine_threads().value_or(2))).release();
  }();
  return engine;
}

}  // namespace kiln::engine
