// Counting a graph's floating-point operations, as model summaries do: two per multiply-add for
// Conv, ConvTranspose, Gemm and MatMul, one per output element for elementwise ops, none for the
// rest (data movement, pooling, normalization are left out).
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
};

FlopCount count_flops(const graph::Graph& graph);

}  // namespace kiln::runtime
