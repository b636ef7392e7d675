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
#include <vector>

#include "kiln/ndarray.hpp"
#include "ops/op_schema.h"

namespace kiln::autograd {

struct TapeNode {
  // A recorded op call; null for a variable.
  const ops::OpSchema* schema = nullptr;
  Attrs attrs;
  std::vector<NDArray> inputs;                                        // undefined for missing optional inputs
  std::vector<std::shared_ptr<detail::AutogradEntry>> input_entries;  // null: no gradient flows
  std::vector<NDArray> outputs;
  bool freed = false;  // a backward without retain_graph released the saved values

  // A variable's gradient buffer and how backward writes it.
  NDArray grad;
  GradReq grad_req = GradReq::kNull;

  bool is_variable() const { return schema == nullptr; }
  // Whether gradients flowing into this node reach a variable that takes them.
  bool requires_grad = false;
};

}  // namespace kiln::autograd

namespace kiln::detail {

struct AutogradEntry {
  std::shared_ptr<autograd::TapeNode> node;
  int output = 0;
};

}  // namespace kiln::detail
