// Storage: one block of device memory, shared by every tensor that views it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "kiln/device.hpp"

namespace kiln {

class Storage {
 public:
  // Memory from the device's caching allocator; returned to it when the last owner lets go.
  static std::shared_ptr<Storage> allocate(size_t nbytes, Device device);
  // Memory owned elsewhere (a mapped file, a caller's buffer); `release` runs on destruction.
  static std::shared_ptr<Storage> wrap(void* data, size_t nbytes, Device device,
                                       std::function<void(void*)> release = {});
  // A few bytes of host memory held inside the Storage object itself, for scalars, so that
  // `x += 2` costs no trip to the allocator.
  static std::shared_ptr<Storage> small_host(size_t nbytes);

  static constexpr size_t kSmallBytes = 16;

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  enum class Kind { kAllocated, kWrapped, kSmall };
  Storage(Kind kind, void* data, size_t nbytes, Device device)
      : kind_(kind), data_(data), nbytes_(nbytes), device_(device) {}

  Kind kind_;
  void* data_;
  size_t nbytes_;
  Device device_;
  std::function<void(void*)> release_;
  alignas(16) std::byte small_[kSmallBytes] = {};
};

}  // namespace kiln
