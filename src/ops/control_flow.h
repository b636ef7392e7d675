// Control flow: If, Loop and Scan (ONNX opset 11 and later; Scan from opset 9). Each runs graphs
// held by its node (graph::Node::subgraphs), which this layer cannot see: what the ops mean is
// written here over a SubgraphRunner, supplied by whoever holds the graphs (the runtime, which
// compiles each subgraph per input signature).
//
// A subgraph's inputs are its own (Loop: iteration number, condition, loop-carried values; Scan:
// states, then one slice of each scan input) followed by the node's captured inputs: the values
// of the graphs around it that it reads, which the node passes through unchanged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ops/op_schema.h"

namespace kiln::ops {

// Runs the node's subgraph held under attribute `name` on `inputs` (its own, then the captured
// values) and returns its outputs.
using SubgraphRunner =
    std::function<std::vector<Tensor>(const std::string& name, const std::vector<Tensor>& inputs)>;

// What a subgraph declares about its inputs and outputs (unset: not declared), so that a node is
// checked against its subgraphs before anything runs.
struct SubgraphSignature {
  std::vector<std::optional<TensorInfo>> inputs;
  std::vector<std::optional<TensorInfo>> outputs;
};

struct ControlFlowLimits {
  // The most iterations a Loop runs or a Scan walks; more is kiln::Error(kOutOfRange) naming the
  // node, so that a Loop with no trip count whose condition never turns false cannot hang a caller.
  int64_t max_iterations = int64_t{1} << 20;
  // The most elements a stacked scan output may have.
  int64_t max_elements = int64_t{1} << 28;
};

bool is_control_flow(const std::string& op);

// The subgraph attributes `op` needs (If: then_branch and else_branch; Loop, Scan: body).
std::vector<std::string> subgraph_names(const std::string& op);

// Checks that a control-flow node fits its subgraphs: each one it needs is there and no other,
// each takes as many inputs and gives as many outputs as the node's inputs and outputs imply, and
// the element types declared on both sides agree. `node_inputs` are the node's inputs' infos
// (unset where not known), the captured ones last. Throws kiln::Error(kInvalidArgument) saying
// which subgraph and which input or output does not fit.
void check_subgraphs(const std::string& op, const Attrs& attrs,
                     const std::vector<std::optional<TensorInfo>>& node_inputs, size_t num_outputs,
                     size_t num_captured, const std::map<std::string, SubgraphSignature>& subgraphs);

// The type and shape subgraph input k of a control-flow node takes from the node's inputs (`node_inputs`,
// unset where not known): a branch's inputs are the node's captured values; a Loop body's are the
// iteration number, the condition and the node's own; a Scan body's scan inputs are one step of
// the node's. Unset when the node's input is not known.
std::optional<TensorInfo> subgraph_input_info(const std::string& op, const Attrs& attrs,
                                              const std::vector<std::optional<TensorInfo>>& node_inputs,
                                              size_t num_captured, size_t k);

// The node's output types and shapes from what its subgraphs give (`subgraphs`, inferred for the
// node's inputs): an If's outputs where both branches agree on type and rank (dims that differ are
// free), a Loop's or Scan's final values as the body gives them, their scan outputs with a free
// (Loop) or known (Scan) number of steps. kiln::Error(kUnsupported) when something is not known.
std::vector<TensorInfo> infer_control_flow(const std::string& op, const Attrs& attrs,
                                           const std::vector<std::optional<TensorInfo>>& node_inputs,
                                           size_t num_outputs, size_t num_captured,
                                           const std::map<std::string, SubgraphSignature>& subgraphs);

// Runs an If, Loop or Scan node on its inputs (a missing optional input is an undefined tensor),
// the captured ones last. `signatures` gives the element shape of a Loop's scan outputs when the
// loop runs no iteration. Errors say what is wrong but not which node: the caller names it.
std::vector<Tensor> run_control_flow(const std::string& op, const Attrs& attrs,
                                     const std::vector<Tensor>& inputs, size_t num_captured,
                                     size_t num_outputs,
                                     const std::map<std::string, SubgraphSignature>& signatures,
                                     const SubgraphRunner& run_subgraph, const ControlFlowLimits& limits);

}  // namespace kiln::ops
