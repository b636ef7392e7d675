// count_flops against closed forms: 2 FLOPs per multiply-add of Conv (N*M*OH*OW * C/group*kH*kW),
// Gemm and batched MatMul, one per output element of elementwise ops, the same for a fused op as
// for its base op, and unknown shapes counted as unknown rather than guessed.
#include <gtest/gtest.h>

#include "runtime/flops.h"

namespace kiln::runtime {
namespace {

using graph::Graph;
using graph::Value;
using ops::TensorInfo;

Value* weight(Graph& g, const std::string& name, const Shape& shape) {
  return g.add_initializer(name, Tensor::zeros(shape, DType::kFloat32));
}

TEST(CountFlops, ClosedFormsPerOpAndFusedOpsCountAsTheirBase) {
  for (const bool fused : {false, true}) {
    Graph g;
    Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{2, 4, 8, 8}});
    // Conv: (2, 6, 8, 8) out, 4/2 input channels per group, 3x3 kernel.
    AttrMap conv_attrs{{"pads", {1, 1, 1, 1}}, {"group", 2}};
    if (fused) conv_attrs.emplace("activation", "Relu");
    Value* c =
        g.add_node(fused ? "FusedConv" : "Conv", {x, weight(g, "w", {6, 2, 3, 3})}, conv_attrs)->outputs[0];
    Value* r = g.add_node("Relu", {c})->outputs[0];
    Value* flat = g.add_node("Flatten", {r})->outputs[0];  // (2, 384)
    AttrMap gemm_attrs{{"transB", 1}};
    if (fused) gemm_attrs.emplace("activation", "Tanh");
    Value* y =
        g.add_node(fused ? "FusedGemm" : "Gemm", {flat, weight(g, "fc", {5, 384})}, gemm_attrs)->outputs[0];
    Value* m =
        g.add_node(
             fused ? "FusedMatMul" : "MatMul",
             {g.add_node("Reshape", {y, g.add_initializer("s", Tensor::from_vector<int64_t>({2, 5, 1}, {3}))})
                  ->outputs[0],
              weight(g, "mm", {1, 7})})
            ->outputs[0];
    g.set_outputs({m});
    g.infer_shapes();
    const FlopCount count = count_flops(g);
    const int64_t conv = 2 * (2 * 6 * 8 * 8) * (2 * 3 * 3), gemm = 2 * (2 * 5) * 384,
                  matmul = 2 * (2 * 5 * 7) * 1;
    EXPECT_EQ(count.by_op.at(fused ? "FusedConv" : "Conv"), conv);
    EXPECT_EQ(count.by_op.at(fused ? "FusedGemm" : "Gemm"), gemm);
    EXPECT_EQ(count.by_op.at(fused ? "FusedMatMul" : "MatMul"), matmul);
    EXPECT_EQ(count.by_op.at("Relu"), 2 * 6 * 8 * 8);
    EXPECT_EQ(count.total, conv + gemm + matmul + 2 * 6 * 8 * 8);
    EXPECT_EQ(count.unknown_nodes, 0);
  }
}

// The int8 ops count as their float base ops (their weight is input 3).
TEST(CountFlops, Int8OpsCountAsTheirBase) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kUInt8, Shape{2, 4, 8, 8}});
  Value* scale = g.add_initializer("s", Tensor::scalar(0.1, DType::kFloat32));
  Value* c = g.add_node("FusedQLinearConv",
                        {x, scale, nullptr, g.add_initializer("w", Tensor::zeros({6, 2, 3, 3}, DType::kInt8)),
                         scale, nullptr, scale},
                        {{"pads", {1, 1, 1, 1}}, {"group", 2}})
                 ->outputs[0];
  Value* rows =
      g.add_node("Reshape", {c, g.add_initializer("shape", Tensor::from_vector<int64_t>({2, 384}, {2}))})
          ->outputs[0];
  g.set_outputs({g.add_node("FusedQLinearMatMul",
                            {rows, scale, nullptr,
                             g.add_initializer("b", Tensor::zeros({384, 5}, DType::kInt8)), scale})
                     ->outputs[0]});
  g.infer_shapes();
  const FlopCount count = count_flops(g);
  EXPECT_EQ(count.by_op.at("FusedQLinearConv"), 2 * (2 * 6 * 8 * 8) * (2 * 3 * 3));
  EXPECT_EQ(count.by_op.at("FusedQLinearMatMul"), 2 * (2 * 5) * 384);
  EXPECT_EQ(count.unknown_nodes, 0);
}

