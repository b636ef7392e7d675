// StagedProgram: a graph (its input shapes concrete) some of whose shapes are decided by values
// computed while it runs. It is cut where those values are first needed:
//
//   head     the nodes whose shapes are known now, compiled into one plan;
//   decided  the nodes that read the head's values to size their outputs (NonZero,
//            NonMaxSuppression, a Reshape whose shape is computed): run one by one with their
//            reference kernels, which size each output as the data says; control flow (If,
//            Loop, Scan) is decided too, its subgraphs run as SubgraphPrograms;
//   tail     everything after them: bound to the sizes a run produced and made into a Program of
//            its own (a plan, or again a StagedProgram), cached per sizes, bounded.
//
// When the sizes repeat, a run is the head plan, the decided nodes and a cached tail: nothing is
// planned again. Every size decided at run time is checked against max_dynamic_elements before
// anything is allocated for it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/program.h"
#include "runtime/program_cache.h"
#include "runtime/subgraph_program.h"

namespace kiln::runtime {

class StagedProgram final : public Program {
 public:
  // `bound`: bound by bind_inputs with allow_unknown (so each shape known is right for these
  // inputs), with some node's output shape still unknown.
  StagedProgram(graph::Graph bound, const ProgramOptions& options);
  std::vector<Tensor> run(const std::vector<Tensor>& inputs) const override;

  size_t num_tail_programs() const { return tails_ ? tails_->size() : 0; }

 private:
  // Where a run finds a value: a graph input, a constant, an output of the head plan, an output
  // of a decided node, or an output of the tail.
  struct Source {
    enum class From { kInput, kConstant, kHead, kDecided, kTail };
    From from = From::kInput;
    size_t index = 0;   // kInput: graph input; kHead / kTail: output; kDecided: node
    size_t output = 0;  // kDecided: the node's output
    Tensor constant;    // kConstant
  };
  struct DecidedNode {
    std::string label;  // "NonZero 'nz'"
    const ops::OpSchema* schema = nullptr;
    Attrs attrs;
    std::vector<std::optional<Source>> inputs;  // nullopt: a missing optional input
    int num_outputs = 0;
    // Control flow (If, Loop, Scan): its subgraphs by attribute, what they declare, and how many
    // of the node's inputs are values they read from outside. Empty for other nodes.
    std::map<std::string, std::shared_ptr<const SubgraphProgram>> subgraphs;
    std::map<std::string, ops::SubgraphSignature> signatures;
    size_t num_captured = 0;
  };
  // One run's tensors, for Source lookups.
  struct RunValues {
    const std::vector<Tensor>& inputs;
    std::vector<Tensor> head;
    std::vector<std::vector<Tensor>> decided;
    std::vector<Tensor> tail;
  };

  const Tensor& find(const Source& source, const RunValues& values) const;
  std::vector<Tensor> run_decided(const DecidedNode& node, const RunValues& values) const;
  std::vector<Tensor> run_control_flow(const DecidedNode& node, const std::vector<Tensor>& inputs) const;

  std::string label_;  // the graph's, for errors
  ProgramOptions options_;
  std::unique_ptr<PlanProgram> head_;  // null when the head computes nothing the rest reads
  std::vector<size_t> head_feed_;      // the graph inputs the head takes (the tensors), by position
  std::vector<DecidedNode> decided_;
  graph::Graph tail_;                    // its inputs' shapes bound per run (empty: no tail)
  std::vector<Source> tail_inputs_;      // per tail graph input (kDecided ones are sized per run)
  std::unique_ptr<ProgramCache> tails_;  // null when there is no tail
  std::vector<Source> outputs_;          // per graph output
};

}  // namespace kiln::runtime
