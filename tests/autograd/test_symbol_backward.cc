// Executor::backward (the graph gradient pass through the Symbol API): gradients of an MLP and a
// small CNN equal those of the imperative autograd tape running the same ops, and central finite
// differences of the loss in float64; BatchNorm's moving statistics follow MXNet's update.
#include <gtest/gtest.h>

#include <cmath>

#include "autograd/gradient_checker.h"
#include "kiln/kiln.hpp"
#include "kiln/symbol.hpp"

namespace kiln {
namespace {

using testing::random_array;

std::vector<double> values(const NDArray& a) {
  return nd::invoke1("Cast", {a}, {{"to", dtype_to_onnx(DType::kFloat64)}}).to_vector<double>();
}

void expect_close(const NDArray& actual, const NDArray& expected, double tolerance, const std::string& what) {
  ASSERT_EQ(actual.shape(), expected.shape()) << what;
  const std::vector<double> a = values(actual), e = values(expected);
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], e[i], tolerance * std::max(1.0, std::abs(e[i]))) << what << " element " << i;
}

Symbol mlp() {
  Symbol data = Symbol::Variable("data");
  Symbol h = sym::Activation(sym::FullyConnected(data, 6, false, true, "fc1"), "relu", "relu1");
  return sym::SoftmaxOutput(sym::FullyConnected(h, 3, false, true, "fc2"), "softmax");
}

Symbol cnn() {
  Symbol data = Symbol::Variable("data");
  Symbol c = sym::Convolution(data, {.kernel = {3, 3}, .num_filter = 4, .pad = {1, 1}}, "conv");
  Symbol b = sym::BatchNorm(c, {.eps = 1e-5, .momentum = 0.8, .fix_gamma = false}, "bn");
  Symbol p = sym::Pooling(sym::Activation(b, "relu", "relu"),
                          {.pool_type = "max", .kernel = {2, 2}, .stride = {2, 2}}, "pool");
  return sym::SoftmaxOutput(sym::FullyConnected(p, 3, false, true, "fc"), "softmax");
}

// An Executor over float64 arrays: random arguments (labels 0..2), BatchNorm's moving variance 1.
Executor bind_float64(const Symbol& net, const Shape& data_shape, const std::string& grad_req = "write") {
  const int64_t batch = data_shape[0];
  const Symbol::InferredShapes shapes = net.infer_shape({{"data", data_shape}});
  std::map<std::string, NDArray> args, aux, grads;
  std::map<std::string, GradReq> reqs;
  const auto arg_names = net.list_arguments();
  for (size_t i = 0; i < arg_names.size(); ++i) {
    const std::string& name = arg_names[i];
    if (name == "softmax_label") {
      std::vector<double> labels;
      for (int64_t n = 0; n < batch; ++n) labels.push_back(static_cast<double>((n * 2 + 1) % 3));
      args[name] = nd::array(labels, Shape{batch});
    } else {
      args[name] = random_array(shapes.arg_shapes[i]);
    }
    grads[name] = nd::zeros(args[name].shape(), DType::kFloat64);
    reqs[name] = grad_req == "add" ? GradReq::kAdd : GradReq::kWrite;
  }
  const auto aux_names = net.list_auxiliary_states();
  for (size_t i = 0; i < aux_names.size(); ++i)
    aux[aux_names[i]] = aux_names[i].find("var") != std::string::npos
                            ? nd::full(shapes.aux_shapes[i], 1, DType::kFloat64)
                            : nd::zeros(shapes.aux_shapes[i], DType::kFloat64);
  return Executor(net, cpu(), args, aux, grads, reqs);
}

// MXNet's SoftmaxOutput loss (normalization 'null'): -sum_n log p[n, label_n].
double softmax_loss(Executor& exe) {
  exe.forward(true);
  const std::vector<double> p = values(exe.outputs()[0]);
  const std::vector<double> labels = values(exe.arg_dict().at("softmax_label"));
  const size_t classes = p.size() / labels.size();
  double loss = 0;
  for (size_t n = 0; n < labels.size(); ++n)
    loss -= std::log(p[n * classes + static_cast<size_t>(labels[n])]);
  return loss;
}

