// oneDNN's Conv and its gradients (ConvGradData, ConvGradWeight) against the reference kernels on
// shapes with odd sizes, strides, dilations, pads, auto_pad, groups and 1 to 3 spatial axes, with
// constant weights (inference) and weights fed at run time (training).
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"
#include "graph/graph.h"

namespace kiln::onednn {
namespace {

struct ConvCase {
  Shape x, w;
  AttrMap attrs;
  bool bias;
};

const std::vector<ConvCase>& conv_cases() {
  static const std::vector<ConvCase> cases{
      {{1, 3, 7, 9}, {8, 3, 3, 3}, {}, true},
      {{2, 4, 11, 6}, {5, 4, 3, 2}, {{"strides", {2, 1}}, {"pads", {1, 0, 2, 1}}}, true},
      {{1, 6, 9, 9}, {6, 1, 3, 3}, {{"group", 6}, {"pads", {1, 1, 1, 1}}}, true},  // depthwise
      {{1, 8, 8, 7}, {4, 4, 1, 1}, {{"group", 2}}, false},                         // grouped 1x1
      {{1, 2, 13, 13}, {3, 2, 3, 3}, {{"dilations", {2, 3}}, {"auto_pad", "SAME_UPPER"}}, true},
      {{3, 5, 10, 10}, {7, 5, 5, 5}, {{"strides", {3, 3}}, {"auto_pad", "VALID"}}, false},
      {{2, 3, 17}, {4, 3, 4}, {{"strides", {2}}, {"auto_pad", "SAME_LOWER"}}, true},  // 1-D
      {{1, 2, 5, 6, 7}, {3, 2, 2, 3, 2}, {{"pads", {1, 0, 1, 0, 1, 1}}}, true},       // 3-D
      {{1, 33, 5, 5}, {17, 33, 3, 3}, {{"pads", {1, 1, 1, 1}}}, true},                // odd channels
      {{16, 16, 4, 4}, {32, 16, 3, 3}, {{"pads", {1, 1, 1, 1}}}, true},               // a training batch
  };
  return cases;
}

// The shape of Conv's output for a case, as shape inference gives it.
Shape conv_output_shape(const ConvCase& c) {
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, c.x});
  graph::Value* w = g.add_input("w", ops::TensorInfo{DType::kFloat32, c.w});
  graph::Node* conv = g.add_node("Conv", {x, w}, c.attrs, "conv");
  g.add_output(conv->outputs[0]);
  g.infer_shapes();
  return conv->outputs[0]->info->shape;
}

void compare_conv(bool constant_weight) {
  std::mt19937 rng(3);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string());
    std::vector<Operand> operands{{random_tensor(c.x, rng)}, {random_tensor(c.w, rng), constant_weight}};
    if (c.bias) operands.push_back({random_tensor({c.w[0]}, rng), false});
    compare("Conv", c.attrs, operands);
  }
}

TEST(OnednnConv, ConstantWeightsOverShapesStridesDilationsPadsAndGroups) {
  compare_conv(true);
}

TEST(OnednnConv, WeightsFedAtRunTime) {
  compare_conv(false);
}

TEST(OnednnConv, GradientOfTheInput) {
  std::mt19937 rng(5);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string());
    compare(
        "ConvGradData", c.attrs,
        {{random_tensor(conv_output_shape(c), rng)}, {random_tensor(c.w, rng)}, {random_tensor(c.x, rng)}});
  }
}

TEST(OnednnConv, GradientOfTheWeight) {
  std::mt19937 rng(6);
  for (const ConvCase& c : conv_cases()) {
    SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string());
    compare(
        "ConvGradWeight", c.attrs,
        {{random_tensor(c.x, rng)}, {random_tensor(conv_output_shape(c), rng)}, {random_tensor(c.w, rng)}});
  }
}

}  // namespace
}  // namespace kiln::onednn
