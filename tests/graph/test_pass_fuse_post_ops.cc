// fuse_post_ops: Conv/Gemm/MatMul chains become one fused op that computes the same outputs (the
// reference interpreter runs both graphs; a residual after the activation expanded back too), and chains that
// cannot fuse are left alone: a value read twice, a graph output inside the chain, a residual of another
// shape, a non-constant Clip bound.
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_expands_back;
using testing::expect_same_outputs;
using testing::out0;
using testing::run_pass;

Value* constant(Graph& g, const std::string& name, Shape shape, std::mt19937& rng) {
  return g.add_initializer(name, testing::random_tensor(TensorInfo{DType::kFloat32, shape}, rng));
}

// x -> Conv -> [Add(skip)] -> activation (given as a builder of the ops after the Conv).
using Tail = std::function<Value*(Graph&, Value*)>;

Graph conv_chain(const Tail& tail, bool residual) {
  std::mt19937 rng(1);
  Graph g;
  g.name = "conv_chain";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 3, 6, 6}});
  Value* y = out0(g.add_node("Conv", {x, constant(g, "W", {3, 3, 3, 3}, rng), constant(g, "B", {3}, rng)},
                             {{"pads", {1, 1, 1, 1}}}, "conv"));
  if (residual) y = out0(g.add_node("Add", {y, x}, {}, "skip"));
  g.add_output(tail(g, y));
  g.infer_shapes();
  return g;
}

Tail op(const std::string& name, AttrMap attrs = {}) {
  return [=](Graph& g, Value* v) { return out0(g.add_node(name, {v}, attrs)); };
}

TEST(FusePostOps, ConvWithResidualAndEachActivation) {
  const std::vector<std::pair<std::string, Tail>> tails{
      {"Relu", op("Relu")},
      {"LeakyRelu", op("LeakyRelu", {{"alpha", 0.2}})},
      {"Elu", op("Elu", {{"alpha", 0.5}})},
      {"Sigmoid", op("Sigmoid")},
      {"HardSigmoid", op("HardSigmoid", {{"alpha", 0.3}, {"beta", 0.4}})},
      {"Tanh", op("Tanh")},
      {"HardSwish", op("HardSwish")},
      {"Gelu", op("Gelu")},
      {"GeluTanh", op("Gelu", {{"approximate", "tanh"}})},
      {"Clip",
       [](Graph& g, Value* v) {
         Value* lo = g.add_initializer("lo", Tensor::scalar(0.0, DType::kFloat32));
         Value* hi = g.add_initializer("hi", Tensor::scalar(6.0, DType::kFloat32));
         return out0(g.add_node("Clip", {v, lo, hi}));
       }},
      {"SiLU",
       [](Graph& g, Value* v) {
         return out0(g.add_node("Mul", {v, out0(g.add_node("Sigmoid", {v}))}));
       }},
  };
  for (const auto& [name, tail] : tails) {
    for (bool residual : {false, true}) {
      SCOPED_TRACE(name + (residual ? " with residual" : ""));
      const Graph before = conv_chain(tail, residual);
      Graph after = before.clone();
      EXPECT_TRUE(run_pass(fuse_post_ops_pass(), after));
      ASSERT_EQ(after.num_nodes(), 1u);
      EXPECT_EQ(count_op(after, "FusedConv"), 1u);
      EXPECT_EQ(std::get<std::string>(after.nodes()[0]->attrs.at("activation").variant()), name);
      expect_same_outputs(before, after, 1e-5, 1e-5);
    }
  }
}

TEST(FusePostOps, MatMulWithBiasAndGemmWithActivation) {
  std::mt19937 rng(2);
  Graph before;
  before.name = "mlp";
  Value* x = before.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4, 8}});
  Value* h = out0(before.add_node("MatMul", {x, constant(before, "W1", {8, 6}, rng)}));
  h = out0(before.add_node("Add", {constant(before, "b1", {6}, rng), h}));  // bias first: Add commutes
  h = out0(before.add_node("Gelu", {h}));
  h = out0(before.add_node("Reshape",
                           {h, before.add_initializer("shape", Tensor::from_vector<int64_t>({-1, 6}, {2}))}));
  h = out0(before.add_node("Gemm", {h, constant(before, "W2", {3, 6}, rng), constant(before, "b2", {3}, rng)},
                           {{"transB", 1}}));
  before.add_output(out0(before.add_node("Relu", {h})));
  before.infer_shapes();
  Graph after = before.clone();
  EXPECT_TRUE(run_pass(fuse_post_ops_pass(), after));
  EXPECT_EQ(count_op(after, "FusedMatMul"), 1u);
  EXPECT_EQ(count_op(after, "FusedGemm"), 1u);
  EXPECT_EQ(after.num_nodes(), 3u);
  expect_same_outputs(before, after, 1e-5, 1e-5);
}

