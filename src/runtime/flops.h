// Counting a graph's floating-point operations, as model summaries do: two per multiply-add for
// Conv, ConvTranspose, Gemm, MatMul and their integer and fused forms, Einsum, Attention (its two
// products) and the recurrent cells (RNN, GRU, LSTM: their input and recurrent products), one per
// output element for elementwise ops. Every other op is listed as not counted (data movement,
// pooling, normalization, reductions...), so that a figure derived from the count says what it
// leaves out.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "graph/graph.h"

namespace kiln::runtime {

struct FlopCount {
  int64_t total = 0;
  std::map<std::string, int64_t> by_op;  // op type -> FLOPs
  int unknown_nodes = 0;  // counted ops whose shapes were not concrete (bind the input shapes first)
  std::map<std::string, int> not_counted;  // op type -> nodes of ops no rule counts
};

FlopCount count_flops(const graph::Graph& graph);

// "MaxPool (2), Reshape (1)": the op types a count left out, for reports; "" when none.
std::string not_counted_text(const FlopCount& count);

}  // namespace kiln::runtime
