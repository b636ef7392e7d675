// Trains a hybridized MLP on the 8x8 digits (data/digits, written by scripts/setup.sh) with
// Gluon's API: Dense(256, relu) - Dropout(0.3) - Dense(128, relu) - Dense(10), Adam lr 0.002,
// 15 epochs of batch 64. Prints the loss and accuracies per epoch and the training time; test accuracy
// reaches >= 97%.
//
//   train_mlp [data_dir] [--imperative]   (default: data/digits; --imperative: no hybridize)
#include <chrono>
#include <iomanip>
#include <iostream>
#include <string>

#include <kiln/kiln.hpp>
#include <kiln/nn/gluon.hpp>
#include <kiln/npy.hpp>

using namespace kiln;

namespace {

double accuracy(nn::HybridBlock& net, const NDArray& x, const NDArray& y) {
  nn::Accuracy metric;
  metric.update({y}, {net(x)});
  return metric.get().second;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string dir = argc > 1 ? argv[1] : "data/digits";
  const bool imperative = argc > 2 && std::string(argv[2]) == "--imperative";
  const NDArray train_x(npy::load(dir + "/train_x.npy")), train_y(npy::load(dir + "/train_y.npy"));
  const NDArray test_x(npy::load(dir + "/test_x.npy")), test_y(npy::load(dir + "/test_y.npy"));

  nn::seed(42);
  nn::HybridSequential net;
  net.add<nn::Dense>(256, nn::DenseOptions{.activation = "relu"});
  net.add<nn::Dropout>(0.3);
  net.add<nn::Dense>(128, nn::DenseOptions{.activation = "relu"});
  net.add<nn::Dense>(10);
  net.initialize(std::make_shared<nn::Xavier>());
  if (!imperative) net.hybridize();

  nn::SoftmaxCrossEntropyLoss loss_fn;
  nn::Trainer trainer(net.collect_params(), "adam", {{"learning_rate", 0.002}});
  nn::DataLoader loader(nn::ArrayDataset({train_x, train_y}), 64, {.shuffle = true, .seed = 7});

  const auto start = std::chrono::steady_clock::now();
  double test_acc = 0;
  for (int epoch = 1; epoch <= 15; ++epoch) {
    double loss_sum = 0;
    int64_t samples = 0;
    for (const std::vector<NDArray>& batch : loader) {
      NDArray loss;
      {
        auto recording = autograd::record();
        loss = loss_fn(net(batch[0]), batch[1]);
      }
      loss.backward();
      trainer.step(batch[0].shape()[0]);
      loss_sum += nd::sum(loss).to_vector<float>()[0];
      samples += batch[0].shape()[0];
    }
    test_acc = accuracy(net, test_x, test_y);
    std::cout << "epoch " << std::setw(2) << epoch << "  loss " << std::fixed << std::setprecision(4)
              << loss_sum / static_cast<double>(samples) << "  train acc " << accuracy(net, train_x, train_y)
              << "  test acc " << test_acc << "\n";
  }
  const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
  std::cout << "training time: " << std::setprecision(3) << elapsed.count() << " s\n";
  std::cout << "final test accuracy: " << std::setprecision(4) << test_acc << "\n";
  return test_acc >= 0.97 ? 0 : 1;
} catch (const kiln::Error& e) {
  std::cerr << "train_mlp: " << e.what() << "\n";
  return 2;
}
