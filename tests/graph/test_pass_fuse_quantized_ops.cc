// fuse_quantized_ops: a QDQ graph (as quantize_model and ONNX Runtime write them) becomes int8
// ops that compute what the QDQ graph computes (the reference interpreter runs both): Conv with
// its residual Add, Relu and QuantizeLinear as one FusedQLinearConv with an 8-bit output,
// MaxPool and Flatten on 8-bit values, a Conv whose result goes on in float with a float32
// output, an int32 bias behind a DequantizeLinear folded; and expand_fused_ops gives the QDQ form
// back. SiLU, HardSwish and LeakyRelu join the int8 convolution, and a residual added after
// the activation (YOLOv5's bottleneck) too; average pooling becomes FusedQLinearAveragePool. Chains
// that cannot fuse stay.
#include <set>

#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

Value* scalar(Graph& g, const std::string& name, double v, DType type) {
  return g.add_initializer(name, Tensor::scalar(v, type));
}

// Q -> DQ of `v` with scale `s` and an 8-bit zero point of `type` (value 0).
Value* qdq(Graph& g, Value* v, const std::string& name, double s, DType type = DType::kUInt8) {
  Value* scale = scalar(g, name + "_s", s, DType::kFloat32);
  Value* zero = scalar(g, name + "_z", 0, type);
  Value* q = out0(g.add_node("QuantizeLinear", {v, scale, zero}, {}, name + "_q"));
  return out0(g.add_node("DequantizeLinear", {q, scale, zero}, {}, name + "_dq"));
}

// An int8 weight (values in [-127, 127]) with per-output-channel scales, behind a DequantizeLinear.
Value* int8_weight(Graph& g, const std::string& name, const Shape& shape, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-127, 127);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = static_cast<float>(dist(rng));
  std::vector<float> scales(static_cast<size_t>(shape[0]));
  for (size_t c = 0; c < scales.size(); ++c) scales[c] = 0.002f * static_cast<float>(c + 1);
  Value* w = g.add_initializer(name, Tensor::from_vector(values, shape).cast(DType::kInt8));
  Value* s = g.add_initializer(name + "_s", Tensor::from_vector(scales, Shape{shape[0]}));
  Value* z = g.add_initializer(name + "_z", Tensor::zeros(Shape{shape[0]}, DType::kInt8));
  return out0(g.add_node("DequantizeLinear", {w, s, z}, {{"axis", int64_t{0}}}, name + "_dq"));
}

// x -> QDQ -> Conv(+ bias) -> Add(QDQ(skip)) -> Relu -> QDQ -> MaxPool -> QDQ -> Flatten -> QDQ
//   -> y; and QDQ(x) -> Conv -> z (float).
Graph qdq_graph(bool int32_bias) {
  std::mt19937 rng(3);
  Graph g;
  g.name = "qdq";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4, 6, 6}});
  Value* skip = g.add_input("skip", TensorInfo{DType::kFloat32, Shape{-1, 8, 6, 6}});
  Value* xq = qdq(g, x, "x", 0.02, DType::kInt8);
  Value* bias = nullptr;
  if (int32_bias) {
    // ONNX Runtime's form: int32 at scale x_scale * w_scale, per channel.
    std::vector<float> scales(8);
    for (size_t c = 0; c < 8; ++c) scales[c] = 0.02f * 0.002f * static_cast<float>(c + 1);
    Value* b = g.add_initializer(
        "b", Tensor::from_vector(std::vector<float>{100, -200, 300, 0, 50, -50, 7, 9}, Shape{8})
                 .cast(DType::kInt32));
    bias = out0(g.add_node("DequantizeLinear",
                           {b, g.add_initializer("b_s", Tensor::from_vector(scales, Shape{8}))},
                           {{"axis", int64_t{0}}}, "b_dq"));
  } else {
    bias = g.add_initializer("b", testing::random_tensor(TensorInfo{DType::kFloat32, Shape{8}}, rng));
  }
  Value* c = out0(g.add_node("Conv", {xq, int8_weight(g, "w", {8, 4, 3, 3}, rng), bias},
                             {{"pads", {1, 1, 1, 1}}}, "conv"));
  Value* s = out0(g.add_node("Add", {c, qdq(g, skip, "skip", 0.03, DType::kInt8)}, {}, "residual"));
  Value* r = qdq(g, out0(g.add_node("Relu", {s}, {}, "relu")), "r", 0.05);
  Value* p = qdq(g, out0(g.add_node("MaxPool", {r}, {{"kernel_shape", {2, 2}}, {"strides", {2, 2}}}, "pool")),
                 "p", 0.05);
  Value* f = qdq(g, out0(g.add_node("Flatten", {p}, {}, "flatten")), "f", 0.05);
  g.add_output(f);
  g.add_output(out0(g.add_node("Conv", {xq, int8_weight(g, "w2", {2, 4, 1, 1}, rng)}, {}, "side")));
  g.infer_shapes();
  return g;
}

