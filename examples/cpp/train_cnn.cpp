// Trains a LeNet-style CNN on the 8x8 digits (data/digits, written by scripts/setup.sh):
// Conv2D(16, 3x3, pad 1) - BatchNorm - relu - MaxPool 2 - Conv2D(32, 3x3, pad 1) - relu -
// MaxPool 2 - Dense(64, relu) - Dense(10), Adam lr 0.002, 15 epochs of batch 64. Prints the loss
// and accuracies per epoch and the training throughput; test accuracy reaches >= 98%.
//
//   train_cnn [data_dir] [--imperative] [--export PREFIX]
//
// data_dir defaults to data/digits; --imperative trains without hybridize; --export writes the
// trained net with Gluon's export as an MXNet model for one image per call (PREFIX-symbol.json,
// PREFIX-0000.params), which kiln::Predictor, `kiln optimize` and MXNet load.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <string>

#include <kiln/kiln.hpp>
#include <kiln/nn/gluon.hpp>
#include <kiln/npy.hpp>

using namespace kiln;

namespace {

// (N, 64) -> (N, 1, 8, 8).
NDArray images(const std::string& path) {
  const NDArray flat(npy::load(path));
  return flat.reshape(Shape{flat.shape()[0], 1, 8, 8});
}

double accuracy(nn::HybridBlock& net, const NDArray& x, const NDArray& y) {
  nn::Accuracy metric;
  metric.update({y}, {net(x)});
  return metric.get().second;
}

}  // namespace

int main(int argc, char** argv) try {
  std::string dir = "data/digits", export_prefix;
  bool imperative = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--imperative") {
      imperative = true;
    } else if (arg == "--export" && i + 1 < argc) {
      export_prefix = argv[++i];
    } else if (arg.rfind("--", 0) == 0) {
      std::cerr << "usage: train_cnn [data_dir] [--imperative] [--export PREFIX]\n";
      return 2;
    } else {
      dir = arg;
    }
  }
  if (imperative && !export_prefix.empty()) {
    std::cerr << "train_cnn: --export needs the hybridized net (drop --imperative)\n";
    return 2;
  }
  const NDArray train_x = images(dir + "/train_x.npy"), test_x = images(dir + "/test_x.npy");
  const NDArray train_y(npy::load(dir + "/train_y.npy")), test_y(npy::load(dir + "/test_y.npy"));

  nn::seed(42);
  nn::HybridSequential net;
  net.add<nn::Conv2D>(16, std::vector<int64_t>{3, 3}, nn::ConvOptions{.padding = {1}});
  net.add<nn::BatchNorm>();
  net.add<nn::Activation>("relu");
  net.add<nn::MaxPool2D>();
  net.add<nn::Conv2D>(32, std::vector<int64_t>{3, 3}, nn::ConvOptions{.padding = {1}, .activation = "relu"});
  net.add<nn::MaxPool2D>();
  net.add<nn::Dense>(64, nn::DenseOptions{.activation = "relu"});
  net.add<nn::Dense>(10);
  net.initialize(std::make_shared<nn::Xavier>());
  if (!imperative) net.hybridize();

  nn::SoftmaxCrossEntropyLoss loss_fn;
  nn::Trainer trainer(net.collect_params(), "adam", {{"learning_rate", 0.002}});
  nn::DataLoader loader(nn::ArrayDataset({train_x, train_y}), 64, {.shuffle = true, .seed = 7});

  double test_acc = 0, train_seconds = 0;
  int64_t trained_samples = 0;
  for (int epoch = 1; epoch <= 15; ++epoch) {
    double loss_sum = 0;
    int64_t samples = 0;
    const auto start = std::chrono::steady_clock::now();
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
    train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    trained_samples += samples;
    test_acc = accuracy(net, test_x, test_y);
    std::cout << "epoch " << std::setw(2) << epoch << "  loss " << std::fixed << std::setprecision(4)
              << loss_sum / static_cast<double>(samples) << "  train acc " << accuracy(net, train_x, train_y)
              << "  test acc " << test_acc << "\n";
  }
  // Throughput counts the training loop only (forward, backward, update, reading the loss), not
  // the per-epoch evaluation; bench/train_throughput.py compares it with PyTorch's.
  std::cout << "training throughput: " << std::setprecision(0)
            << static_cast<double>(trained_samples) / train_seconds << " samples/s\n";
  std::cout << "final test accuracy: " << std::setprecision(4) << test_acc << "\n";
  if (!export_prefix.empty()) {
    // The export takes the input shape of the last call: one image.
    net(test_x.slice(0, 0, 1));
    net.export_model(export_prefix);
    std::cout << "exported " << export_prefix << "-symbol.json, " << export_prefix << "-0000.params\n";
  }
  return test_acc >= 0.98 ? 0 : 1;
} catch (const kiln::Error& e) {
  std::cerr << "train_cnn: " << e.what() << "\n";
  return 2;
}
