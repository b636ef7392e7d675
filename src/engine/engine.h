// The asynchronous dependency engine. Work is pushed with the variables it reads and writes;
// the engine runs it once every earlier write to what it reads, and every earlier read or write
// of what it writes, has finished. Reads of one variable run concurrently; writes run alone and
// in push order. This is MXNet's engine model (PushAsync with const and mutable vars).
//
// Errors: an exception thrown by pushed work is stored, with the op's name, on every variable
// the work writes. Work that reads a variable holding an error does not run and passes the
// error on to what it writes. wait_for_var() rethrows the variable's error; wait_all() rethrows
// the first error since the previous wait_all(). The engine itself keeps running.
#pragma once

#include <exception>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/small_vector.h"
#include "engine/work.h"

namespace kiln::engine {

struct OpBlock;

// A dependency token. Its queue holds the ops waiting for it in push order; the front ops are
// granted access as the rule allows: any number of readers together, or one writer alone.
// Defined here, not in the engine's file, so that an owner can hold one inside itself (an NDArray's
// chunk does, which saves an allocation per array); only the engine touches its members.
class Var {
 public:
  // The waiting ops in push order, (op, is_write), from index `head` on. A vector with a head
  // index rather than a deque: most arrays see a handful of ops, and an empty deque already
  // allocates.
  bool has_waiting() const { return head < waiting.size(); }
  std::pair<OpBlock*, bool> front() const { return waiting[head]; }
  void pop_front() {
    if (++head == waiting.size()) {
      waiting.clear();
      head = 0;
    }
  }

  std::mutex mutex;
  std::vector<std::pair<OpBlock*, bool>> waiting;
  size_t head = 0;
  int active_reads = 0;
  bool active_write = false;
  std::exception_ptr error;
};

using VarPtr = std::shared_ptr<Var>;
// The variables one push reads or writes: an op call has a few, kept inside the list.
using VarList = SmallVector<VarPtr, 4>;

VarPtr new_var();

// What the pusher knows about how long its work runs.
//   kUnknown: a worker runs it, so push() returns at once however long the work takes.
//   kSmall: work shorter than the hand-off to a worker (a wake-up on one thread, a wait on the
//   other). When every variable it uses is free at push time it runs at once on the pushing
//   thread; otherwise it waits its turn in the queues and a worker runs it like any other op.
//   Either way errors are stored on its written variables, never thrown by push().
enum class WorkSize { kUnknown, kSmall };

struct EngineStats {
  uint64_t ops_pushed = 0;
  uint64_t ops_completed = 0;
  uint64_t ops_failed = 0;
  uint64_t ops_run_by_pusher = 0;  // WorkSize::kSmall ops that ran inside push()
};

class Engine {
 public:
  virtual ~Engine() = default;

  // Schedules `fn`. A variable listed in both sets counts as written; duplicates are ignored.
  // The lists are taken over (moved from); `name`, which errors and profiles show, is not copied:
  // it must outlive the op (a literal, or a registered op schema's name). Taking the lists by
  // reference and the name by pointer saves a small op's push four list moves and a string.
  virtual void push(Work fn, VarList&& reads, VarList&& writes, const char* name,
                    WorkSize size = WorkSize::kUnknown) = 0;
  // Blocks until all work pushed so far that writes `var` has finished; rethrows its error.
  virtual void wait_for_var(const VarPtr& var) = 0;
  // wait_for_var() without blocking: true (after rethrowing the error of the work that wrote
  // `var`, if any) when no work pushed so far that writes `var` is pending or running, else false.
  virtual bool try_wait_for_var(const VarPtr& var) = 0;
  // Blocks until all work pushed so far that reads or writes `var` has finished (so that the
  // caller may write it directly); rethrows its error.
  virtual void wait_for_var_write(const VarPtr& var) = 0;
  // Blocks until every pushed op has finished; rethrows the first error since the last call.
  virtual void wait_all() = 0;
  virtual int num_workers() const = 0;
  virtual EngineStats stats() const = 0;
};

// The process-wide engine. KILN_ENGINE=naive runs every op synchronously in push() (for
// debugging); otherwise KILN_ENGINE_THREADS worker threads (default 2) run ready ops.
Engine& get();

// A fresh engine, for tests that need one of their own.
std::unique_ptr<Engine> make_threaded_engine(int num_workers);
std::unique_ptr<Engine> make_naive_engine();

}  // namespace kiln::engine
