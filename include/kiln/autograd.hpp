// Imperative automatic differentiation over NDArray, as in MXNet's mx.autograd:
//
//   NDArray x = nd::array<float>({1, 2, 3}, {3});
//   x.attach_grad();
//   NDArray y;
//   {
//     auto recording = autograd::record();
//     y = x * x + 3.0 * x + 2.0;
//   }
//   y.backward();            // x.grad() is now [5, 7, 9]
//
// While a thread records, every op run through nd::invoke (and every view taken) with an input
// that needs a gradient is put on a tape; backward() walks it in reverse and runs each op's
// gradient rule (declared with the op, src/ops/gradient.h). Recording state is per thread.
// Gradients are computed with the same asynchronous ops as the forward pass.
#pragma once

#include <vector>

#include "kiln/ndarray.hpp"

namespace kiln::autograd {

bool is_recording();
bool is_training();
// Set the state of this thread; each returns the previous value.
bool set_recording(bool recording);
bool set_training(bool training);

// Restores the recording and training state of this thread when it goes out of scope.
class [[nodiscard]] Scope {
 public:
  Scope(bool recording, bool training);
  ~Scope();
  Scope(const Scope&) = delete;
  Scope& operator=(const Scope&) = delete;

 private:
  bool was_recording_, was_training_;
};

// Records (and, by default, runs in training mode) until the scope ends.
Scope record(bool train_mode = true);
// Stops recording (by default in predict mode) until the scope ends, e.g. for an optimizer step.
Scope pause(bool train_mode = false);
// Switch only the training flag, which layers such as Dropout and BatchNorm read.
Scope train_mode();
Scope predict_mode();

// Marks `array` as a variable: backward() writes (kWrite) or adds (kAdd) its gradient into a
// buffer of its shape and dtype, zero at first; kNull takes no gradient. An array that was the
// result of recorded ops is detached from them.
void attach_grad(NDArray& array, GradReq req = GradReq::kWrite);
// The gradient buffer of an array marked with attach_grad().
NDArray grad(const NDArray& array);

// Computes the gradients of `heads` with respect to every variable they were recorded from.
// head_grads (empty, or one per head; an undefined entry means ones) seed the heads. The tape is
// freed unless retain_graph is true, so a second backward over it needs retain_graph the first
// time. Throws kiln::Error when a head was not recorded or an op on the way has no gradient rule.
void backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads = {},
              bool retain_graph = false);

// The gradients of `heads` with respect to `variables` (arrays marked with attach_grad() before
// recording), returned as new arrays, one per variable (zeros where the heads do not depend on
// it); the variables' gradient buffers are left as they are. With create_graph the gradient
// computation is itself recorded, so the results can be differentiated again (higher-order
// gradients; not through hybridized blocks, whose backward is a compiled graph); keep the graph
// (retain_graph) to do so through the first one. head_grads and retain_graph as in backward().
std::vector<NDArray> grad(const std::vector<NDArray>& heads, const std::vector<NDArray>& variables,
                          const std::vector<NDArray>& head_grads = {}, bool retain_graph = false,
                          bool create_graph = false);

}  // namespace kiln::autograd