TEST(FuseQuantizedOps, QdqChainsBecomeInt8Ops) {
  for (bool int32_bias : {false, true}) {
    const Graph before = qdq_graph(int32_bias);
    Graph after = before.clone();
    ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
    EXPECT_EQ(count_op(after, "FusedQLinearConv"), 2u);
    for (const char* gone : {"Conv", "Add", "Relu"}) EXPECT_EQ(count_op(after, gone), 0u) << gone;
    // Left: the input's and the skip's QuantizeLinear, the output's DequantizeLinear.
    EXPECT_EQ(count_op(after, "QuantizeLinear"), 2u);
    EXPECT_EQ(count_op(after, "DequantizeLinear"), 1u);
    for (const Node* n : after.nodes()) {
      DType want = n->outputs[0]->info->dtype;
      if (n->op == "MaxPool" || n->op == "Flatten" || n->name.rfind("conv", 0) == 0) want = DType::kUInt8;
      if (n->name.rfind("side", 0) == 0) want = DType::kFloat32;
      EXPECT_EQ(n->outputs[0]->info->dtype, want) << n->label();
    }
    // The same reference arithmetic in another grouping: equal up to float rounding, which may
    // move an 8-bit value by one step (0.05).
    expect_same_outputs(before, after, 0.0501, 0);
    // And back into the QDQ form, for ONNX files.
    Graph expanded = after.clone();
    ASSERT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
    EXPECT_EQ(count_op(expanded, "FusedQLinearConv"), 0u);
    EXPECT_EQ(count_op(expanded, "FusedConv"), 0u);
    EXPECT_EQ(count_op(expanded, "Conv"), 2u);
    expect_same_outputs(before, expanded, 0.0501, 0);
  }
}

// Average pooling between a DequantizeLinear and a QuantizeLinear (other parameters, a zero point,
// padding counted, and the global mean) becomes FusedQLinearAveragePool; expand_fused_ops gives the
// QDQ form back.
TEST(FuseQuantizedOps, AveragePoolingBecomesInt8) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 6, 7, 9}});
  Value* scale = scalar(g, "x_s", 0.02, DType::kFloat32);
  Value* zero = scalar(g, "x_z", 100, DType::kUInt8);
  Value* xq = out0(g.add_node("DequantizeLinear",
                              {out0(g.add_node("QuantizeLinear", {x, scale, zero}, {}, "x_q")), scale, zero},
                              {}, "x_dq"));
  Value* pooled = out0(g.add_node("AveragePool", {xq},
                                  {{"kernel_shape", {3, 3}},
                                   {"strides", {2, 2}},
                                   {"pads", {1, 1, 1, 1}},
                                   {"count_include_pad", int64_t{1}}},
                                  "pool"));
  g.add_output(qdq(g, pooled, "p", 0.013, DType::kInt8));
  g.add_output(qdq(g, out0(g.add_node("GlobalAveragePool", {xq}, {}, "global")), "m", 0.011));
  g.infer_shapes();
  Graph after = g.clone();
  ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedQLinearAveragePool"), 2u);
  for (const char* gone : {"AveragePool", "GlobalAveragePool"}) EXPECT_EQ(count_op(after, gone), 0u) << gone;
  EXPECT_EQ(count_op(after, "QuantizeLinear"), 1u);  // the input's
  // The global mean as one window sums in another order: one 8-bit step at most.
  expect_same_outputs(g, after, 0.0111, 0);
  Graph expanded = after.clone();
  ASSERT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
  EXPECT_EQ(count_op(expanded, "FusedQLinearAveragePool"), 0u);
  EXPECT_EQ(count_op(expanded, "AveragePool"), 2u);
  expect_same_outputs(g, expanded, 0.0111, 0);
}

