// Shapes decided at run time: small inputs whose values decide shapes (a Reshape's shape, a
// ConstantOfShape's shape) key the plan cache and fold into a static plan; data-dependent sizes
// (NonZero, NonMaxSuppression) are learnt while running, the rest planned per size. Checked
// against the reference interpreter (graph::evaluate), with the errors for sizes that make no
// sense or exceed max_dynamic_elements, and many threads on one staged model.
#include <gtest/gtest.h>

#include <thread>

#include "kiln/predictor.hpp"
#include "runtime_test_util.h"
#include "test_support.h"

namespace kiln::runtime {
namespace {

using namespace testing;
using kiln::testing::expect_error;

Tensor int64s(const std::vector<int64_t>& values) {
  return Tensor::from_vector(values, Shape{static_cast<int64_t>(values.size())});
}

// x (f32, ?) and shape (int64 [k]) -> Relu(Reshape(x, shape)).
Graph reshape_by_input() {
  Graph g;
  g.name = "reshape_by_input";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1}});
  Value* shape = g.add_input("shape", TensorInfo{DType::kInt64, Shape{-1}});
  Value* r = g.add_node("Reshape", {x, shape}, {}, "reshape")->outputs[0];
  g.set_outputs({g.add_node("Relu", {r}, {}, "relu")->outputs[0]});
  return g;
}

// x (f32 [n, 4]) -> the rows with a positive first column (NonZero -> Gather), scaled, and the
// positions themselves: the sizes after NonZero depend on x's values.
Graph rows_above_zero() {
  std::mt19937 rng(3);
  Graph g;
  g.name = "rows_above_zero";
  Value* x = g.add_input("x", TensorInfo{DType::kFloat32, Shape{-1, 4}});
  Value* zero = g.add_initializer("zero", Tensor::from_vector(std::vector<float>{0.f}, Shape{}));
  Value* column = g.add_initializer("column", int64s({0}));
  Value* first = g.add_node("Gather", {x, column}, {{"axis", int64_t{1}}}, "first")->outputs[0];
  Value* above = g.add_node("Greater", {first, zero}, {}, "above")->outputs[0];
  Value* flat = g.add_node("Flatten", {above}, {{"axis", int64_t{0}}}, "flat")->outputs[0];
  Value* nz = g.add_node("NonZero", {flat}, {}, "nz")->outputs[0];
  Value* picked_index = g.add_initializer("row_of_nz", int64s({1}));
  Value* rows = g.add_node("Gather", {nz, picked_index}, {{"axis", int64_t{0}}}, "rows")->outputs[0];
  Value* row_list = g.add_node("Flatten", {rows}, {{"axis", int64_t{0}}}, "row_list")->outputs[0];
  Value* squeezed_axes = g.add_initializer("axes", int64s({0}));
  Value* indices = g.add_node("Squeeze", {row_list, squeezed_axes}, {}, "indices")->outputs[0];
  Value* picked = g.add_node("Gather", {x, indices}, {{"axis", int64_t{0}}}, "picked")->outputs[0];
  Value* w = g.add_initializer("w", random_tensor({4, 3}, rng));
  Value* scaled = g.add_node("MatMul", {picked, w}, {}, "scaled")->outputs[0];
  g.set_outputs({scaled, nz});
  return g;
}

TEST(DynamicShapes, ShapeInputsKeyThePlanCache) {
  const Graph g = reshape_by_input();
  Predictor p(g.clone());
  std::mt19937 rng(1);
  const Tensor x = random_tensor({24}, rng);
  for (const auto& dims : std::vector<std::vector<int64_t>>{{2, 12}, {4, -1}, {2, 3, 4}, {2, 12}}) {
    const std::vector<Tensor> inputs{x, int64s(dims)};
    const std::vector<Tensor> out = p.predict(inputs);
    expect_same(out, reference_evaluate(g, inputs));
  }
  EXPECT_EQ(p.num_cached_plans(), 3u);  // (2, 12) came twice: one plan
}

