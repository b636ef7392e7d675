// The environment variables Kiln reads. Each is checked where it is read: a malformed value is a
// kiln::Error(kInvalidArgument) naming the variable and what it takes, never a silent default.
// The kiln command and the Python module check them all at start-up (check_environment), so a
// typo fails before any work starts.
#pragma once

#include <string>
#include <vector>

namespace kiln {

struct EnvironmentVariable {
  std::string name;   // "KILN_NUM_THREADS"
  std::string takes;  // "a whole number of threads, 1 to 4096"
  std::string does;   // what it changes
};

// Every variable the library reads, for help texts and docs.
const std::vector<EnvironmentVariable>& environment_variables();

// Reads and checks every variable of environment_variables() that is set; throws kiln::Error
// (kInvalidArgument) for the first malformed one.
void check_environment();

}  // namespace kiln
