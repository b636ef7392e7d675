#include "kiln/storage.hpp"

#include "caching_allocator.h"
#include "kiln/error.hpp"

namespace kiln {

std::shared_ptr<Storage> Storage::allocate(size_t nbytes, Device device) {
  void* p = nbytes ? allocator_for(device).allocate(nbytes) : nullptr;
  return std::shared_ptr<Storage>(new Storage(Kind::kAllocated, p, nbytes, device));
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> release) {
  std::shared_ptr<Storage> s(new Storage(Kind::kWrapped, data, nbytes, device));
  s->release_ = std::move(release);
  return s;
}

std::shared_ptr<Storage> Storage::small_host(size_t nbytes) {
  KILN_CHECK(nbytes <= kSmallBytes, ErrorCode::kInternal, "Storage::small_host: ", nbytes,
             " bytes is not small");
  std::shared_ptr<Storage> s(new Storage(Kind::kSmall, nullptr, nbytes, cpu()));
  s->data_ = s->small_;
  return s;
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
