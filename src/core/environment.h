// Typed reads of the environment variables listed in kiln/environment.hpp. Unset (or empty) is
// std::nullopt; a value that does not parse or is out of range throws kiln::Error
// (kInvalidArgument) naming the variable, the value and what it takes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace kiln::env {

// A whole number in [min, max], written in decimal with nothing around it.
std::optional<int64_t> integer(const char* name, int64_t min, int64_t max);
// One of `choices`, exactly.
std::optional<std::string> choice(const char* name, std::initializer_list<const char*> choices);

// The variables the library reads, parsed; each a single definition used by its reader and by
// check_environment().
std::optional<int64_t> num_threads();     // KILN_NUM_THREADS
std::optional<int64_t> engine_threads();  // KILN_ENGINE_THREADS
std::optional<std::string> engine();      // KILN_ENGINE: "threaded" or "naive"
std::optional<int64_t> pool_limit_mb();   // KILN_POOL_LIMIT_MB

}  // namespace kiln::env
