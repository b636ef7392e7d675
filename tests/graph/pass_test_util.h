// What every pass test needs: random inputs for a graph, a check that two graphs compute the
// same outputs (with the reference interpreter), op counts, and running one pass the way the
// pass manager would (its needs established, the graph verified afterwards).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>

#include "graph/evaluate.h"
#include "graph/pass_manager.h"
#include "graph/passes/passes.h"

namespace kiln::graph::testing {

// A node's first output: most test graphs chain single-output nodes.
inline Value* out0(Node* n) {
  return n->outputs[0];
}

// Uniform in [-2, 2] for floats, [0, 5) for integers; unknown dims become `free_dim`.
inline Tensor random_tensor(const TensorInfo& info, std::mt19937& rng, int64_t free_dim = 2) {
  Shape shape = info.shape;
  for (int a = 0; a < shape.ndim(); ++a)
    if (shape[a] == Shape::kUnknown) shape[a] = free_dim;
  std::vector<double> values(static_cast<size_t>(shape.numel()));
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> whole(0, 4);
  for (double& v : values) v = is_floating(info.dtype) ? real(rng) : whole(rng);
  return Tensor::from_vector(values, shape).cast(info.dtype);
}

inline std::map<std::string, Tensor> random_inputs(const Graph& g, uint32_t seed) {
  std::mt19937 rng(seed);
  std::map<std::string, Tensor> feeds;
  for (const Value* in : g.inputs())
    if (!in->is_constant()) feeds[in->name] = random_tensor(*in->info, rng);
  return feeds;
}

// Asserts that `after` computes what `before` does on a few random inputs: same output names,
// dtypes and shapes, and |a - b| <= atol + rtol * |b| element by element.
inline void expect_same_outputs(const Graph& before, const Graph& after, double atol, double rtol) {
  ASSERT_EQ(before.outputs().size(), after.outputs().size());
  for (size_t i = 0; i < before.outputs().size(); ++i)
    EXPECT_EQ(before.outputs()[i]->name, after.outputs()[i]->name) << "graph output " << i << " was renamed";
  for (uint32_t seed : {1u, 2u, 3u}) {
    const auto feeds = random_inputs(before, seed);
    const auto want = evaluate(before, feeds);
    const auto got = evaluate(after, feeds);
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
      ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
      const auto w = want[i].cast(DType::kFloat64).to_vector<double>();
      const auto g = got[i].cast(DType::kFloat64).to_vector<double>();
      for (size_t k = 0; k < w.size(); ++k) {
        if (std::isnan(w[k]) && std::isnan(g[k])) continue;
        ASSERT_LE(std::abs(g[k] - w[k]), atol + rtol * std::abs(w[k]))
            << "output " << i << " element " << k << ": got " << g[k] << ", want " << w[k];
      }
    }
  }
}

inline size_t count_op(const Graph& g, const std::string& op) {
  const auto nodes = g.nodes();
  return static_cast<size_t>(
      std::count_if(nodes.begin(), nodes.end(), [&](const Node* n) { return n->op == op; }));
}

// Runs one pass through a verifying pass manager; returns whether it changed the graph.
inline bool run_pass(Pass pass, Graph& g) {
  PassManagerOptions options;
  options.verify = true;
  PassManager pm(options);
  pm.add(std::move(pass));
  return pm.run(g);
}

// Expands `fused` back into standard ops (expand_fused_ops, what ONNX export does) and expects no
// `fused_op` left, `count` nodes of `standard_op`, and the outputs of `reference`. Returns the
// expanded graph for further checks.
inline Graph expect_expands_back(const Graph& reference, const Graph& fused, const std::string& fused_op,
                                 const std::string& standard_op, size_t count, double atol, double rtol) {
  Graph expanded = fused.clone();
  EXPECT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
  EXPECT_EQ(count_op(expanded, fused_op), 0u);
  EXPECT_EQ(count_op(expanded, standard_op), count);
  expect_same_outputs(reference, expanded, atol, rtol);
  return expanded;
}

}  // namespace kiln::graph::testing
