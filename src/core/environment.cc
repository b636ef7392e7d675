#include "core/environment.h"

#include <cerrno>
#include <cstdlib>

#include "kiln/environment.hpp"
#include "kiln/error.hpp"

namespace kiln {
namespace env {
namespace {

constexpr int64_t kMaxThreads = 4096;
// 2^40 MiB is a petabyte: far above any machine, and << 20 still fits in 64 bits.
constexpr int64_t kMaxPoolMb = int64_t{1} << 40;

const char* value_of(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

std::optional<int64_t> integer(const char* name, int64_t min, int64_t max) {
  const char* text = value_of(name);
  if (!text) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  const bool parsed =
      end != text && *end == '\0' && errno == 0 && (*text == '-' || (*text >= '0' && *text <= '9'));
  KILN_CHECK(parsed && v >= min && v <= max, ErrorCode::kInvalidArgument, "environment variable ", name, "='",
             text, "': expected a whole number from ", min, " to ", max);
  return v;
}

std::optional<std::string> choice(const char* name, std::initializer_list<const char*> choices) {
  const char* text = value_of(name);
  if (!text) return std::nullopt;
  std::string listed;
  for (const char* c : choices) {
    if (std::string(text) == c) return std::string(text);
    listed += (listed.empty() ? "" : ", ") + std::string(c);
  }
  raise(ErrorCode::kInvalidArgument, "environment variable ", name, "='", text, "': expected one of ",
        listed);
}

std::optional<int64_t> num_threads() {
  return integer("KILN_NUM_THREADS", 1, kMaxThreads);
}

std::optional<int64_t> engine_threads() {
  return integer("KILN_ENGINE_THREADS", 1, kMaxThreads);
}

std::optional<std::string> engine() {
  return choice("KILN_ENGINE", {"threaded", "naive"});
}

std::optional<int64_t> pool_limit_mb() {
  return integer("KILN_POOL_LIMIT_MB", 0, kMaxPoolMb);
}

}  // namespace env

const std::vector<EnvironmentVariable>& environment_variables() {
  static const std::vector<EnvironmentVariable> variables = {
      {"KILN_NUM_THREADS", "a whole number of threads, 1 to 4096",
       "threads of the compute pool, the calling thread included (default: the number of cores)"},
      {"KILN_ENGINE", "threaded or naive",
       "how NDArray operations run: on the engine's worker threads (default) or inside each call"},
      {"KILN_ENGINE_THREADS", "a whole number of threads, 1 to 4096",
       "worker threads of the engine (default 2)"},
      {"KILN_POOL_LIMIT_MB", "a whole number of MiB, 0 or more",
       "how much freed host memory the caching allocator keeps for reuse (default 1024)"},
  };
  return variables;
}

void check_environment() {
  env::num_threads();
  env::engine();
  env::engine_threads();
  env::pool_limit_mb();
}

}  // namespace kiln
