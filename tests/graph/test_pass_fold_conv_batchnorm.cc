// fold_conv_batchnorm: Conv + inference BatchNormalization becomes one Conv, for plain and
// grouped convs, with and without bias, in every float dtype. Folding reassociates the
// arithmetic, so outputs match within a tolerance per dtype: 1e-5 relative (+1e-5 absolute) for
// float32, 1e-12 for float64, and the 16-bit floats within a few of their rounding steps
// (3e-3 / 2e-2 relative, 2e-2 / 1e-1 absolute for float16 / bfloat16).
#include "graph/passes/passes.h"
#include "pass_test_util.h"

namespace kiln::graph {
namespace {

using testing::count_op;
using testing::expect_same_outputs;
using testing::run_pass;

struct Case {
  DType dtype;
  int64_t group;
  bool bias;
  double atol, rtol;
};

Value* random_constant(Graph& g, const std::string& name, Shape shape, DType dtype, std::mt19937& rng,
                       double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape.numel()));
  for (double& e : v) e = dist(rng);
  return g.add_initializer(name, Tensor::from_vector(v, shape).cast(dtype));
}

// x -> Conv(W[, B]) -> BatchNormalization -> Relu -> y
Graph conv_bn(const Case& c, bool bn_is_output = false) {
  std::mt19937 rng(11);
  Graph g;
  g.name = "conv_bn";
  const int64_t in_channels = 4, out_channels = 8;
  Value* x = g.add_input("x", TensorInfo{c.dtype, Shape{-1, in_channels, 6, 6}});
  std::vector<Value*> conv_inputs{
      x, random_constant(g, "W", Shape{out_channels, in_channels / c.group, 3, 3}, c.dtype, rng, -0.5, 0.5)};
  if (c.bias) conv_inputs.push_back(random_constant(g, "B", Shape{out_channels}, c.dtype, rng, -1, 1));
  Node* conv = g.add_node("Conv", conv_inputs, {{"pads", {1, 1, 1, 1}}, {"group", c.group}}, "conv");
  Node* bn =
      g.add_node("BatchNormalization",
                 {conv->outputs[0], random_constant(g, "scale", Shape{out_channels}, c.dtype, rng, 0.5, 2),
                  random_constant(g, "beta", Shape{out_channels}, c.dtype, rng, -1, 1),
                  random_constant(g, "mean", Shape{out_channels}, c.dtype, rng, -1, 1),
                  random_constant(g, "var", Shape{out_channels}, c.dtype, rng, 0.25, 2)},
                 {{"epsilon", 1e-3}}, "bn");
  if (bn_is_output) {
    g.set_outputs({bn->outputs[0]});
  } else {
    g.set_outputs({g.add_node("Relu", {bn->outputs[0]}, {}, "relu")->outputs[0]});
  }
  return g;
}

TEST(FoldConvBatchNorm, FoldsPlainAndGroupedConvsInEveryFloatDType) {
  const Case cases[] = {
      {DType::kFloat32, 1, true, 1e-5, 1e-5},    {DType::kFloat32, 2, false, 1e-5, 1e-5},
      {DType::kFloat64, 1, false, 1e-12, 1e-12}, {DType::kFloat64, 4, true, 1e-12, 1e-12},
      {DType::kFloat16, 2, true, 2e-2, 3e-3},    {DType::kBFloat16, 1, true, 1e-1, 2e-2},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(dtype_name(c.dtype)) + " group " + std::to_string(c.group) +
                 (c.bias ? " with bias" : " without bias"));
    Graph g = conv_bn(c);
    Graph before = g.clone();
    EXPECT_TRUE(run_pass(fold_conv_batchnorm_pass(), g));
    EXPECT_EQ(count_op(g, "BatchNormalization"), 0u);
    ASSERT_EQ(count_op(g, "Conv"), 1u);
    const Node* conv = g.find_node("conv");
    ASSERT_EQ(conv->inputs.size(), 3u);
    EXPECT_EQ(conv->inputs[1]->constant.dtype(), c.dtype);
    EXPECT_EQ(conv->inputs[2]->constant.dtype(), c.dtype);
    EXPECT_EQ(g.find_node("relu")->inputs[0], conv->outputs[0]);
    expect_same_outputs(before, g, c.atol, c.rtol);
    // The old weights are unread now; dead-node elimination removes them.
    run_pass(dead_node_elimination_pass(), g);
    EXPECT_EQ(g.find_value("W"), nullptr);
    EXPECT_EQ(g.find_value("mean"), nullptr);
  }
}

TEST(FoldConvBatchNorm, TheConvTakesTheOutputNameOfTheBatchNorm) {
  Graph g = conv_bn({DType::kFloat32, 1, true, 0, 0}, /*bn_is_output=*/true);
  const std::string name = g.outputs()[0]->name;
  Graph before = g.clone();
  EXPECT_TRUE(run_pass(fold_conv_batchnorm_pass(), g));
  EXPECT_EQ(g.num_nodes(), 1u);
  EXPECT_EQ(g.outputs()[0]->name, name);
  EXPECT_EQ(g.outputs()[0]->producer, g.find_node("conv"));
  expect_same_outputs(before, g, 1e-5, 1e-5);
}

TEST(FoldConvBatchNorm, LeavesUnfoldablePairsAlone) {
  // The Conv's output is read by a second node too.
  Graph shared = conv_bn({DType::kFloat32, 1, true, 0, 0});
  shared.add_output(shared.add_node("Neg", {shared.find_node("conv")->outputs[0]})->outputs[0]);
  EXPECT_FALSE(run_pass(fold_conv_batchnorm_pass(), shared));
  // The statistics are a graph input, not a constant.
  Graph fed = conv_bn({DType::kFloat32, 1, true, 0, 0});
  Value* mean = fed.add_input("fed_mean", TensorInfo{DType::kFloat32, Shape{8}});
  fed.set_input(fed.find_node("bn"), 3, mean);
  EXPECT_FALSE(run_pass(fold_conv_batchnorm_pass(), fed));
  // Training mode normalizes with the batch's statistics.
  Graph training = conv_bn({DType::kFloat32, 1, true, 0, 0});
  training.find_node("bn")->attrs.insert_or_assign("training_mode", AttrValue(1));
  EXPECT_FALSE(run_pass(fold_conv_batchnorm_pass(), training));
  EXPECT_EQ(count_op(training, "BatchNormalization"), 1u);
}

}  // namespace
}  // namespace kiln::graph
