// The tape and backward: the MXNet seed example, gradient requests, retained graphs, recording
// scopes, views, and the errors of misuse. Expected values are closed forms.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "autograd/gradient_checker.h"
#include "kiln/kiln.hpp"
#include "ops/gradient.h"
#include "ops/op_schema.h"

namespace kiln {
namespace {

// An op that has no gradient rule, so backward through it must fail naming it.
KILN_REGISTER_OP(AutogradTestNoGradient)
    .doc("Test op: y = x, with no gradient rule.")
    .input("X")
    .output("Y")
    .infer([](ops::InferContext& ctx) { return std::vector<ops::TensorInfo>{ctx.input(0)}; })
    .kernel([](ops::KernelContext& ctx) { ctx.output(0).copy_from(ctx.input(0)); });

// y = 2x with a wrong gradient rule (dx = dy): the checker must catch it.
KILN_REGISTER_OP(AutogradTestWrongGradient)
    .doc("Test op: y = 2x, with the gradient rule of y = x.")
    .input("X")
    .output("Y")
    .infer([](ops::InferContext& ctx) { return std::vector<ops::TensorInfo>{ctx.input(0)}; })
    .kernel([](ops::KernelContext& ctx) {
      ctx.output(0).copy_from(
          ops::OpRegistry::global().get("Add").run_reference({}, {ctx.input(0), ctx.input(0)})[0]);
    })
    .gradient([](ops::GradientContext& ctx) { ctx.set_input_grad(0, ctx.output_grad(0)); });

std::vector<float> values(const NDArray& a) {
  return a.to_vector<float>();
}

TEST(Autograd, SeedExample) {
  NDArray x = nd::array<float>({1, 2, 3}, {3});
  x.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    y = x * x + 3.0 * x + 2.0;
  }
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{5, 7, 9}));
}

TEST(Autograd, PowerAndHeadGradient) {
  NDArray x = nd::array<float>({1, 2, 3}, {3});
  x.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    y = nd::power(x, nd::scalar(2)) + 3.0 * x + 2.0;
  }
  y.backward(nd::array<float>({1, 10, 100}, {3}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{5, 70, 900}));
}

TEST(Autograd, GradReqWriteOverwritesAndAddAccumulates) {
  NDArray w = nd::array<float>({1, 2}, {2});
  NDArray a = nd::array<float>({1, 2}, {2});
  w.attach_grad(GradReq::kWrite);
  a.attach_grad(GradReq::kAdd);
  for (int step = 0; step < 3; ++step) {
    NDArray loss;
    {
      auto recording = autograd::record();
      loss = nd::sum(w * a * a);  // d/dw = a^2, d/da = 2 w a
    }
    loss.backward();
  }
  EXPECT_EQ(values(w.grad()), (std::vector<float>{1, 4}));
  EXPECT_EQ(values(a.grad()), (std::vector<float>{3 * 2, 3 * 8}));
}

TEST(Autograd, GradReqNullTakesNoGradient) {
  NDArray x = nd::array<float>({1, 2}, {2});
  NDArray frozen = nd::array<float>({3, 4}, {2});
  x.attach_grad();
  frozen.attach_grad(GradReq::kNull);
  NDArray y;
  {
    auto recording = autograd::record();
    y = x * frozen;
  }
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{3, 4}));
  EXPECT_THROW(frozen.grad(), Error);
}

TEST(Autograd, GradReqWriteClearsAGradientThatNoLongerFlows) {
  NDArray x = nd::array<float>({1.5f, 2.5f}, {2});
  x.attach_grad();
  for (const char* op : {"Neg", "Floor"}) {  // Floor's gradient is zero
    NDArray y;
    {
      auto recording = autograd::record();
      y = nd::invoke1(op, {x});
    }
    y.backward();
  }
  EXPECT_EQ(values(x.grad()), (std::vector<float>{0, 0}));
}

TEST(Autograd, SharedSubexpressionsSumTheirGradients) {
  NDArray x = nd::array<float>({2}, {1});
  x.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    NDArray s = x * x;  // s = x^2
    y = s * s + s + x;  // y = x^4 + x^2 + x, dy/dx = 4x^3 + 2x + 1 = 37
  }
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{37}));
}

TEST(Autograd, MultipleHeads) {
  NDArray x = nd::array<float>({1, 2}, {2});
  x.attach_grad();
  NDArray a, b;
  {
    auto recording = autograd::record();
    a = x * 2.0;
    b = x * x;
  }
  autograd::backward({a, b}, {nd::array<float>({1, 1}, {2}), nd::array<float>({10, 10}, {2})});
  EXPECT_EQ(values(x.grad()), (std::vector<float>{2 + 20, 2 + 40}));
}

TEST(Autograd, RetainGraphAllowsASecondBackward) {
  NDArray x = nd::array<float>({1, 2}, {2});
  x.attach_grad(GradReq::kAdd);
  NDArray y;
  {
    auto recording = autograd::record();
    y = x * x;
  }
  y.backward(NDArray(), /*retain_graph=*/true);
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{4, 8}));
  try {
    y.backward();
    FAIL() << "a third backward over a freed graph must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("retain_graph"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Mul"), std::string::npos) << e.what();
  }
}