TEST(CountFlops, FreeDimensionsAreCountedAsUnknown) {
  Graph g;
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 16}});
  g.set_outputs({g.add_node("MatMul", {x, weight(g, "w", {16, 4})})->outputs[0]});
  g.infer_shapes();
  const FlopCount count = count_flops(g);
  EXPECT_EQ(count.total, 0);
  EXPECT_EQ(count.unknown_nodes, 1);
}

// Attention's two products, Einsum over its index space (an ellipsis broadcast), the recurrent
// cells' input and recurrent products, the integer ops; and the ops no rule counts, listed.
TEST(CountFlops, AttentionEinsumRecurrentIntegerAndTheOpsLeftOut) {
  Graph g;
  // Attention, 4-D: B 2, H 3, S_q 5, S_kv 7, D 8 (V's head size 4).
  Value* q = g.add_input("q", TensorInfo{DType::kFloat32, Shape{2, 3, 5, 8}});
  Value* k = g.add_input("k", TensorInfo{DType::kFloat32, Shape{2, 3, 7, 8}});
  Value* v = g.add_input("v", TensorInfo{DType::kFloat32, Shape{2, 3, 7, 4}});
  Value* att = g.add_node("Attention", {q, k, v}, {}, "", 1)->outputs[0];
  // Einsum "...ij,jk->...ik" over (2, 3, 5, 4) and (4, 6): 2*3*5*4*6 points.
  Value* e =
      g.add_node("Einsum", {att, weight(g, "ew", {4, 6})}, {{"equation", "...ij,jk->...ik"}})->outputs[0];
  // LSTM: 9 steps, batch 2, input 6, hidden 5, both directions: 4 gates.
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{9, 2, 6}});
  Value* lstm = g.add_node("LSTM", {x, weight(g, "W", {2, 20, 6}), weight(g, "R", {2, 20, 5})},
                           {{"hidden_size", 5}, {"direction", "bidirectional"}}, "", 1)
                    ->outputs[0];
  // MatMulInteger: (4, 6) x (6, 3).
  Value* a8 = g.add_input("a8", TensorInfo{DType::kUInt8, Shape{4, 6}});
  Value* mi = g.add_node("MatMulInteger", {a8, g.add_initializer("b8", Tensor::zeros({6, 3}, DType::kInt8))})
                  ->outputs[0];
  Value* pooled = g.add_node("GlobalAveragePool", {e})->outputs[0];
  Value* moved = g.add_node("Transpose", {lstm})->outputs[0];
  g.set_outputs({pooled, moved, mi});
  g.infer_shapes();
  const FlopCount count = count_flops(g);
  EXPECT_EQ(count.by_op.at("Attention"), 2 * (2 * 3 * 5 * 8 + 2 * 3 * 5 * 4) * 7);
  EXPECT_EQ(count.by_op.at("Einsum"), 2 * (2 * 3 * 5 * 4 * 6));
  EXPECT_EQ(count.by_op.at("LSTM"), 2 * (9 * 2) * (2 * 20 * 6 + 2 * 20 * 5));
  EXPECT_EQ(count.by_op.at("MatMulInteger"), 2 * 4 * 3 * 6);
  EXPECT_EQ(count.unknown_nodes, 0);
  EXPECT_EQ(count.not_counted, (std::map<std::string, int>{{"GlobalAveragePool", 1}, {"Transpose", 1}}));
  EXPECT_EQ(not_counted_text(count), "GlobalAveragePool (1), Transpose (1)");
}

}  // namespace
}  // namespace kiln::runtime