// ONNX Runtime's residual: the Conv's output quantized and dequantized before the Add (and a
// zero point on it), then Relu and the output's QuantizeLinear.
TEST(FuseQuantizedOps, RequantizedResidualAsOnnxRuntimeWritesIt) {
  std::mt19937 rng(6);
  Graph g;
  g.name = "ort_residual";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 4, 5, 5}});
  Value* skip = g.add_input("skip", TensorInfo{DType::kFloat32, Shape{1, 8, 5, 5}});
  Value* c =
      out0(g.add_node("Conv", {qdq(g, x, "x", 0.02, DType::kInt8), int8_weight(g, "w", {8, 4, 3, 3}, rng)},
                      {{"pads", {1, 1, 1, 1}}}, "conv"));
  Value* scale = scalar(g, "c_s", 0.04, DType::kFloat32);
  Value* zero = scalar(g, "c_z", 100, DType::kUInt8);
  Value* cq = out0(g.add_node("QuantizeLinear", {c, scale, zero}, {}, "c_q"));
  Value* cdq = out0(g.add_node("DequantizeLinear", {cq, scale, zero}, {}, "c_dq"));
  Value* s = out0(g.add_node("Add", {qdq(g, skip, "skip", 0.03, DType::kInt8), cdq}, {}, "residual"));
  g.add_output(qdq(g, out0(g.add_node("Relu", {s}, {}, "relu")), "y", 0.05));
  g.infer_shapes();
  Graph after = g.clone();
  ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedQLinearConv"), 1u);
  for (const char* gone : {"Conv", "Add", "Relu"}) EXPECT_EQ(count_op(after, gone), 0u) << gone;
  expect_same_outputs(g, after, 0.0501, 0);
  Graph expanded = after.clone();
  ASSERT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
  EXPECT_EQ(count_op(expanded, "FusedQLinearConv"), 0u);
  EXPECT_EQ(count_op(expanded, "Add"), 1u);
  expect_same_outputs(g, expanded, 0.0501, 0);
}

// An int8 weight quantized along `axis` (values in [-127, 127], scales 0.002 * (1 + index)).
Value* int8_matrix(Graph& g, const std::string& name, const Shape& shape, int64_t axis, std::mt19937& rng) {
  std::uniform_int_distribution<int> dist(-127, 127);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = static_cast<float>(dist(rng));
  std::vector<float> scales(static_cast<size_t>(shape[static_cast<int>(axis)]));
  for (size_t c = 0; c < scales.size(); ++c) scales[c] = 0.002f * static_cast<float>(c + 1);
  const Shape scale_shape{static_cast<int64_t>(scales.size())};
  return out0(g.add_node("DequantizeLinear",
                         {g.add_initializer(name, Tensor::from_vector(values, shape).cast(DType::kInt8)),
                          g.add_initializer(name + "_s", Tensor::from_vector(scales, scale_shape)),
                          g.add_initializer(name + "_z", Tensor::zeros(scale_shape, DType::kInt8))},
                         {{"axis", axis}}, name + "_dq"));
}

