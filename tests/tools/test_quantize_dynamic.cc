// quantize_dynamic: MatMul and Gemm weights to int8, activations quantized on each call. On a small
// two-layer network with random weights the result stays within a few 8-bit steps of the float
// model, both products run as FusedDynamicQLinearMatMul, and the exported ONNX runs in ONNX
// Runtime with Kiln's outputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "frontends/onnx/export.h"
#include "graph/graph.h"
#include "kiln/npy.hpp"
#include "kiln/predictor.hpp"
#include "kiln/quantize.hpp"
#include "test_support.h"

namespace kiln::quantization {
namespace {

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (float& e : v) e = normal(rng);
  return Tensor::from_vector(v, shape);
}

// x (?, 5, 32) -> MatMul(32, 64) + bias -> Relu -> Gemm is not batched: Reshape (?, 64) first ->
// Gemm(10 x 64, transB) + C.
graph::Graph two_layers() {
  std::mt19937 rng(21);
  graph::Graph g;
  g.name = "two_layers";
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{4, 5, 32}});
  graph::Value* h =
      g.add_node("MatMul", {x, g.add_initializer("w1", random_tensor({32, 64}, rng, 0.2f))}, {}, "fc1")
          ->outputs[0];
  h = g.add_node("Add", {h, g.add_initializer("b1", random_tensor({64}, rng, 0.1f))}, {}, "bias1")
          ->outputs[0];
  h = g.add_node("Relu", {h}, {}, "relu")->outputs[0];
  h = g.add_node("Reshape", {h, g.add_initializer("rows", Tensor::from_vector<int64_t>({20, 64}, {2}))}, {},
                 "rows")
          ->outputs[0];
  g.add_output(g.add_node("Gemm",
                          {h, g.add_initializer("w2", random_tensor({10, 64}, rng, 0.2f)),
                           g.add_initializer("b2", random_tensor({10}, rng, 0.1f))},
                          {{"transB", int64_t{1}}}, "fc2")
                   ->outputs[0]);
  g.infer_shapes();
  return g;
}

float max_abs(const Tensor& t) {
  float m = 0;
  for (float v : t.to_vector<float>()) m = std::max(m, std::abs(v));
  return m;
}

float max_abs_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> va = a.to_vector<float>(), vb = b.to_vector<float>();
  float m = 0;
  for (size_t i = 0; i < va.size(); ++i) m = std::max(m, std::abs(va[i] - vb[i]));
  return m;
}

TEST(QuantizeDynamic, CloseToFloatAndRunsInOnnxRuntime) {
  std::mt19937 rng(22);
  const Tensor x = random_tensor({4, 5, 32}, rng, 1.0f);
  const graph::Graph fp32 = two_layers();
  const Tensor want = Predictor(fp32.clone()).predict({x})[0];
  graph::Graph int8 = quantize_dynamic(fp32.clone());
  size_t dynamic_quantize = 0;
  for (const graph::Node* n : int8.nodes()) dynamic_quantize += n->op == "DynamicQuantizeLinear";
  EXPECT_EQ(dynamic_quantize, 2u);
  const Predictor predictor(int8.clone(), {.opt_level = "all"});
  size_t fused = 0;
  for (const graph::Node* n : predictor.graph().nodes()) fused += n->op == "FusedDynamicQLinearMatMul";
  EXPECT_EQ(fused, 2u);
  const Tensor got = predictor.predict({x})[0];
  std::cout << "dynamic int8 vs fp32: max |diff| " << max_abs_difference(got, want) << ", max |fp32| "
            << max_abs(want) << "\n";
  EXPECT_LE(max_abs_difference(got, want), 0.03f * max_abs(want));

  const std::string python = std::string(KILN_SOURCE_DIR) + "/.venv/bin/python";
  int status = 0;
  testing::run_command(python + " -c 'import onnxruntime' 2>/dev/null", status);
  ASSERT_EQ(status, 0) << "no onnxruntime in .venv: run scripts/setup.sh";
  testing::TempDir dir;
  // The Predictor's optimized graph, whose fused int8 ops the exporter writes in their QDQ form.
  onnx::export_model(predictor.graph(), dir / "dynamic.onnx");
  npy::save(dir / "x.npy", x);
  const std::string out = testing::run_command(
      python + " " + KILN_SOURCE_DIR + "/tests/tools/qdq_onnxruntime.py run " + (dir / "dynamic.onnx") + " " +
          (dir / "x.npy") + " " + (dir / "ort.npy") + " 2>&1",
      status);
  ASSERT_EQ(status, 0) << out;
  const Tensor ort = npy::load(dir / "ort.npy");
  // ONNX Runtime computes the pattern with its own kernels, whose rounding may put an element of
  // the hidden layer on the neighbouring 8-bit step: about 1% of the output's range here.
  std::cout << "Kiln vs ONNX Runtime: max |diff| " << max_abs_difference(got, ort) << "\n";
  EXPECT_LE(max_abs_difference(got, ort), 0.015f * max_abs(ort));
}

}  // namespace
}  // namespace kiln::quantization
