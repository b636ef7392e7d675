// Flatten of a value a convolution leaves in a oneDNN layout: one oneDNN step (no Reorder before
// it) whose output equals the reference's exactly, for a small map (plain loops), padded channels
// included, and a large one (a oneDNN reorder), at axis 1 and 2.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

using Ints = std::vector<int64_t>;

TEST(OnednnFlatten, ReadsTheBlockedLayoutOfAConvolution) {
  std::mt19937 rng(41);
  for (const Shape& shape : {Shape{1, 23, 4, 4}, Shape{2, 64, 64, 64}}) {
    for (int64_t axis : {1, 2}) {
      SCOPED_TRACE(shape.to_string() + " axis " + std::to_string(axis));
      graph::Graph g;
      graph::Value* x =
          g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{shape[0], 3, shape[2], shape[3]}});
      graph::Value* conv =
          g.add_node("Conv", {x, g.add_initializer("w", random_tensor({shape[1], 3, 3, 3}, rng))},
                     {{"pads", Ints{1, 1, 1, 1}}}, "conv")
              ->outputs[0];
      g.add_output(g.add_node("Flatten", {conv}, {{"axis", axis}}, "flatten")->outputs[0]);
      g.infer_shapes();
      const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
      ASSERT_EQ(fast->steps.size(), 2u) << "a conversion before Flatten";
      EXPECT_EQ(fast->steps[1].provider, "onednn");
      ASSERT_NE(fast->values.at(static_cast<size_t>(fast->steps[1].inputs[0])).layout, nullptr);
      const Tensor input = random_tensor({shape[0], 3, shape[2], shape[3]}, rng);
      const Tensor got = runtime::Executor(fast).run({input})[0];
      // The convolution's own output, converted by the runtime, is what Flatten must reshape.
      graph::Graph conv_only = g.clone();
      conv_only.set_outputs({conv_only.find_value(conv->name)});
      ASSERT_NE(conv_only.outputs()[0], nullptr);
      const Tensor want =
          runtime::Executor(runtime::compile(conv_only, {.providers = {onednn_provider()}})).run({input})[0];
      ASSERT_EQ(got.numel(), want.numel());
      EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    }
  }
}

}  // namespace
}  // namespace kiln::onednn
