// The process-wide seed sequence of unseeded random ops (see kiln/random.hpp).
#include "kiln/random.hpp"

#include <mutex>
#include <random>

namespace kiln::random {
namespace {

struct SeedSequence {
  std::mutex mutex;
  std::mt19937_64 generator{std::random_device{}()};
};

SeedSequence& sequence() {
  static SeedSequence s;
  return s;
}

}  // namespace

void seed(uint64_t value) {
  SeedSequence& s = sequence();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.generator.seed(value);
}

uint64_t next_seed() {
  SeedSequence& s = sequence();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.generator();
}

}  // namespace kiln::random
