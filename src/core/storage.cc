#include "kiln/storage.hpp"

#include <memory>
#include <new>
#include <utility>

#include "caching_allocator.h"
#include "kiln/error.hpp"

namespace kiln {

namespace {
// An allocator for std::allocate_shared that builds the object by calling what it is given. The
// factories below pass lambdas, which may call Storage's private constructor: each storage and
// its shared_ptr count then take one allocation, as std::make_shared gives public constructors,
// instead of two (every new array's storage went through both).
template <class T>
struct BuildInPlace {
  using value_type = T;
  BuildInPlace() = default;
  template <class U>
  BuildInPlace(const BuildInPlace<U>&) {}  // NOLINT: implicit, as an allocator's rebinding is
  T* allocate(size_t n) { return std::allocator<T>().allocate(n); }
  void deallocate(T* p, size_t n) { std::allocator<T>().deallocate(p, n); }
  template <class U, class Build>
  void construct(U* p, Build&& build) {
    build(p);
  }
  template <class U>
  void destroy(U* p) {
    p->~U();
  }
  template <class U>
  bool operator==(const BuildInPlace<U>&) const {
    return true;
  }
};

template <class Build>
std::shared_ptr<Storage> make_storage(Build&& build) {
  return std::allocate_shared<Storage>(BuildInPlace<Storage>(), std::forward<Build>(build));
}
}  // namespace

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  void* p = nbytes ? allocator_for(device).allocate(nbytes) : nullptr;
  try {
    return make_storage([&](Storage* at) { new (at) Storage(Kind::kAllocated, p, nbytes, device); });
  } catch (...) {
    if (p) allocator_for(device).deallocate(p, nbytes);
    throw;
  }
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> release) {
  return make_storage([&](Storage* at) {
    new (at) Storage(Kind::kWrapped, data, nbytes, device);
    at->release_ = std::move(release);
  });
}

std::shared_ptr<Storage> Storage::small_host(size_t nbytes) {
  KILN_CHECK(nbytes <= kSmallBytes, ErrorCode::kInternal, "Storage::small_host: ", nbytes,
             " bytes is not small");
  return make_storage([&](Storage* at) {
    new (at) Storage(Kind::kSmall, nullptr, nbytes, cpu());
    at->data_ = at->small_;
  });
}

Storage::~Storage() {
  switch (kind_) {
    case Kind::kAllocated:
      if (data_) allocator_for(device_).deallocate(data_, nbytes_);
      break;
    case Kind::kWrapped:
      if (release_) release_(data_);
      break;
    case Kind::kSmall:
      break;
  }
}

}  // namespace kiln
