// Shared by the runtime tests: small models built with the graph API, random tensors, and the
// reference evaluation (graph::evaluate) that the Executor must match.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "graph/evaluate.h"
#include "graph/graph.h"
#include "random_tensor.h"
#include "test_support.h"

namespace kiln::runtime::testing {

using graph::Graph;
using graph::Value;
using ops::TensorInfo;

using kiln::testing::random_tensor;

// kiln::testing::expect_error with the call last, where a lambda reads best.
template <class Fn>
void expect_error(ErrorCode code, const std::vector<std::string>& parts, Fn&& fn) {
  kiln::testing::expect_error(std::forward<Fn>(fn), code, parts);
}

// The graph interpreter (every node's reference kernel in topological order), with the inputs
// given in the order compiled plans take them.
inline std::vector<Tensor> reference_evaluate(const Graph& g, const std::vector<Tensor>& inputs) {
  std::map<std::string, Tensor> named;
  size_t k = 0;
  for (const Value* v : g.inputs())
    if (!v->is_constant()) named[v->name] = inputs.at(k++);
  return graph::evaluate(g, named);
}

// The same kernels on the same inputs: the results must be identical, bit for bit.
inline void expect_same(const std::vector<Tensor>& got, const std::vector<Tensor>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    ASSERT_EQ(got[i].dtype(), want[i].dtype()) << "output " << i;
    const auto a = got[i].to_vector<float>(), b = want[i].to_vector<float>();
    size_t mismatches = 0;
    for (size_t j = 0; j < a.size(); ++j) mismatches += a[j] != b[j];
    EXPECT_EQ(mismatches, 0u) << "output " << i << " differs from the reference in " << mismatches << " of "
                              << a.size() << " elements";
  }
}

// x (?, dims[0]) -> [MatMul, Add, Relu] for each next width.
inline Graph mlp(const std::vector<int64_t>& dims, std::mt19937& rng) {
  Graph g;
  g.name = "mlp";
  Value* h = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, dims[0]}});
  for (size_t i = 1; i < dims.size(); ++i) {
    const std::string l = "fc" + std::to_string(i);
    Value* w = g.add_initializer(l + "/W", random_tensor({dims[i - 1], dims[i]}, rng, -0.1f, 0.1f));
    Value* b = g.add_initializer(l + "/b", random_tensor({dims[i]}, rng, -0.1f, 0.1f));
    Value* mm = g.add_node("MatMul", {h, w}, {}, l + "/matmul")->outputs[0];
    Value* add = g.add_node("Add", {mm, b}, {}, l + "/add")->outputs[0];
    h = g.add_node("Relu", {add}, {}, l + "/relu")->outputs[0];
  }
  g.set_outputs({h});
  return g;
}

inline Value* conv_bn_relu(Graph& g, Value* x, int64_t cin, int64_t cout, const std::string& l,
                           std::mt19937& rng) {
  Value* w = g.add_initializer(l + "/W", random_tensor({cout, cin, 3, 3}, rng, -0.3f, 0.3f));
  Value* conv = g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}}, l + "/conv")->outputs[0];
  Value* scale = g.add_initializer(l + "/scale", random_tensor({cout}, rng, 0.5f, 1.5f));
  Value* bias = g.add_initializer(l + "/bias", random_tensor({cout}, rng));
  Value* mean = g.add_initializer(l + "/mean", random_tensor({cout}, rng));
  Value* var = g.add_initializer(l + "/var", random_tensor({cout}, rng, 0.5f, 2.f));
  Value* bn = g.add_node("BatchNormalization", {conv, scale, bias, mean, var}, {}, l + "/bn")->outputs[0];
  return g.add_node("Relu", {bn}, {}, l + "/relu")->outputs[0];
}

// data (?, 3, 32, 32) -> 2 x [Conv, BatchNormalization, Relu, MaxPool] -> GlobalAveragePool ->
// Flatten -> Gemm -> Softmax.
inline Graph small_cnn(std::mt19937& rng) {
  Graph g;
  g.name = "small_cnn";
  Value* x = g.add_input("data", TensorInfo{DType::kFloat32, Shape{-1, 3, 32, 32}});
  x = conv_bn_relu(g, x, 3, 16, "stage1", rng);
  x = g.add_node("MaxPool", {x}, {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, "stage1/pool")->outputs[0];
  x = conv_bn_relu(g, x, 16, 32, "stage2", rng);
  x = g.add_node("MaxPool", {x}, {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, "stage2/pool")->outputs[0];
  x = g.add_node("GlobalAveragePool", {x}, {}, "gap")->outputs[0];
  x = g.add_node("Flatten", {x}, {}, "flatten")->outputs[0];
  Value* w = g.add_initializer("fc/W", random_tensor({10, 32}, rng, -0.3f, 0.3f));
  Value* b = g.add_initializer("fc/b", random_tensor({10}, rng));
  x = g.add_node("Gemm", {x, w, b}, {{"transB", 1}}, "fc")->outputs[0];
  g.set_outputs({g.add_node("Softmax", {x}, {}, "softmax")->outputs[0]});
  return g;
}

// x -> h = Relu(x W1); two branches (Sigmoid(h), Tanh(h W2)) joined by Add; a residual Add of h.
inline Graph branch_residual(std::mt19937& rng) {
  Graph g;
  g.name = "branch_residual";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 32}});
  Value* w1 = g.add_initializer("W1", random_tensor({32, 64}, rng, -0.3f, 0.3f));
  Value* w2 = g.add_initializer("W2", random_tensor({64, 64}, rng, -0.3f, 0.3f));
  Value* h = g.add_node("Relu", {g.add_node("MatMul", {x, w1}, {}, "mm1")->outputs[0]}, {}, "h")->outputs[0];
  Value* left = g.add_node("Sigmoid", {h}, {}, "left")->outputs[0];
  Value* right = g.add_node("MatMul", {h, w2}, {}, "mm2")->outputs[0];
  right = g.add_node("Tanh", {right}, {}, "right")->outputs[0];
  Value* joined = g.add_node("Add", {left, right}, {}, "join")->outputs[0];
  g.set_outputs({g.add_node("Add", {joined, h}, {}, "residual")->outputs[0]});
  return g;
}

}  // namespace kiln::runtime::testing
