// Tracing and CachedOp: what HybridBlock::hybridize runs on.
//
// trace() runs a function imperatively on example arrays while an OpRecorder builds a Graph of
// every nd::invoke it makes (and every view it takes of a traced array). CachedOp runs such a
// graph through the runtime instead of op by op: compiled once per input shape signature (a
// bounded cache), with the fast kernels; while autograd records, one call is ONE tape entry whose
// backward runs the compiled gradient graph (graph_gradient.h).
//
//   CachedOp op(forward_fn, {{"data", false}, {"dense0_weight", true}, {"dense0_bias", true}});
//   std::vector<NDArray> y = op({x, weight, bias});   // traces on first use, then compiled
//
// Training and predict mode (autograd::is_training()) are traced and cached separately, since
// Dropout and BatchNorm compute different things in each.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "kiln/ndarray.hpp"

namespace kiln::autograd {

// The traced function: one array per input (data inputs first, then parameters), returns its
// outputs.
using TracedFunction = std::function<std::vector<NDArray>(const std::vector<NDArray>& inputs)>;

struct TraceInput {
  std::string name;  // the graph input's name
  // Marks a block's parameter. Every input, parameter or not, is also recognised when the
  // function reads the array itself (the same storage and view) instead of the argument it was
  // given, as a Gluon block reading param.data() does.
  bool is_parameter = false;
};

// A traced function as a Graph. Graph inputs are the trace inputs, in order, with the examples'
// shapes and dtypes. Graph outputs are the function's outputs, then one value per state update:
// a traced write of a value into an input array (nd::invoke_into("Identity", {value}, {input}),
// as BatchNorm's running statistics are written in training mode), which a CachedOp applies
// after each run. Arrays the function reads that are neither traced values nor inputs become
// constants (their values at trace time).
struct TracedGraph {
  graph::Graph graph;
  int num_outputs = 0;
  std::vector<int> state_updates;  // per extra graph output: the index of the input it overwrites
};

// Runs `fn` once on `examples` (one per entry of `inputs`) with the training flag set to
// `training`, recording everything it calls, whatever the recording state (autograd::pause()
// inside `fn` is traced too). Op calls on constants alone are not recorded: their results become
// constants, so random ops without a traced input draw once, at trace time. Writes into input
// arrays are undone when the trace ends (a CachedOp applies them per run). Throws kiln::Error when
// `fn` writes into a traced array with an op the trace cannot replay (one with attributes).
TracedGraph trace(const TracedFunction& fn, const std::vector<TraceInput>& inputs,
                  const std::vector<NDArray>& examples, bool training);

struct CachedOpOptions {
  // Compiled input shape signatures kept per mode; the least recently used is dropped beyond it.
  size_t max_cached_signatures = 8;
};

class CachedOp {
 public:
  // Traces `fn` per mode and per input shape signature (a traced graph may have shapes baked in).
  CachedOp(TracedFunction fn, std::vector<TraceInput> inputs, CachedOpOptions options = {});
  // One given graph for both modes (its inputs in call order; outputs as TracedGraph's).
  explicit CachedOp(TracedGraph graph, CachedOpOptions options = {});
  ~CachedOp();
  CachedOp(const CachedOp&) = delete;
  CachedOp& operator=(const CachedOp&) = delete;

  // Runs the graph on `inputs` (one per trace input, in order) in the current mode and returns
  // its outputs (state updates are written into their inputs). When autograd is recording and an
  // input needs a gradient, the call is recorded as one tape entry: backward() then runs the
  // compiled gradient graph and hands each input its gradient, honouring its GradReq.
  std::vector<NDArray> operator()(const std::vector<NDArray>& inputs);

  // Compiled signatures held now (both modes together).
  size_t num_cached() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kiln::autograd
