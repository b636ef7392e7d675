// autograd::grad with create_graph: the gradient computation is recorded, so gradients of
// gradients follow, through op calls and through a CachedOp (a hybridized block). Checked against
// closed forms, the same function run op by op, and central differences of the first gradient in
// float64.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "autograd/cached_op.h"
#include "autograd/gradient_checker.h"
#include "kiln/kiln.hpp"

namespace kiln {
namespace {

std::vector<double> values(const NDArray& a) {
  return a.astype(DType::kFloat64).to_vector<double>();
}

NDArray array64(const std::vector<double>& v, const Shape& shape) {
  return nd::array(v, shape);
}

TEST(HigherOrderGradients, SecondAndThirdDerivativesOfACube) {
  const std::vector<double> points{0.5, -1.5, 2.0};
  NDArray x = array64(points, {3});
  x.attach_grad();
  NDArray first, second;
  {
    auto recording = autograd::record();
    const NDArray y = x * x * x;
    first = autograd::grad({y}, {x}, {}, true, true).at(0);  // kept for the next derivatives
    second = autograd::grad({first}, {x}, {}, true, true).at(0);
  }
  const NDArray third = autograd::grad({second}, {x}).at(0);
  for (size_t i = 0; i < points.size(); ++i) {
    EXPECT_NEAR(values(first)[i], 3 * points[i] * points[i], 1e-12);
    EXPECT_NEAR(values(second)[i], 6 * points[i], 1e-12);
    EXPECT_NEAR(values(third)[i], 6.0, 1e-12);
  }
  // grad() returns the gradients and leaves the buffer attach_grad made alone.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 0, 0}));
  // backward() over a recorded gradient fills the buffer with the second derivative.
  NDArray again;
  {
    auto recording = autograd::record();
    again = autograd::grad({x * x * x}, {x}, {}, true, true).at(0);
  }
  again.backward();
  for (size_t i = 0; i < points.size(); ++i) EXPECT_NEAR(values(x.grad())[i], 6 * points[i], 1e-12);
}

// f(x) = sum(tanh(W x) * exp(x / 2)): the Hessian-vector product d/dx <grad f(x), v> against
// central differences of grad f.
TEST(HigherOrderGradients, HessianVectorProductMatchesFiniteDifferences) {
  const NDArray w = array64({0.3, -0.7, 0.2, 0.5, 0.1, -0.4, 0.9, -0.2, 0.6}, {3, 3});
  const NDArray v = array64({1.0, -2.0, 0.5}, {3, 1});
  auto gradient_at = [&](const std::vector<double>& point, bool create_graph, NDArray* x_out) {
    NDArray x = array64(point, {3, 1});
    x.attach_grad();
    auto recording = autograd::record();
    const NDArray f = nd::sum(nd::tanh(nd::dot(w, x)) * nd::exp(x * 0.5));
    NDArray g = autograd::grad({f}, {x}, {}, create_graph, create_graph).at(0);
    if (x_out != nullptr) *x_out = x;
    return g;
  };
  const std::vector<double> point{0.2, -0.4, 0.7};
  NDArray x;
  NDArray hv;
  {
    const NDArray g = gradient_at(point, true, &x);
    auto recording = autograd::record();
    hv = autograd::grad({nd::sum(g * v)}, {x}).at(0);
  }
  const double h = 1e-5;
  const std::vector<double> direction = values(v);
  for (size_t i = 0; i < point.size(); ++i) {
    std::vector<double> plus = point, minus = point;
    plus[i] += h;
    minus[i] -= h;
    const std::vector<double> gp = values(gradient_at(plus, false, nullptr));
    const std::vector<double> gm = values(gradient_at(minus, false, nullptr));
    double expected = 0;  // the Hessian is symmetric: (H v)_i = sum_j d g_j / d x_i v_j
    for (size_t j = 0; j < point.size(); ++j) expected += (gp[j] - gm[j]) / (2 * h) * direction[j];
    EXPECT_NEAR(values(hv)[i], expected, 1e-7) << "component " << i;
  }
}

TEST(HigherOrderGradients, GradWithoutCreateGraphAndItsErrors) {
  NDArray x = array64({1.0, 2.0}, {2}), unused = array64({3.0}, {1});
  x.attach_grad();
  unused.attach_grad();
  NDArray y;
  {
    auto recording = autograd::record();
    y = nd::exp(x);
  }
  const std::vector<NDArray> grads = autograd::grad({y}, {x, unused}, {}, true);
  EXPECT_NEAR(values(grads[0])[1], std::exp(2.0), 1e-12);
  EXPECT_EQ(values(grads[1]), (std::vector<double>{0}));  // the heads do not depend on it
  EXPECT_FALSE(values(grads[0])[0] == 0);
  const NDArray plain = array64({1.0}, {1});
  try {
    autograd::grad({y}, {plain});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("variable 0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("attach_grad"), std::string::npos) << e.what();
  }
}

// f(x, w) = sum(tanh(w x) * exp(x / 2)), as imperative code and as a CachedOp.
std::vector<NDArray> tanh_exp(const std::vector<NDArray>& in) {
  return {nd::sum(nd::tanh(nd::dot(in[1], in[0])) * nd::exp(in[0] * 0.5))};
}

// The first gradients (x, w) at a point, and a gradient of <g_x, v> + <g_w, u> with respect to
// both when `second` is set (otherwise undefined arrays).
struct Gradients {
  std::vector<NDArray> first, second;
};

Gradients gradients_of(const autograd::TracedFunction& f, const std::vector<double>& x_point,
                       const std::vector<double>& w_point, bool second) {
  NDArray x = array64(x_point, {3, 1}), w = array64(w_point, {3, 3});
  x.attach_grad();
  w.attach_grad();
  const NDArray v = array64({1.0, -2.0, 0.5}, {3, 1});
  const NDArray u = array64({0.4, 0.1, -0.3, 0.2, -0.5, 0.7, 0.3, 0.9, -0.6}, {3, 3});
  Gradients g;
  auto recording = autograd::record();
  g.first = autograd::grad({f({x, w})[0]}, {x, w}, {}, second, second);
  if (second) g.second = autograd::grad({nd::sum(g.first[0] * v) + nd::sum(g.first[1] * u)}, {x, w});
  return g;
}

TEST(HigherOrderGradients, ThroughACachedOpMatchImperativeAndFiniteDifferences) {
  autograd::CachedOp cached(tanh_exp, {{"x", false}, {"w", true}});
  const autograd::TracedFunction through_cached = [&](const std::vector<NDArray>& in) { return cached(in); };
  const std::vector<double> x{0.2, -0.4, 0.7}, w{0.3, -0.7, 0.2, 0.5, 0.1, -0.4, 0.9, -0.2, 0.6};
  const Gradients expected = gradients_of(tanh_exp, x, w, true);
  const Gradients actual = gradients_of(through_cached, x, w, true);
  for (size_t i = 0; i < 2; ++i)
    for (size_t k = 0; k < values(expected.second[i]).size(); ++k) {
      EXPECT_NEAR(values(actual.first[i])[k], values(expected.first[i])[k], 1e-12)
          << "first " << i << "," << k;
      EXPECT_NEAR(values(actual.second[i])[k], values(expected.second[i])[k], 1e-12)
          << "second " << i << "," << k;
    }
  // The second gradient is the directional derivative of the first (symmetric Hessian) along (v, u):
  // central differences of the CachedOp's compiled first gradient, in every coordinate.
  const double h = 1e-5;
  const std::vector<double> v{1.0, -2.0, 0.5}, u{0.4, 0.1, -0.3, 0.2, -0.5, 0.7, 0.3, 0.9, -0.6};
  auto directional = [&](const std::vector<double>& xs, const std::vector<double>& ws) {
    const Gradients g = gradients_of(through_cached, xs, ws, false);
    double sum = 0;
    for (size_t k = 0; k < v.size(); ++k) sum += values(g.first[0])[k] * v[k];
    for (size_t k = 0; k < u.size(); ++k) sum += values(g.first[1])[k] * u[k];
    return sum;
  };
  for (size_t i = 0; i < x.size() + w.size(); ++i) {
    std::vector<double> xp = x, xm = x, wp = w, wm = w;
    (i < x.size() ? xp[i] : wp[i - x.size()]) += h;
    (i < x.size() ? xm[i] : wm[i - x.size()]) -= h;
    const double numeric = (directional(xp, wp) - directional(xm, wm)) / (2 * h);
    const double analytic =
        i < x.size() ? values(actual.second[0])[i] : values(actual.second[1])[i - x.size()];
    EXPECT_NEAR(analytic, numeric, 1e-7) << "coordinate " << i;
  }
}

// Training-mode Dropout inside a CachedOp: the gradient recorded for create_graph replays the
// forward run's mask, so it equals the compiled gradient of the same call, and a gradient penalty
// through it reaches the weight.
TEST(HigherOrderGradients, ThroughACachedOpReuseTheForwardDropoutMask) {
  const autograd::TracedFunction f = [](const std::vector<NDArray>& in) {
    const NDArray training(Tensor::full(Shape{}, 1, DType::kBool));
    const NDArray h = nd::tanh(nd::dot(in[0], in[1]));
    return std::vector<NDArray>{
        nd::invoke("Dropout", {h, nd::scalar(0.5, DType::kFloat64), training}, {}, 2)[0]};
  };
  autograd::CachedOp cached(f, {{"x", false}, {"w", true}});
  NDArray x = testing::random_array(Shape{4, 6}), w = testing::random_array(Shape{6, 8});
  x.attach_grad();
  w.attach_grad();
  NDArray y, recorded, penalty_grad;
  std::vector<NDArray> compiled;
  {
    auto recording = autograd::record(true);
    y = cached({x, w})[0];
    compiled = autograd::grad({y}, {x}, {}, true, false);
    recorded = autograd::grad({y}, {x}, {}, true, true).at(0);
    penalty_grad = autograd::grad({nd::sum(recorded * recorded)}, {w}).at(0);
  }
  const std::vector<double> a = values(recorded), e = values(compiled.at(0));
  for (size_t k = 0; k < a.size(); ++k) EXPECT_NEAR(a[k], e[k], 1e-12) << k;
  const std::vector<double> out = values(y);
  EXPECT_GT(std::count(out.begin(), out.end(), 0.0), 0);  // some units were dropped
  double norm = 0;
  for (double g : values(penalty_grad)) norm += g * g;
  EXPECT_GT(norm, 0);
}

}  // namespace
}  // namespace kiln
