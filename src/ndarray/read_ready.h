// Whether an array can be read at once: for callers holding a lock of their own (Python's GIL)
// that they should give up only when a wait is coming, since releasing and retaking it costs as
// much as a small op.
#pragma once

#include "kiln/ndarray.hpp"

namespace kiln::nd {

// True (after rethrowing the error of the op that wrote `a`, if any) when no pending op writes
// `a`, so that wait_to_read() would return at once; false when it would block.
bool try_wait_to_read(const NDArray& a);

}  // namespace kiln::nd