// a -> QDQ -> MatMul(W (K, N)) -> Add(bias) -> Relu -> QDQ -> Gemm(W2 (N2, N) transposed, C)
//   -> y (float).
TEST(FuseQuantizedOps, MatMulAndGemmBecomeInt8Products) {
  std::mt19937 rng(5);
  Graph g;
  g.name = "mlp";
  Value* a = g.add_input("a", TensorInfo{DType::kFloat32, Shape{-1, 3, 16}});
  Value* m = out0(g.add_node(
      "MatMul", {qdq(g, a, "a", 0.02, DType::kInt8), int8_matrix(g, "w", {16, 8}, 1, rng)}, {}, "matmul"));
  Value* bias = g.add_initializer("bias", testing::random_tensor(TensorInfo{DType::kFloat32, Shape{8}}, rng));
  Value* h =
      qdq(g, out0(g.add_node("Relu", {out0(g.add_node("Add", {m, bias}, {}, "bias_add"))}, {}, "relu")), "h",
          0.05);
  Value* flat = out0(g.add_node(
      "Reshape", {h, g.add_initializer("shape", Tensor::from_vector<int64_t>({-1, 8}, {2}))}, {}, "rows"));
  Value* c = g.add_initializer("c", testing::random_tensor(TensorInfo{DType::kFloat32, Shape{1, 4}}, rng));
  g.add_output(out0(g.add_node("Gemm", {qdq(g, flat, "flat", 0.05), int8_matrix(g, "w2", {4, 8}, 0, rng), c},
                               {{"transB", int64_t{1}}}, "gemm")));
  g.infer_shapes();
  Graph after = g.clone();
  ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedQLinearMatMul"), 2u);
  for (const char* gone : {"MatMul", "Gemm", "Add", "Relu"}) EXPECT_EQ(count_op(after, gone), 0u) << gone;
  expect_same_outputs(g, after, 0.05 * 8 * 0.02 * 127, 0);  // a step of h moves y by at most this
  Graph expanded = after.clone();
  ASSERT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
  EXPECT_EQ(count_op(expanded, "FusedQLinearMatMul"), 0u);
  EXPECT_EQ(count_op(expanded, "MatMul"), 2u);
  expect_same_outputs(g, expanded, 0.05 * 8 * 0.02 * 127, 0);
}

// YOLOv5's convolutions: Conv -> SiLU (x * Sigmoid(x)) -> Q, and HardSwish and LeakyRelu, each
// one int8 convolution with the activation before the requantization; odd sizes.
TEST(FuseQuantizedOps, SiluHardSwishAndLeakyReluJoinTheInt8Convolution) {
  std::mt19937 rng(9);
  Graph g;
  g.name = "silu";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 3, 11, 7}});
  Value* c1 =
      out0(g.add_node("Conv", {qdq(g, x, "x", 0.02, DType::kInt8), int8_weight(g, "w1", {5, 3, 3, 3}, rng)},
                      {{"pads", {1, 1, 1, 1}}, {"strides", {2, 2}}}, "conv1"));
  Value* sig = out0(g.add_node("Sigmoid", {c1}, {}, "sigmoid"));
  Value* silu = qdq(g, out0(g.add_node("Mul", {c1, sig}, {}, "silu")), "a1", 0.01, DType::kInt8);
  Value* c2 = out0(g.add_node("Conv", {silu, int8_weight(g, "w2", {7, 5, 1, 1}, rng)}, {}, "conv2"));
  Value* hs = qdq(g, out0(g.add_node("HardSwish", {c2}, {}, "hardswish")), "a2", 0.01, DType::kInt8);
  Value* c3 = out0(g.add_node("Conv", {hs, int8_weight(g, "w3", {3, 7, 3, 3}, rng)}, {}, "conv3"));
  g.add_output(
      qdq(g, out0(g.add_node("LeakyRelu", {c3}, {{"alpha", 0.1}}, "leaky")), "a3", 0.01, DType::kInt8));
  g.infer_shapes();
  Graph after = g.clone();
  ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedQLinearConv"), 3u);
  for (const char* gone : {"Conv", "Sigmoid", "Mul", "HardSwish", "LeakyRelu"})
    EXPECT_EQ(count_op(after, gone), 0u) << gone;
  // Left: the input's QuantizeLinear and the output's DequantizeLinear: int8 from end to end.
  EXPECT_EQ(count_op(after, "QuantizeLinear"), 1u);
  EXPECT_EQ(count_op(after, "DequantizeLinear"), 1u);
  std::set<std::string> activations;
  for (const Node* n : after.nodes())
    if (n->op == "FusedQLinearConv")
      activations.insert(std::get<std::string>(n->attrs.at("activation").variant()));
  EXPECT_EQ(activations, (std::set<std::string>{"SiLU", "HardSwish", "LeakyRelu"}));
  // Float rounding may move an 8-bit value by one step (0.01) in each layer.
  expect_same_outputs(g, after, 0.0301, 0);
  Graph expanded = after.clone();
  ASSERT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
  EXPECT_EQ(count_op(expanded, "FusedQLinearConv"), 0u);
  EXPECT_EQ(count_op(expanded, "Sigmoid"), 1u);
  expect_same_outputs(g, expanded, 0.0301, 0);
}