TEST(DynamicShapes, ShapeValuesThatMakeNoSenseNameTheNode) {
  const Graph g = reshape_by_input();
  Predictor p(g.clone());
  std::mt19937 rng(1);
  const Tensor x = random_tensor({24}, rng);
  expect_error([&] { p.predict({x, int64s({5, 5})}); }, ErrorCode::kShapeMismatch, {"reshape"});
  expect_error([&] { p.predict({x, int64s({-1, -1})}); }, ErrorCode::kInvalidArgument, {"reshape"});
  // Still usable, and the failures were not cached.
  EXPECT_EQ(p.num_cached_plans(), 0u);
  expect_same(p.predict({x, int64s({6, 4})}), reference_evaluate(g, {x, int64s({6, 4})}));
}

TEST(DynamicShapes, ConstantOfShapeOverTheLimitIsRefused) {
  Graph g;
  g.name = "fill";
  Value* shape = g.add_input("shape", TensorInfo{DType::kInt64, Shape{2}});
  g.set_outputs({g.add_node("ConstantOfShape", {shape}, {}, "fill")->outputs[0]});
  Predictor p(std::move(g), {.max_dynamic_elements = 1000});
  expect_error(
      [&] {
        p.predict({int64s({1000000, 1000000})});
      },
      ErrorCode::kOutOfRange, {"ConstantOfShape 'fill'", "max_dynamic_elements = 1000"});
  expect_error(
      [&] {
        p.predict({int64s({int64_t{1} << 40, int64_t{1} << 40})});
      },
      ErrorCode::kOutOfRange, {"ConstantOfShape 'fill'"});
  const std::vector<Tensor> out = p.predict({int64s({10, 20})});
  EXPECT_EQ(out[0].shape(), (Shape{10, 20}));
}

TEST(DynamicShapes, DataDependentSizesAreLearntWhileRunning) {
  const Graph g = rows_above_zero();
  Predictor p(g.clone(), {.kernels = "reference"});
  std::mt19937 rng(2);
  for (int call = 0; call < 6; ++call) {
    const Tensor x = random_tensor({8 + call % 3, 4}, rng);
    const std::vector<Tensor> out = p.predict({x});
    const std::vector<Tensor> want = reference_evaluate(g, {x});
    expect_same({out[0]}, {want[0]});
    EXPECT_EQ(out[1].to_vector<int64_t>(), want[1].to_vector<int64_t>());
  }
  EXPECT_EQ(p.num_cached_plans(), 3u);  // one per input shape; the tails are cached inside
}

TEST(DynamicShapes, NoRowSelectedGivesEmptyOutputs) {
  const Graph g = rows_above_zero();
  Predictor p(g.clone());
  const Tensor x = Tensor::full(Shape{5, 4}, -1.0, DType::kFloat32);
  const std::vector<Tensor> out = p.predict({x});
  EXPECT_EQ(out[0].shape(), (Shape{0, 3}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 0}));  // NonZero of a (1, 5) mask: 2 coordinates, none found
}

TEST(DynamicShapes, DataDependentSizeOverTheLimitNamesTheNodeAndLeavesThePredictorUsable) {
  const Graph g = rows_above_zero();
  Predictor p(g.clone(), {.max_dynamic_elements = 10});
  expect_error(
      [&] {
        p.predict({Tensor::full(Shape{20, 4}, 1.0, DType::kFloat32)});
      },
      ErrorCode::kOutOfRange, {"NonZero 'nz'", "max_dynamic_elements = 10"});
  const Tensor x = Tensor::full(Shape{20, 4}, -1.0, DType::kFloat32);
  EXPECT_EQ(p.predict({x})[0].shape(), (Shape{0, 3}));
}

TEST(DynamicShapes, ManyThreadsShareAStagedModel) {
  const Graph g = rows_above_zero();
  Predictor p(g.clone(), {.kernels = "reference"});
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(10 + t));
      for (int call = 0; call < 20; ++call) {
        const Tensor x = random_tensor({6, 4}, rng);
        const std::vector<Tensor> out = p.predict({x});
        const std::vector<Tensor> want = reference_evaluate(g, {x});
        if (out[0].shape() != want[0].shape() || out[0].to_vector<float>() != want[0].to_vector<float>())
          ++failures[static_cast<size_t>(t)];
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[static_cast<size_t>(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln::runtime
