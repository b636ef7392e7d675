// How long the OpenMP threads of oneDNN's primitives spin before they sleep. libgomp's default
// (300,000 spins, milliseconds) keeps a thread that finished its share spinning on its core while
// its partner waits for a core elsewhere: on a machine shared with other work, every primitive
// then waits for a descheduled thread (`kiln bench --threads 2` on two busy cores: p50s 5-50x
// the fastest call). A short spin (1,000, tens of microseconds) still bridges the gap between
// consecutive primitives, then gives the core up.
//
// libgomp reads the environment once, when it is loaded, before main() (and C library start-up
// resets the environment after the executable's preinit functions), so the program sets
// GOMP_SPINCOUNT and runs itself again. A GOMP_SPINCOUNT or OMP_WAIT_POLICY of the caller's own
// is left alone.
#include <unistd.h>

#include <cstdlib>

#include "cli.h"

namespace kiln::cli {

void spin_openmp_briefly(char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") != nullptr || std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  if (setenv("GOMP_SPINCOUNT", "1000", /*overwrite=*/0) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-run (no /proc): go on with libgomp's default.
}

}  // namespace kiln::cli
