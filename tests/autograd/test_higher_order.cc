// autograd::grad with create_graph: the gradient computation is recorded, so gradients of
// gradients follow. Checked against closed forms and against central differences of the first
// gradient in float64.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace kiln
