// The one place where the NDArray layer meets autograd, which sits above it: while a thread
// records (autograd::record()), t_op_recorder points at the tape and every op call made through
// nd::invoke, and every view of a recorded array, is reported to it. Not recording costs one
// thread-local load per call.
#pragma once

#include <string>
#include <vector>

#include "kiln/attrs.hpp"
#include "kiln/ndarray.hpp"

namespace kiln::detail {

class OpRecorder {
 public:
  virtual ~OpRecorder() = default;
  // `op` ran on `inputs` giving `outputs`; the recorder may attach autograd entries to outputs.
  virtual void record(const std::string& op, const AttrMap& attrs, const std::vector<NDArray>& inputs,
                      std::vector<NDArray>& outputs) = 0;
  // `op` writes into existing arrays (invoke_into, +=); throws when that would corrupt a
  // recorded graph.
  virtual void check_write(const std::string& op, const std::vector<NDArray>& inputs,
                           const std::vector<NDArray>& outputs) = 0;
  // True for a trace (hybridize), whose calls run only to record the graph: their values are
  // discarded, so random ops among them take no seed of kiln::random's sequence.
  virtual bool discards_values() const { return false; }
};

// Null while this thread is not recording. constinit: no dynamic initialization, so reading it
// needs no TLS wrapper call.
extern constinit thread_local OpRecorder* t_op_recorder;

}  // namespace kiln::detail