// Central differences of the loss for a few elements of every parameter (not data or labels).
void expect_matches_finite_differences(Executor& exe) {
  exe.forward(true);
  exe.backward();
  std::map<std::string, std::vector<double>> analytic;
  for (const auto& [name, g] : exe.grad_dict()) analytic[name] = values(g);
  const double step = 1e-6;
  for (auto& [name, array] : exe.arg_dict()) {
    if (name == "data" || name == "softmax_label") continue;
    std::vector<double> x = values(array);
    for (size_t i = 0; i < x.size(); i += std::max<size_t>(1, x.size() / 5)) {
      const double saved = x[i];
      x[i] = saved + step;
      array = nd::array(x, array.shape());
      const double up = softmax_loss(exe);
      x[i] = saved - step;
      array = nd::array(x, array.shape());
      const double down = softmax_loss(exe);
      x[i] = saved;
      array = nd::array(x, array.shape());
      const double numeric = (up - down) / (2 * step);
      EXPECT_NEAR(analytic[name][i], numeric, 1e-5 * std::max(1.0, std::abs(numeric)))
          << name << "[" << i << "]";
    }
  }
}

TEST(SymbolBackward, MlpMatchesFiniteDifferences) {
  Executor exe = bind_float64(mlp(), Shape{4, 5});
  expect_matches_finite_differences(exe);
}

TEST(SymbolBackward, CnnMatchesFiniteDifferences) {
  Executor exe = bind_float64(cnn(), Shape{2, 2, 4, 4});
  expect_matches_finite_differences(exe);
}

NDArray to_float32(const NDArray& a) {
  return nd::invoke1("Cast", {a}, {{"to", dtype_to_onnx(DType::kFloat32)}});
}

// Fills every argument of a float32 executor with random values (labels 0..2).
void randomize(Executor& exe) {
  for (auto& [name, array] : exe.arg_dict()) {
    if (name == "softmax_label") {
      std::vector<float> labels;
      for (int64_t n = 0; n < array.shape()[0]; ++n) labels.push_back(static_cast<float>((n + 2) % 3));
      array = nd::array(labels, array.shape());
    } else {
      array = to_float32(random_array(array.shape()));
    }
  }
}