// YOLOv5's bottleneck, Conv -> activation -> Add(x), on random shapes and with the Add's inputs
// either way round: one FusedConv adding the residual after the activation, the same outputs, and
// expand_fused_ops gives standard ops computing them again.
TEST(FusePostOps, ResidualAfterTheActivation) {
  std::mt19937 rng(4);
  std::uniform_int_distribution<int64_t> channels(1, 9), side(3, 11), kernel(0, 1);
  const std::vector<std::pair<std::string, Tail>> tails{
      {"SiLU",
       [](Graph& g, Value* v) {
         return out0(g.add_node("Mul", {out0(g.add_node("Sigmoid", {v})), v}));
       }},
      {"Relu", op("Relu")},
  };
  for (int trial = 0; trial < 4; ++trial) {
    for (const auto& [name, tail] : tails) {
      const int64_t c = channels(rng), k = 1 + 2 * kernel(rng);
      const bool residual_first = trial % 2 == 1;
      const Shape shape{-1, c, side(rng), side(rng)};
      SCOPED_TRACE(name + " " + shape.to_string() + " kernel " + std::to_string(k));
      Graph before;
      before.name = "bottleneck";
      Value* x = before.add_input("x", TensorInfo{DType::kFloat32, shape});
      Value* y = tail(
          before, out0(before.add_node(
                      "Conv", {x, constant(before, "W", {c, c, k, k}, rng), constant(before, "B", {c}, rng)},
                      {{"pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2}}}, "conv")));
      before.add_output(out0(
          before.add_node("Add", residual_first ? std::vector<Value*>{x, y} : std::vector<Value*>{y, x})));
      before.infer_shapes();
      Graph after = before.clone();
      EXPECT_TRUE(run_pass(fuse_post_ops_pass(), after));
      ASSERT_EQ(after.num_nodes(), 1u);
      const Node& fused = *after.nodes()[0];
      EXPECT_EQ(fused.op, "FusedConv");
      EXPECT_EQ(std::get<std::string>(fused.attrs.at("activation").variant()), name);
      EXPECT_EQ(std::get<int64_t>(fused.attrs.at("residual_after_activation").variant()), 1);
      expect_same_outputs(before, after, 1e-5, 1e-5);
      expect_expands_back(before, after, "FusedConv", "Add", 1, 1e-5, 1e-5);
    }
  }
}

TEST(FusePostOps, ChainsThatCannotFuseAreLeftAlone) {
  std::mt19937 rng(3);
  Graph g;
  g.name = "unfusable";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{1, 2, 5, 5}});
  Value* w = constant(g, "W", {2, 2, 3, 3}, rng);
  // Read twice: the Conv's output feeds a Relu and is a graph output.
  Value* c1 = out0(g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}}, "c1"));
  g.add_output(c1);
  g.add_output(out0(g.add_node("Relu", {c1})));
  // A residual that broadcasts (another shape) is not a residual.
  Value* c2 = out0(g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}}, "c2"));
  g.add_output(out0(g.add_node("Add", {c2, constant(g, "row", {5}, rng)})));
  // Clip with a bound computed at run time.
  Value* c3 = out0(g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}}, "c3"));
  Value* bound = g.add_input("bound", TensorInfo{DType::kFloat32, Shape{}});
  g.add_output(out0(g.add_node("Clip", {c3, bound})));
  g.infer_shapes();
  Graph after = g.clone();
  EXPECT_FALSE(run_pass(fuse_post_ops_pass(), after));
  EXPECT_EQ(count_op(after, "Conv"), 3u);
}

}  // namespace
}  // namespace kiln::graph