// YOLOv5's bottleneck: QDQ(skip) + SiLU(Conv(...)) -> Q, the residual added after the activation.
TEST(FuseQuantizedOps, ResidualAfterTheActivation) {
  std::mt19937 rng(10);
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 5, 9, 7}});
  Value* skip = g.add_input("skip", TensorInfo{DType::kFloat32, Shape{1, 6, 9, 7}});
  Value* c =
      out0(g.add_node("Conv", {qdq(g, x, "x", 0.02, DType::kInt8), int8_weight(g, "w", {6, 5, 3, 3}, rng)},
                      {{"pads", {1, 1, 1, 1}}}, "conv"));
  Value* silu = out0(g.add_node("Mul", {c, out0(g.add_node("Sigmoid", {c}, {}, "sigmoid"))}, {}, "silu"));
  Value* s = out0(g.add_node("Add", {qdq(g, skip, "skip", 0.03, DType::kInt8), silu}, {}, "residual"));
  g.add_output(qdq(g, s, "y", 0.05, DType::kInt8));
  g.infer_shapes();
  Graph after = g.clone();
  ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedQLinearConv"), 1u);
  for (const char* gone : {"Conv", "Sigmoid", "Mul", "Add"}) EXPECT_EQ(count_op(after, gone), 0u) << gone;
  expect_same_outputs(g, after, 0.0501, 0);
  Graph expanded = after.clone();
  ASSERT_TRUE(run_pass(expand_fused_ops_pass(), expanded));
  EXPECT_EQ(count_op(expanded, "FusedQLinearConv"), 0u);
  EXPECT_EQ(count_op(expanded, "Add"), 1u);
  expect_same_outputs(g, expanded, 0.0501, 0);
}

// A chain that ends in float (Conv -> Relu, read by a float op): the Relu goes with the Conv and
// the pass does not visit it again.
TEST(FuseQuantizedOps, FloatChainEndingInAnActivation) {
  std::mt19937 rng(7);
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 4, 5, 5}});
  Value* c = out0(g.add_node(
      "Conv", {qdq(g, x, "x", 0.02, DType::kInt8), int8_weight(g, "w", {3, 4, 1, 1}, rng)}, {}, "conv"));
  Value* r = out0(g.add_node("Relu", {c}, {}, "relu"));
  g.add_output(out0(g.add_node("Sigmoid", {r}, {}, "sigmoid")));
  g.infer_shapes();
  Graph after = g.clone();
  ASSERT_TRUE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedQLinearConv"), 1u);
  EXPECT_EQ(count_op(after, "Relu"), 0u);
  expect_same_outputs(g, after, 1e-6, 1e-5);
}

TEST(FuseQuantizedOps, LeavesWhatCannotFuse) {
  std::mt19937 rng(4);
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 4, 5, 5}});
  Value* xq = qdq(g, x, "x", 0.02, DType::kInt8);
  // A float weight: not a quantized convolution.
  g.add_output(out0(g.add_node(
      "Conv",
      {xq,
       g.add_initializer("w", testing::random_tensor(TensorInfo{DType::kFloat32, Shape{2, 4, 1, 1}}, rng))},
      {}, "float_weight")));
  // MaxPool requantized to another scale: the pooled values are not the 8-bit input's.
  g.add_output(
      qdq(g, out0(g.add_node("MaxPool", {xq}, {{"kernel_shape", {2, 2}}}, "pool")), "p", 0.04, DType::kInt8));
  g.infer_shapes();
  Graph after = g.clone();
  EXPECT_FALSE(run_pass(fuse_quantized_ops_pass(), after));
  EXPECT_EQ(after.num_nodes(), g.num_nodes());
}

}  // namespace
}  // namespace kiln::graph
