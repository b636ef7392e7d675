// Intra-op parallelism: how many threads one op may use.
#pragma once

namespace kiln {

// Threads of the compute pool, the calling thread included. The default is the number of
// cores, or KILN_NUM_THREADS from the environment.
int num_threads();
// Resizes the compute pool; waits for running parallel regions to end first.
void set_num_threads(int n);

}  // namespace kiln