// The same network run op by op on the tape: its parameter gradients and BatchNorm's statistics.
TEST(SymbolBackward, CnnMatchesImperativeAutograd) {
  Executor exe = cnn().simple_bind(cpu(), {{"data", Shape{2, 2, 4, 4}}});
  randomize(exe);
  exe.aux_dict().at("bn_moving_var") = nd::ones(Shape{4});
  exe.forward(true);
  exe.backward();

  auto arg = [&](const std::string& name) {
    NDArray a = exe.arg_dict().at(name).copy();
    a.attach_grad();
    return a;
  };
  NDArray x = arg("data"), w = arg("conv_weight"), b = arg("conv_bias"), gamma = arg("bn_gamma"),
          beta = arg("bn_beta"), fw = arg("fc_weight"), fb = arg("fc_bias");
  const NDArray labels =
      nd::invoke1("Cast", {exe.arg_dict().at("softmax_label")}, {{"to", dtype_to_onnx(DType::kInt64)}});
  std::vector<NDArray> bn;
  NDArray scores;
  {
    auto recording = autograd::record();
    NDArray c = nd::invoke1("Conv", {x, w, b}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    bn = nd::invoke("BatchNormalization", {c, gamma, beta, nd::zeros(Shape{4}), nd::ones(Shape{4})},
                    {{"epsilon", 1e-5}, {"momentum", 0.8}, {"training_mode", int64_t{1}}}, 3);
    NDArray p =
        nd::invoke1("MaxPool", {nd::invoke1("Relu", {bn[0]})},
                    {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    scores = nd::invoke1("Gemm", {nd::invoke1("Flatten", {p}), fw, fb}, {{"transB", int64_t{1}}});
    NDArray loss =
        nd::invoke1("SoftmaxCrossEntropyLoss", {scores, labels}, {{"reduction", std::string("sum")}});
    loss.backward();
  }
  expect_close(exe.outputs()[0], nd::invoke1("Softmax", {scores}), 1e-5, "output");
  expect_close(exe.aux_dict().at("bn_moving_mean"), bn[1], 1e-5, "moving_mean");
  expect_close(exe.aux_dict().at("bn_moving_var"), bn[2], 1e-5, "moving_var");
  const std::map<std::string, NDArray*> expected{
      {"data", &x},       {"conv_weight", &w}, {"conv_bias", &b}, {"bn_gamma", &gamma},
      {"bn_beta", &beta}, {"fc_weight", &fw},  {"fc_bias", &fb}};
  for (const auto& [name, array] : expected)
    expect_close(exe.grad_dict().at(name), array->grad(), 1e-4, name);
  expect_close(exe.grad_dict().at("softmax_label"), nd::zeros(Shape{2}), 0, "softmax_label");
}

// A network that is not a loss takes its head gradient from the caller.
TEST(SymbolBackward, HeadGradientsOfAnOutput) {
  Symbol net =
      sym::Activation(sym::FullyConnected(Symbol::Variable("data"), 3, false, true, "fc"), "tanh", "act");
  Executor exe = net.simple_bind(cpu(), {{"data", Shape{2, 4}}});
  randomize(exe);
  const NDArray head = to_float32(random_array(Shape{2, 3}));
  exe.forward(true);
  exe.backward({head});

  NDArray x = exe.arg_dict().at("data").copy(), w = exe.arg_dict().at("fc_weight").copy(),
          b = exe.arg_dict().at("fc_bias").copy();
  for (NDArray* a : {&x, &w, &b}) a->attach_grad();
  {
    auto recording = autograd::record();
    NDArray y = nd::invoke1("Tanh", {nd::invoke1("Gemm", {x, w, b}, {{"transB", int64_t{1}}})});
    y.backward(head);
  }
  expect_close(exe.grad_dict().at("data"), x.grad(), 1e-5, "data");
  expect_close(exe.grad_dict().at("fc_weight"), w.grad(), 1e-5, "fc_weight");
  expect_close(exe.grad_dict().at("fc_bias"), b.grad(), 1e-5, "fc_bias");
  EXPECT_EQ(exe.grad_arrays().size(), 3u);
}

TEST(SymbolBackward, GradReqAddAccumulatesAndNullHasNoArray) {
  Executor exe =
      mlp().simple_bind(cpu(), {{"data", Shape{3, 5}}},
                        std::map<std::string, std::string>{{"fc1_weight", "add"}, {"fc2_bias", "write"}});
  randomize(exe);
  EXPECT_EQ(exe.grad_dict().size(), 2u);
  EXPECT_FALSE(exe.grad_arrays()[0].defined());  // data: null
  exe.forward(true);
  exe.backward();
  const std::vector<double> once = values(exe.grad_dict().at("fc1_weight"));
  const std::vector<double> bias_once = values(exe.grad_dict().at("fc2_bias"));
  exe.forward(true);
  exe.backward();
  const std::vector<double> twice = values(exe.grad_dict().at("fc1_weight"));
  const std::vector<double> bias_twice = values(exe.grad_dict().at("fc2_bias"));
  double norm = 0;
  for (size_t i = 0; i < once.size(); ++i) {
    EXPECT_NEAR(twice[i], 2 * once[i], 1e-5);
    norm += std::abs(once[i]);
  }
  EXPECT_GT(norm, 0);
  for (size_t i = 0; i < bias_once.size(); ++i) EXPECT_NEAR(bias_twice[i], bias_once[i], 1e-6);
}

TEST(SymbolBackward, BackwardBeforeTrainingForwardFails) {
  Executor exe = mlp().simple_bind(cpu(), {{"data", Shape{3, 5}}});
  exe.forward(false);
  EXPECT_THROW(exe.backward(), Error);
  EXPECT_THROW(mlp().simple_bind(cpu(), {{"data", Shape{3, 5}}}, "sometimes"), Error);
}

}  // namespace
}  // namespace kiln
