// ProgramCache: compiled programs, one per input signature (shapes, and the values of the small
// inputs that decide shapes), bounded by an LRU policy. The Predictor keeps one; each stage of a
// StagedProgram keeps one for the sizes its data-dependent nodes produce.
//
// The cache mutex guards only the map and the recency list: a program is compiled outside it,
// once per key (later callers for the same key wait on the first one's future), and a run holds
// no lock of the cache's. An evicted entry lives on while calls still hold it.
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

#include "runtime/program.h"

namespace kiln::runtime {

class ProgramCache {
 public:
  using CompileFn = std::function<std::shared_ptr<const Program>()>;

  explicit ProgramCache(size_t capacity);

  // Runs `inputs` on the program cached under `key`; when there is none, `compile` makes it first.
  // A failed compile is not cached: the next call for the key tries again.
  std::vector<Tensor> run(const std::string& key, const CompileFn& compile,
                          const std::vector<Tensor>& inputs);

  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    std::shared_future<std::shared_ptr<const Program>> program;
    std::list<std::string>::iterator recency;  // position in recency_ while cached
  };

  std::shared_ptr<Entry> find_or_compile(const std::string& key, const CompileFn& compile);

  const size_t capacity_;
  mutable std::mutex mutex_;
  std::list<std::string> recency_;  // keys, most recently used first
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
};

// Appends what a cache key holds of a tensor: its dims and, when `with_dtype`, its element type
// ("8,784,float32").
void append_signature(std::string& key, const Tensor& t, bool with_dtype);

}  // namespace kiln::runtime
