// engine::Work: the callable of one push, movable only. A callable of up to kInlineBytes that moves
// without throwing (a lambda holding a pointer or two, or one owning handle) lives inside the
// object, so a push allocates nothing for it. std::function keeps only trivially copyable callables
// inline: a lambda holding a shared_ptr cost an allocation per NDArray call; and being movable only,
// Work can own what it captures outright.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace kiln::engine {

class Work {
 public:
  static constexpr size_t kInlineBytes = 3 * sizeof(void*);

  Work() = default;
  template <class F>
  requires(!std::is_same_v<std::decay_t<F>, Work> && std::is_invocable_v<std::decay_t<F>&>)
      Work(F&& f) {  // NOLINT: converts any callable, as std::function does
    using Fn = std::decay_t<F>;
    if constexpr (fits_inline<Fn>()) {
      new (storage_) Fn(std::forward<F>(f));
      ops_ = &kInlineOps<Fn>;
    } else {
      *reinterpret_cast<Fn**>(storage_) = new Fn(std::forward<F>(f));
      ops_ = &kHeapOps<Fn>;
    }
  }
  Work(Work&& other) noexcept { take(other); }
  Work& operator=(Work&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  ~Work() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }
  void operator()() { ops_->invoke(storage_); }
  // Destroys the callable (and what it captured).
  void reset() {
    if (ops_) ops_->destroy(storage_);
    ops_ = nullptr;
  }

 private:
  struct Ops {
    void (*invoke)(void* storage);
    void (*move)(void* to, void* from);  // move-constructs into `to` and destroys `from`
    void (*destroy)(void* storage);
  };

  template <class Fn>
  static constexpr bool fits_inline() {
    return sizeof(Fn) <= kInlineBytes && alignof(Fn) <= alignof(std::max_align_t) &&
           std::is_nothrow_move_constructible_v<Fn>;
  }
  template <class Fn>
  static constexpr Ops kInlineOps = {[](void* s) { (*static_cast<Fn*>(s))(); },
                                     [](void* to, void* from) {
                                       new (to) Fn(std::move(*static_cast<Fn*>(from)));
                                       static_cast<Fn*>(from)->~Fn();
                                     },
                                     [](void* s) { static_cast<Fn*>(s)->~Fn(); }};
  template <class Fn>
  static constexpr Ops kHeapOps = {
      [](void* s) { (**static_cast<Fn**>(s))(); },
      [](void* to, void* from) { *static_cast<Fn**>(to) = *static_cast<Fn**>(from); },
      [](void* s) { delete *static_cast<Fn**>(s); }};

  void take(Work& other) {
    if (other.ops_) other.ops_->move(storage_, other.storage_);
    ops_ = std::exchange(other.ops_, nullptr);
  }

  alignas(std::max_align_t) std::byte storage_[kInlineBytes];
  const Ops* ops_ = nullptr;
};

}  // namespace kiln::engine
