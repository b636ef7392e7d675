// ObjectCache<T>: recycles the objects of one type (one size class) through a free list per
// thread. For the short-lived blocks made on every NDArray call (the engine's op block, the pending
// op call): they skip the allocator, and keep the capacity of the vectors they hold, so refilling
// them allocates nothing either. Thread-safe without a lock, as MXNet's engine does it: each thread
// takes from and returns to its own list; an object made on one thread and returned on another
// (a worker finishing an op) joins the returning thread's list, which keeps at most kMaxCached.
#pragma once

#include <cstddef>
#include <vector>

namespace kiln {

template <class T>
class ObjectCache {
 public:
  static constexpr size_t kMaxCached = 64;

  // A cached object (as its last user left it, so the caller resets what it needs) or a new one.
  static T* acquire() {
    if (!t_closed) {
      std::vector<T*>& free = list().items;
      if (!free.empty()) {
        T* object = free.back();
        free.pop_back();
        return object;
      }
    }
    return new T();
  }

  // Takes `object` back; the caller has released what it holds that others may wait for.
  static void release(T* object) {
    if (!t_closed) {
      std::vector<T*>& free = list().items;
      if (free.size() < kMaxCached) {
        free.push_back(object);
        return;
      }
    }
    delete object;
  }

 private:
  struct List {
    List() { items.reserve(kMaxCached); }
    ~List() {
      for (T* object : items) delete object;
      t_closed = true;  // objects released later in this thread's exit are deleted at once
    }
    std::vector<T*> items;
  };
  static List& list() {
    thread_local List cached;
    return cached;
  }
  static constinit thread_local bool t_closed;
};

template <class T>
constinit thread_local bool ObjectCache<T>::t_closed = false;

}  // namespace kiln
