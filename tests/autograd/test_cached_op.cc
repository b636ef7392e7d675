// trace() and CachedOp: a traced MLP with a seeded Dropout gives the imperative run's outputs and
// gradients in training and predict mode, caches per mode and shape, accumulates gradients with
// kAdd, recognises parameters read directly, and applies traced state updates once per call.
#include <gtest/gtest.h>

#include "autograd/cached_op.h"
#include "autograd/gradient_checker.h"
#include "kiln/kiln.hpp"

namespace kiln {
namespace {

using autograd::CachedOp;
using autograd::TraceInput;
using testing::random_array;

NDArray f32(const NDArray& a) {
  return nd::invoke1("Cast", {a}, {{"to", dtype_to_onnx(DType::kFloat32)}});
}

void expect_close(const NDArray& actual, const NDArray& expected, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<float> a = actual.to_vector<float>(), e = expected.to_vector<float>();
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], e[i], 1e-4f * std::max(1.0f, std::abs(e[i]))) << what << " " << i;
}

// y = Gemm(Dropout(Relu(Gemm(x, w1, b1))), w2, b2); Dropout is seeded, so every run draws the same mask.
std::vector<NDArray> mlp(const std::vector<NDArray>& in) {
  const NDArray h =
      nd::invoke1("Relu", {nd::invoke1("Gemm", {in[0], in[1], in[2]}, {{"transB", int64_t{1}}})});
  const NDArray training = NDArray(Tensor::full(Shape{}, autograd::is_training() ? 1 : 0, DType::kBool));
  const NDArray d =
      nd::invoke("Dropout", {h, nd::scalar(0.4, DType::kFloat32), training}, {{"seed", int64_t{7}}}, 2)[0];
  return {nd::invoke1("Gemm", {d, in[3], in[4]}, {{"transB", int64_t{1}}})};
}

const std::vector<TraceInput> kInputs{{"x", false}, {"w1", true}, {"b1", true}, {"w2", true}, {"b2", true}};

std::vector<NDArray> make_params() {
  return {f32(random_array(Shape{8, 5})), f32(random_array(Shape{8})), f32(random_array(Shape{3, 8})),
          f32(random_array(Shape{3}))};
}

// Runs `forward` on x and copies of `params` with gradients attached; returns the output and the
// parameters' gradients.
std::vector<NDArray> run_with_grads(
    const std::function<std::vector<NDArray>(const std::vector<NDArray>&)>& forward, const NDArray& x,
    const std::vector<NDArray>& params, const NDArray& head, bool training) {
  std::vector<NDArray> in{x};
  for (const NDArray& p : params) {
    NDArray c = p.copy();
    c.attach_grad();
    in.push_back(c);
  }
  NDArray y;
  {
    auto recording = autograd::record(training);
    y = forward(in)[0];
  }
  y.backward(head);
  std::vector<NDArray> result{y};
  for (size_t i = 1; i < in.size(); ++i) result.push_back(in[i].grad());
  return result;
}

TEST(CachedOp, MatchesImperativeInBothModes) {
  const std::vector<NDArray> params = make_params();
  const NDArray x = f32(random_array(Shape{4, 5})), head = f32(random_array(Shape{4, 3}));
  CachedOp op(mlp, kInputs);
  for (bool training : {true, false}) {
    const auto expected = run_with_grads(mlp, x, params, head, training);
    const auto actual =
        run_with_grads([&](const std::vector<NDArray>& in) { return op(in); }, x, params, head, training);
    for (size_t i = 0; i < expected.size(); ++i)
      expect_close(actual[i], expected[i], std::string(training ? "train " : "predict ") + std::to_string(i));
  }
  // Dropout really dropped in training mode: the outputs of the two modes differ.
  const auto train = run_with_grads(mlp, x, params, head, true)[0].to_vector<float>();
  const auto predict = run_with_grads(mlp, x, params, head, false)[0].to_vector<float>();
  EXPECT_NE(train, predict);
  EXPECT_EQ(op.num_cached(), 2u);
  op({f32(random_array(Shape{2, 5})), params[0], params[1], params[2], params[3]});  // a new batch size
  EXPECT_EQ(op.num_cached(), 3u);
}

