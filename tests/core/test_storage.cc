// Storage's factories: what each storage holds, and that its memory or release callback is
// given back exactly once, when the last owner lets go (each storage and its shared_ptr count
// share one allocation, built through the factory).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kiln/allocator.hpp"
#include "kiln/storage.hpp"

namespace kiln {
namespace {

TEST(Storage, AllocatedMemoryGoesBackToThePoolWithTheLastOwner) {
  const size_t in_use_before = allocator_stats().bytes_in_use;
  std::shared_ptr<Storage> s = Storage::allocate(1000, cpu());
  ASSERT_NE(s->data(), nullptr);
  EXPECT_EQ(s->nbytes(), 1000u);
  EXPECT_EQ(s->device(), cpu());
  EXPECT_GE(allocator_stats().bytes_in_use, in_use_before + 1000);
  std::memset(s->data(), 7, s->nbytes());  // the whole block is writable (ASan checks the bounds)
  std::shared_ptr<Storage> other_owner = s;
  s.reset();
  EXPECT_GE(allocator_stats().bytes_in_use, in_use_before + 1000);
  other_owner.reset();
  EXPECT_EQ(allocator_stats().bytes_in_use, in_use_before);
}

TEST(Storage, AllocatingNothingHoldsNoMemory) {
  std::shared_ptr<Storage> s = Storage::allocate(0, cpu());
  EXPECT_EQ(s->data(), nullptr);
  EXPECT_EQ(s->nbytes(), 0u);
}

TEST(Storage, WrappedMemoryIsReleasedOnceWithTheLastOwner) {
  std::vector<float> buffer(4, 1.5f);
  std::vector<void*> released;
  std::shared_ptr<Storage> s = Storage::wrap(buffer.data(), buffer.size() * sizeof(float), cpu(),
                                             [&](void* p) { released.push_back(p); });
  EXPECT_EQ(s->data(), buffer.data());
  EXPECT_EQ(s->nbytes(), 16u);
  std::shared_ptr<Storage> other_owner = s;
  s.reset();
  EXPECT_TRUE(released.empty());
  other_owner.reset();
  ASSERT_EQ(released.size(), 1u);
  EXPECT_EQ(released[0], buffer.data());
}

TEST(Storage, SmallHostBytesLiveInsideTheStorageAligned) {
  std::shared_ptr<Storage> s = Storage::small_host(8);
  ASSERT_NE(s->data(), nullptr);
  EXPECT_EQ(s->nbytes(), 8u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(s->data()) % 16, 0u);
  // Inside the object: the data lies within the storage's own bytes.
  const auto* object = reinterpret_cast<const std::byte*>(s.get());
  const auto* data = static_cast<const std::byte*>(s->data());
  EXPECT_GE(data, object);
  EXPECT_LE(data + Storage::kSmallBytes, object + sizeof(Storage));
  const double value = 3.25;
  std::memcpy(s->data(), &value, sizeof value);
  double read = 0;
  std::memcpy(&read, s->data(), sizeof read);
  EXPECT_EQ(read, value);
}

}  // namespace
}  // namespace kiln
