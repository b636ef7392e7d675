// PlanCache: the Predictor's compiled plans, one per input-shape signature, bounded by an LRU
// policy, each with a pool of Executors.
//
// The cache mutex guards only the map and the recency list: a plan is compiled outside it, once
// per key (later callers for the same key wait on the first one's future), and a run holds no
// lock at all; the pool's mutex is taken only to borrow and to give back an Executor. An evicted
// entry lives on while calls still hold it, and its Executors are freed with it.
#pragma once

#include <cstddef>
#include <functional>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/executor.h"

namespace kiln::runtime {

class PlanCache {
 public:
  using CompileFn = std::function<std::shared_ptr<const Plan>()>;

  explicit PlanCache(size_t capacity);

  // Runs `inputs` on the plan cached under `key`; when there is none, `compile` makes it first.
  // A failed compile is not cached: the next call for the key tries again.
  std::vector<Tensor> run(const std::string& key, const CompileFn& compile,
                          const std::vector<Tensor>& inputs);

  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::shared_future<std::shared_ptr<const Plan>> plan;
    std::mutex pool_mutex;
    std::vector<std::unique_ptr<Executor>> idle;  // Executors not running now
    std::list<std::string>::iterator recency;     // position in recency_ while cached
  };

  std::shared_ptr<Entry> find_or_compile(const std::string& key, const CompileFn& compile);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::string> recency_;  // keys, most recently used first
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
};

}  // namespace kiln::runtime