TEST(CachedOp, GradientsAccumulateWithAdd) {
  const std::vector<NDArray> params = make_params();
  const NDArray x = f32(random_array(Shape{4, 5})), head = f32(random_array(Shape{4, 3}));
  CachedOp op(mlp, kInputs);
  NDArray w1 = params[0].copy();
  w1.attach_grad(GradReq::kAdd);
  for (int k = 0; k < 2; ++k) {
    auto recording = autograd::record(false);
    NDArray y = op({x, w1, params[1], params[2], params[3]})[0];
    y.backward(head);
  }
  const auto once = run_with_grads(mlp, x, params, head, false)[1].to_vector<float>();
  const auto twice = w1.grad().to_vector<float>();
  for (size_t i = 0; i < once.size(); ++i) EXPECT_NEAR(twice[i], 2 * once[i], 1e-4);
}

TEST(CachedOp, ParametersReadDirectlyAreInputs) {
  std::vector<NDArray> params = make_params();
  const NDArray x = f32(random_array(Shape{4, 5}));
  // The function ignores its parameter arguments and reads the arrays themselves, as a block would.
  auto direct = [&](const std::vector<NDArray>& in) {
    return mlp({in[0], params[0], params[1], params[2], params[3]});
  };
  CachedOp op(direct, kInputs);
  expect_close(op({x, params[0], params[1], params[2], params[3]})[0],
               mlp({x, params[0], params[1], params[2], params[3]})[0], "first");
  // New parameter values (same arrays' storage) are read, not baked in as constants.
  nd::invoke_into("Identity", {f32(random_array(Shape{3}))}, {params[3]});
  expect_close(op({x, params[0], params[1], params[2], params[3]})[0],
               mlp({x, params[0], params[1], params[2], params[3]})[0], "updated");
}

TEST(CachedOp, StateUpdatesApplyOncePerCall) {
  // state <- 0.5 * state + mean(x): a running statistic written the way BatchNorm's are.
  auto fn = [](const std::vector<NDArray>& in) {
    const NDArray mean = nd::invoke1("ReduceMean", {in[0]}, {{"keepdims", int64_t{0}}});
    {
      auto paused = autograd::pause(autograd::is_training());
      nd::invoke_into("Identity", {in[1] * 0.5 + mean}, {in[1]});
    }
    return std::vector<NDArray>{in[0] * 2.0};
  };
  CachedOp op(fn, {{"x", false}, {"state", true}});
  NDArray state = nd::zeros(Shape{}, DType::kFloat32);
  const NDArray x = nd::array<float>({1, 2, 3}, Shape{3});
  const NDArray y = op({x, state})[0];
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 4, 6}));
  EXPECT_FLOAT_EQ(state.to_vector<float>()[0], 2.0f);  // traced without touching it, then updated once
  op({x, state});
  EXPECT_FLOAT_EQ(state.to_vector<float>()[0], 3.0f);
}

TEST(Trace, RecordsOpsOfTracedValuesOnly) {
  const NDArray x = nd::array<float>({1, 2}, Shape{2});
  const auto traced = autograd::trace(
      [](const std::vector<NDArray>& in) {
        const NDArray c = nd::ones(Shape{2}) * 3.0;  // constants only: folded into one initializer
        return std::vector<NDArray>{nd::invoke1("Relu", {in[0] + c})};
      },
      {{"x", false}}, {x}, false);
  EXPECT_EQ(traced.num_outputs, 1);
  EXPECT_EQ(traced.graph.num_nodes(), 2u);  // Add, Relu
  EXPECT_EQ(traced.graph.initializers().size(), 1u);
}

}  // namespace
}  // namespace kiln
