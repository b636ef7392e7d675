// The graph gradient pass: from a forward Graph, a backward Graph computing the gradients of some
// of its values with respect to some of its inputs, for Executor::backward and CachedOp.
//
// Every op's gradient rule (OpSchema::gradient, written once against GradientContext) runs here
// on Graph values: nodes are walked in reverse topological order, each rule appends its nodes to
// the backward graph, and contributions to one value are summed with Add.
//
// The two graphs run one after the other: the forward graph (the given one with extra outputs:
// the forward values the rules read) and the backward graph, whose inputs are those saved values,
// the forward inputs the rules read and the head gradients. Saving instead of recomputing keeps
// random ops (training-mode Dropout) consistent between the passes.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::autograd {

struct GradientRequest {
  struct Head {
    std::string value;    // a value of the forward graph (a node output)
    bool seeded_by_ones;  // true: its gradient is ones; false: a backward input gives it
  };
  std::vector<Head> heads;
  std::vector<std::string> wrt;  // graph inputs to differentiate with respect to
};

struct GradientGraphs {
  // Where a backward input's value comes from.
  struct Source {
    enum class Kind { kForwardInput, kForwardOutput, kHeadGrad } kind;
    int index;  // the forward graph's input or output, or the head
  };
  graph::Graph forward;   // the given graph's outputs first, then the saved values
  graph::Graph backward;  // outputs: one gradient per `wrt` entry, in order (zeros when none flows)
  std::vector<Source> backward_inputs;  // one per backward graph input, in order
  int num_forward_outputs = 0;          // the given graph's outputs
};

// Builds the two graphs. Shapes must have been inferred on `forward` (infer_shapes) so the rules
// see each value's type; dimensions may be unknown. Throws kiln::Error naming the node when an op
// on a path from `wrt` to a head has no gradient rule or its rule fails, and naming the value when
// a head or `wrt` entry does not exist.
GradientGraphs build_gradient(const graph::Graph& forward, const GradientRequest& request);

}  // namespace kiln::autograd
