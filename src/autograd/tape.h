// The tape: the graph autograd records. Each recorded op call is a TapeNode holding what its
// gradient rule reads (the bound attributes, the input and output values); each recorded array
// holds an AutogradEntry naming the node and output that produced it. Variables
// (attach_grad) are nodes without an op that own the gradient buffer.
//
// The graph lives only in these shared pointers: arrays keep their producers alive, nodes keep
// the nodes of their inputs alive, and nothing points forward, so there are no cycles (saved
// values are held without their entries).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kiln/ndarray.hpp"
#include "ndarray/autograd_hook.h"
#include "ops/op_schema.h"

namespace kiln::autograd {

// A recorded call of more than one op (a CachedOp running a compiled graph): it computes its
// inputs' gradients itself instead of through an op's gradient rule.
class TapeFunction {
 public:
  virtual ~TapeFunction() = default;
  // How errors name the call, e.g. "CachedOp 'mlp'".
  virtual std::string label() const = 0;
  // One gradient per input (undefined where none flows or `wanted` is false), from one gradient
  // per output (undefined where none flows).
  virtual std::vector<NDArray> backward(const std::vector<NDArray>& output_grads,
                                        const std::vector<bool>& wanted) = 0;
  // The same gradients for autograd::grad(..., create_graph): computed by recorded op calls, so
  // that they can be differentiated again. `inputs` are the call's inputs with their autograd
  // entries; `output_grads` may be recorded arrays themselves.
  virtual std::vector<NDArray> recorded_backward(const std::vector<NDArray>& inputs,
                                                 const std::vector<NDArray>& output_grads,
                                                 const std::vector<bool>& wanted) = 0;
};

struct TapeNode {
  // A recorded op call; null for a variable and for a function call.
  const ops::OpSchema* schema = nullptr;
  std::shared_ptr<TapeFunction> function;  // a recorded function call
  Attrs attrs;
  std::vector<NDArray> inputs;                                        // undefined for missing optional inputs
  std::vector<std::shared_ptr<detail::AutogradEntry>> input_entries;  // null: no gradient flows
  std::vector<NDArray> outputs;
  bool freed = false;  // a backward without retain_graph released the saved values

  // A variable's gradient buffer and how backward writes it.
  NDArray grad;
  GradReq grad_req = GradReq::kNull;

  bool is_variable() const { return schema == nullptr && function == nullptr; }
  // "Conv" or "CachedOp 'mlp'": how errors name a recorded call.
  std::string label() const { return function != nullptr ? function->label() : schema->name(); }
  // Whether gradients flowing into this node reach a variable that takes them.
  bool requires_grad = false;
};

// Records `function` called on `inputs` giving `outputs` (attaching autograd entries to the
// floating-point outputs) when autograd records and an input needs a gradient; otherwise does
// nothing.
void record_function(std::shared_ptr<TapeFunction> function, const std::vector<NDArray>& inputs,
                     std::vector<NDArray>& outputs);

// The gradients of `heads` (seeded with `head_grads`, one per head) with respect to `targets`,
// recorded as autograd::grad(..., create_graph) records them. Each target is the only output of
// a recorded call of its own (an Identity of the array wanted): the walk stops there, so that
// nothing beyond the targets is differentiated. Undefined where no gradient reaches a target.
std::vector<NDArray> recorded_gradients(const std::vector<NDArray>& heads,
                                        const std::vector<NDArray>& head_grads,
                                        const std::vector<NDArray>& targets);

// While a trace runs (cached_op.h), every op call is reported to `tracer` whatever the recording
// state; null ends it. Returns the previous tracer.
detail::OpRecorder* set_tracer(detail::OpRecorder* tracer);
bool is_tracing();

}  // namespace kiln::autograd

namespace kiln::detail {

struct AutogradEntry {
  std::shared_ptr<autograd::TapeNode> node;
  int output = 0;
};

}  // namespace kiln::detail