TEST(Autograd, PauseStopsRecording) {
  NDArray x = nd::array<float>({1, 2}, {2});
  x.attach_grad();
  NDArray y, constant_part;
  {
    auto recording = autograd::record();
    EXPECT_TRUE(autograd::is_recording());
    {
      auto paused = autograd::pause();
      EXPECT_FALSE(autograd::is_recording());
      constant_part = x * x;  // not recorded: no gradient flows through it
    }
    EXPECT_TRUE(autograd::is_recording());
    y = x * constant_part;
  }
  EXPECT_FALSE(autograd::is_recording());
  y.backward();
  EXPECT_EQ(values(x.grad()), (std::vector<float>{1, 4}));  // d(x * c)/dx = c = x^2
  EXPECT_EQ(constant_part.autograd_entry(), nullptr);
}

TEST(Autograd, TrainingFlagFollowsScopes) {
  EXPECT_FALSE(autograd::is_training());
  {
    auto recording = autograd::record();
    EXPECT_TRUE(autograd::is_training());
    {
      auto predicting = autograd::predict_mode();
      EXPECT_FALSE(autograd::is_training());
      EXPECT_TRUE(autograd::is_recording());
    }
    EXPECT_TRUE(autograd::is_training());
  }
  {
    auto recording = autograd::record(/*train_mode=*/false);
    EXPECT_FALSE(autograd::is_training());
    auto training = autograd::train_mode();
    EXPECT_TRUE(autograd::is_training());
  }
  EXPECT_FALSE(autograd::is_training());
  EXPECT_FALSE(autograd::is_recording());
}

TEST(Autograd, GradientsFlowThroughViews) {
  NDArray x = nd::array<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  x.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    // row 1 of x^T reshaped: [2, 5]; slice of it and at() of x are views too.
    NDArray t = x.T().reshape({3, 2}).at(1);  // x^T is [[1,4],[2,5],[3,6]]; row 1 = [2, 5]
    NDArray s = x.slice(1, 0, 3, 2);          // columns 0 and 2: [[1,3],[4,6]]
    y = nd::sum(t * t) + nd::sum(s);
  }
  y.backward();
  // d/dx: 2*x at (0,1) and (1,1), plus 1 at columns 0 and 2.
  EXPECT_EQ(values(x.grad()), (std::vector<float>{1, 4, 1, 1, 10, 1}));
}

TEST(Autograd, BackwardWithoutRecordingNamesTheArray) {
  NDArray x = nd::array<float>({1, 2}, {2});
  x.attach_grad();
  NDArray y = x * x;  // not recorded
  try {
    y.backward();
    FAIL() << "backward of an unrecorded array must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("head 0 (an NDArray of shape (2,) float32)"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("autograd::record()"), std::string::npos) << e.what();
  }
}

TEST(Autograd, OpWithoutGradientRuleNamesTheOp) {
  NDArray x = nd::array<float>({1, 2}, {2});
  x.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    y = nd::invoke1("AutogradTestNoGradient", {x * 2.0});
  }
  try {
    y.backward();
    FAIL() << "backward through an op without a gradient rule must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("AutogradTestNoGradient has no gradient rule"), std::string::npos)
        << e.what();
  }
}

TEST(Autograd, MisuseErrors) {
  NDArray x = nd::array<float>({1, 2}, {2});
  EXPECT_THROW(x.grad(), Error);  // no attach_grad
  NDArray ints = nd::array<int64_t>({1, 2}, {2});
  EXPECT_THROW(ints.attach_grad(), Error);
  x.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    y = x * 2.0;
    EXPECT_THROW(y += 1.0, Error);  // in-place write into a recorded array
  }
  EXPECT_THROW(y.backward(nd::ones({3})), Error);  // head gradient of the wrong shape
  EXPECT_THROW(autograd::backward({y}, {NDArray(), NDArray()}), Error);
  // Outside recording, in-place updates of variables (an optimizer step) are fine.
  x -= x.grad();
  EXPECT_EQ(values(x), (std::vector<float>{1, 2}));
}

TEST(Autograd, AttachGradDetachesARecordedResult) {
  NDArray x = nd::array<float>({3}, {1});
  x.attach_grad();
  NDArray h, y;
  {
    auto recording = autograd::record();
    h = x * x;
    h.attach_grad();  // h becomes a leaf: gradients stop there
    y = h * 2.0;
  }
  y.backward();
  EXPECT_EQ(values(h.grad()), (std::vector<float>{2}));
  EXPECT_EQ(values(x.grad()), (std::vector<float>{0}));
}

TEST(GradientChecker, CatchesAWrongRule) {
  EXPECT_NONFATAL_FAILURE(
      testing::expect_gradient_matches({"AutogradTestWrongGradient", {testing::random_array({1})}}),
      "finite differences");
}

}  // namespace
}  // namespace kiln
