// The LRU program cache with per-key single compilation.
#include "runtime/program_cache.h"

#include <optional>

#include "kiln/error.hpp"

namespace kiln::runtime {

ProgramCache::ProgramCache(size_t capacity) : capacity_(capacity) {
  KILN_CHECK(capacity_ > 0, ErrorCode::kInvalidArgument, "max_cached_plans: expected at least 1, got 0");
}

size_t ProgramCache::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

std::shared_ptr<ProgramCache::Entry> ProgramCache::find_or_compile(const std::string& key,
                                                                   const CompileFn& compile) {
  // Made only on a miss: a promise allocates its shared state, a cost a cached run need not pay.
  std::optional<std::promise<std::shared_ptr<const Program>>> promise;
  std::shared_ptr<Entry> entry;
  bool compiles_here = false;
  {
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end()) {
      recency_.splice(recency_.begin(), recency_, it->second->recency);
      entry = it->second;
    } else {
      entry = std::make_shared<Entry>();
      entry->program = promise.emplace().get_future().share();
      recency_.push_front(key);
      entry->recency = recency_.begin();
      entries_.emplace(key, entry);
      while (entries_.size() > capacity_) {  // never the new entry: it is the most recent
        entries_.erase(recency_.back());
        recency_.pop_back();
      }
      compiles_here = true;
    }
  }
  if (!compiles_here) {
    entry->program.wait();  // another caller is compiling (or has compiled) this key
    return entry;
  }
  try {
    promise->set_value(compile());
  } catch (...) {
    promise->set_exception(std::current_exception());  // callers waiting on this key see the error
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(key); it != entries_.end() && it->second == entry) {
      recency_.erase(entry->recency);
      entries_.erase(it);
    }
    throw;
  }
  return entry;
}

std::vector<Tensor> ProgramCache::run(const std::string& key, const CompileFn& compile,
                                      const std::vector<Tensor>& inputs) {
  const std::shared_ptr<Entry> entry = find_or_compile(key, compile);
  return entry->program.get()->run(inputs);  // get() rethrows a failed compile
}

void append_signature(std::string& key, const Tensor& t, bool with_dtype) {
  // A sequence's consumers run one by one, whatever it holds: its element type is its signature.
  if (!t.defined()) {
    key += "none";
    return;
  }
  if (t.is_sequence()) {
    key += std::string("seq,") + dtype_name(t.dtype());
    return;
  }
  for (int64_t d : t.shape().dims()) key += std::to_string(d) + ',';
  if (with_dtype) key += dtype_name(t.dtype());
}

}  // namespace kiln::runtime
