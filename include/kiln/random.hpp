// The seed source of random ops that are not given a seed (Dropout in training mode without its
// `seed` attribute): MXNet's mx.random.seed. Each such op call takes the next seed from one
// process-wide generator, so after seed(s) a program that makes the same calls in the same order
// draws the same masks, whether it runs op by op or hybridized. Without seed() the generator
// starts from std::random_device.
#pragma once

#include <cstdint>

namespace kiln::random {

// Restarts the sequence of seeds (thread-safe).
void seed(uint64_t value);
// The next seed of the sequence (thread-safe).
uint64_t next_seed();

// A 64-bit hash of (seed, counter) with SplitMix64's finalizer: the counter-th output of the
// SplitMix64 stream that starts at `seed`. Kernels draw element i's random bits from
// counter_hash(seed, i), so a draw does not depend on the order or the threads that compute it.
constexpr uint64_t counter_hash(uint64_t seed, uint64_t counter) {
  uint64_t z = seed + (counter + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace kiln::random
