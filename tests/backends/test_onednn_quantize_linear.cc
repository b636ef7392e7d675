// oneDNN's QuantizeLinear (a reorder with the scale and zero point; a plain loop for tiny tensors)
// against the reference kernel: 1-D to 4-D shapes with odd sizes, uint8 and
// int8 with and without zero points, values beyond the 8-bit range (saturation), exact halves
// (rounding half to even; the reorder is one step off with an odd zero point, the loop exact, see
// src/backends/onednn/quantize_linear.cc), and a 4-D output written channels last for the int8
// kernels that read it.
#include <gtest/gtest.h>

#include <random>

#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

using Ints = std::vector<int64_t>;

// The 8-bit outputs of the oneDNN and the reference plan of `g` for `input`.
std::pair<std::vector<float>, std::vector<float>> run_both(const graph::Graph& g, const Tensor& input) {
  const auto reference = runtime::compile(g);
  const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
  for (const auto& step : fast->steps) EXPECT_EQ(step.provider, "onednn") << step.label;
  const Tensor got = runtime::Executor(fast).run({input})[0];
  const Tensor want = runtime::Executor(reference).run({input})[0];
  EXPECT_EQ(got.dtype(), want.dtype());
  return {got.cast(DType::kFloat32).to_vector<float>(), want.cast(DType::kFloat32).to_vector<float>()};
}

graph::Graph quantize_graph(const Shape& shape, float scale, std::optional<Tensor> zero_point) {
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, shape});
  graph::Value* s = g.add_initializer("s", Tensor::scalar(scale, DType::kFloat32));
  graph::Value* z = zero_point ? g.add_initializer("z", *zero_point) : nullptr;
  g.add_output(g.add_node("QuantizeLinear", {x, s, z}, {}, "q")->outputs[0]);
  g.infer_shapes();
  return g;
}

// Past kSerialFlops / kFlopsPerStreamedElement elements a tensor goes through a reorder on two
// threads.
const Shape kReorderShape{1, 8, 256, 257};

TEST(OnednnQuantizeLinear, SmallTensorsAreExactlyTheReference) {
  std::mt19937 rng(23);
  // At most kLoopQuantizeElements elements.
  for (const Shape& shape : std::vector<Shape>{{7}, {3, 5}, {2, 3, 9}, {1, 3, 5, 7}, {2, 2, 4, 4}}) {
    for (const Tensor& zero : {Tensor::scalar(131, DType::kUInt8), Tensor::scalar(-5, DType::kInt8)}) {
      const auto [got, want] =
          run_both(quantize_graph(shape, 0.0213f, zero), random_tensor(shape, rng, -3.f, 3.f));
      ASSERT_EQ(got, want) << "shape " << shape;
    }
  }
}

TEST(OnednnQuantizeLinear, AgreesWithTheReference) {
  std::mt19937 rng(21);
  const std::vector<Shape> shapes{{7}, {3, 5}, {2, 3, 9}, {1, 3, 11, 13}, {2, 5, 4, 6}, kReorderShape};
  const std::vector<std::optional<Tensor>> zero_points{
      std::nullopt, Tensor::scalar(0, DType::kUInt8), Tensor::scalar(131, DType::kUInt8),
      Tensor::scalar(0, DType::kInt8), Tensor::scalar(-5, DType::kInt8)};
  for (const Shape& shape : shapes) {
    for (const auto& zero : zero_points) {
      // About 300 steps across [-3, 3): values beyond the 8-bit range saturate.
      const Tensor x = random_tensor(shape, rng, -3.f, 3.f);
      const auto [got, want] = run_both(quantize_graph(shape, 0.0213f, zero), x);
      ASSERT_EQ(got.size(), want.size());
      // Multiplying by the reciprocal may put a quotient within a rounding error of a half on the
      // other side of it: one step, on a rare element.
      int64_t differing = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], 1.0) << "shape " << shape << " element " << i;
        differing += got[i] != want[i];
      }
      EXPECT_LE(differing, 1 + shape.numel() / 10000) << "shape " << shape;
    }
  }
}

TEST(OnednnQuantizeLinear, RoundsHalvesToEvenWithAnEvenZeroPoint) {
  // A power-of-two scale has an exact reciprocal: x = k / 8 with scale 1/4 gives exact halves.
  const Shape shape = kReorderShape;
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < values.size(); ++i) values[i] = (static_cast<float>(i % 401) - 200.f) / 8.f;
  for (const Tensor& zero : {Tensor::scalar(4, DType::kUInt8), Tensor::scalar(-6, DType::kInt8)}) {
    const auto [got, want] = run_both(quantize_graph(shape, 0.25f, zero), Tensor::from_vector(values, shape));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << "x = " << values[i];
  }
  // oneDNN adds the zero point before it rounds: with an odd one, a half goes to the other
  // neighbour (round(-2.5) + 3 = 1 against round(0.5) = 0), one step away.
  for (const Tensor& zero : {Tensor::scalar(3, DType::kUInt8), Tensor::scalar(-7, DType::kInt8)}) {
    const auto [got, want] = run_both(quantize_graph(shape, 0.25f, zero), Tensor::from_vector(values, shape));
    for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1.0) << "x = " << values[i];
  }
}

// The quantized input of an int8 chain is written channels last, the layout 8-bit MaxPool reads
// (a row-major 8-bit input would stay with the reference kernel), with no conversion between:
// QuantizeLinear, MaxPool, an int8 convolution with a float32 output.
TEST(OnednnQuantizeLinear, WritesChannelsLastForTheInt8KernelsAfterIt) {
  std::mt19937 rng(22);
  const Shape shape{1, 5, 9, 11};
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, shape});
  graph::Value* scale = g.add_initializer("s", Tensor::scalar(0.02, DType::kFloat32));
  graph::Value* zero = g.add_initializer("z", Tensor::scalar(126, DType::kUInt8));
  graph::Node* q = g.add_node("QuantizeLinear", {x, scale, zero}, {}, "q");
  graph::Node* pool =
      g.add_node("MaxPool", {q->outputs[0]}, {{"kernel_shape", Ints{3, 3}}, {"pads", Ints{1, 1, 1, 1}}});
  graph::Node* conv = g.add_node(
      "FusedQLinearConv", {pool->outputs[0], scale, zero,
                           g.add_initializer("w", random_tensor({4, 5, 3, 3}, rng, -64, 63, DType::kInt8)),
                           g.add_initializer("ws", Tensor::scalar(0.01, DType::kFloat32))});
  g.add_output(conv->outputs[0]);
  g.infer_shapes();
  const auto fast = runtime::compile(g, {.providers = {onednn_provider()}});
  ASSERT_EQ(fast->steps.size(), 3u) << "a conversion between the int8 kernels";
  const runtime::PlanValue& quantized = fast->values.at(static_cast<size_t>(fast->steps[0].outputs[0]));
  ASSERT_NE(quantized.layout, nullptr);
  EXPECT_EQ(quantized.layout->describe(), "oneDNN acdb u8");
  // Quotients a quarter step from an integer, so that both kernels quantize alike.
  std::uniform_int_distribution<int> steps(-140, 140);
  std::vector<float> values(static_cast<size_t>(shape.numel()));
  for (float& v : values) v = (static_cast<float>(steps(rng)) + 0.25f) * 0.02f;
  const auto [got, want] = run_both(g, Tensor::from_vector(values, shape));
  double largest = 1e-3;
  for (float v : want) largest = std::max(largest, std::fabs(double{v}));
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 * largest) << "element " << i;
}

}  // namespace
}  // namespace kiln::onednn
