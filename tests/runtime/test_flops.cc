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

}  // namespace
}  // namespace kiln::runtime
