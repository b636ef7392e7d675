// The Predictor: results equal the reference interpreter for every batch size, plans cached
// per input-shape signature within the LRU bound, inputs by position and by name, every bad
// input rejected with a message naming it (and the next call still works), model files found,
// read and rejected when damaged, and many threads sharing one Predictor.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "apps/tools/mxnet_mlp.h"
#include "kiln/predictor.hpp"
#include "runtime/runtime_test_util.h"
#include "test_support.h"

namespace kiln::runtime {
namespace {

using namespace testing;
using kiln::testing::expect_error;
using kiln::testing::TempDir;
namespace fs = std::filesystem;

void expect_near(const std::vector<Tensor>& got, const std::vector<Tensor>& want, float tolerance) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << "output " << i;
    const auto a = got[i].to_vector<float>(), b = want[i].to_vector<float>();
    for (size_t j = 0; j < a.size(); ++j) ASSERT_NEAR(a[j], b[j], tolerance) << "output " << i << " at " << j;
  }
}

TEST(Predictor, MatchesTheReferenceForBatchesOneAndEight) {
  std::mt19937 rng(1);
  const Graph g = mlp({64, 32, 10}, rng);
  // The reference kernels give the interpreter's bits; the fast ones (oneDNN where built) may
  // sum in another order.
  const Predictor reference(g.clone(), {.kernels = "reference"});
  const Predictor fast(g.clone());
  for (int64_t batch : {1, 8, 1, 8}) {
    const Tensor x = random_tensor({batch, 64}, rng);
    const std::vector<Tensor> want = graph::evaluate(g, {{"x", x}});
    expect_same(reference.predict({x}), want);
    expect_near(fast.predict({x}), want, 1e-5f);
  }
  EXPECT_EQ(reference.num_cached_plans(), 2u);
  EXPECT_EQ(fast.num_cached_plans(), 2u);
  expect_error([&] { Predictor(g.clone(), {.kernels = "fastest"}); }, ErrorCode::kInvalidArgument,
               {"kernels", "fastest"});
}

TEST(Predictor, OptimizedCnnStaysCloseToTheReference) {
  std::mt19937 rng(2);
  const Graph g = small_cnn(rng);
  const Predictor p(g.clone(), {.opt_level = "all"});
  EXPECT_LT(p.graph().num_nodes(), g.num_nodes());  // Conv/BatchNormalization folded
  for (int64_t batch : {1, 3}) {
    const Tensor x = random_tensor({batch, 3, 32, 32}, rng);
    expect_near(p.predict({x}), graph::evaluate(g, {{"data", x}}), 1e-4f);
  }
}

TEST(Predictor, TheCacheKeepsAtMostMaxCachedPlans) {
  std::mt19937 rng(3);
  const Graph g = mlp({16, 8}, rng);
  const Predictor p(g.clone(), {.kernels = "reference", .max_cached_plans = 2});
  for (int64_t batch : {1, 2, 3, 4, 1}) {
    const Tensor x = random_tensor({batch, 16}, rng);
    expect_same(p.predict({x}), graph::evaluate(g, {{"x", x}}));
    EXPECT_LE(p.num_cached_plans(), 2u);
  }
  EXPECT_EQ(p.num_cached_plans(), 2u);
  expect_error([&] { Predictor(g.clone(), {.max_cached_plans = 0}); }, ErrorCode::kInvalidArgument,
               {"max_cached_plans"});
}

TEST(Predictor, InputsByNameAndByPosition) {
  std::mt19937 rng(4);
  Graph g;
  g.name = "two_inputs";
  Value* a = g.add_input("a", TensorInfo{DType::kFloat32, Shape{-1, 4}});
  Value* b = g.add_input("b", TensorInfo{DType::kFloat32, Shape{-1, 4}});
  Value* sum = g.add_node("Add", {a, b}, {}, "sum")->outputs[0];
  Value* product = g.add_node("Mul", {a, b}, {}, "product")->outputs[0];
  g.set_outputs({sum, product});
  const std::vector<std::string> output_names = {sum->name, product->name};
  const Predictor p(std::move(g));
  EXPECT_EQ(p.input_names(), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.output_names(), output_names);
  EXPECT_EQ(p.inputs()[0].shape, (Shape{-1, 4}));
  EXPECT_EQ(p.inputs()[1].dtype, DType::kFloat32);
  EXPECT_TRUE(p.outputs()[0].known);
  EXPECT_EQ(p.outputs()[0].shape, (Shape{-1, 4}));

  const Tensor x = random_tensor({3, 4}, rng), y = random_tensor({3, 4}, rng);
  const std::vector<Tensor> by_position = p.predict({x, y});
  expect_same(p.predict(std::map<std::string, Tensor>{{"b", y}, {"a", x}}), by_position);
  const std::map<std::string, Tensor> named = p.predict_named({{"a", x}, {"b", y}});
  ASSERT_EQ(named.size(), 2u);
  expect_same({named.at(output_names[0]), named.at(output_names[1])}, by_position);
}

TEST(Predictor, BadInputsNameTheInputAndLeaveThePredictorUsable) {
  std::mt19937 rng(5);
  const Graph g = mlp({16, 8}, rng);
  const Predictor p(g.clone(), {.kernels = "reference"});
  const Tensor good = random_tensor({2, 16}, rng);
  const auto check_recovers = [&] { expect_same(p.predict({good}), graph::evaluate(g, {{"x", good}})); };

  expect_error(
      [&] {
        p.predict({random_tensor({2, 15}, rng)});
      },
      ErrorCode::kShapeMismatch, {"model 'mlp'", "input 'x'", "(?, 16)", "(2, 15)"});
  check_recovers();
  expect_error(
      [&] {
        p.predict({random_tensor({2, 16, 1}, rng)});
      },
      ErrorCode::kShapeMismatch, {"input 'x'", "(?, 16)", "(2, 16, 1)"});
  check_recovers();
  expect_error(
      [&] {
        p.predict({Tensor::zeros({2, 16}, DType::kFloat64)});
      },
      ErrorCode::kTypeMismatch, {"input 'x'", "float32 (?, 16)", "float64 (2, 16)"});
  check_recovers();
  expect_error([&] { p.predict({Tensor()}); }, ErrorCode::kInvalidArgument, {"input 'x'", "undefined"});
  check_recovers();
  expect_error([&] { p.predict(std::vector<Tensor>{}); }, ErrorCode::kInvalidArgument,
               {"expected 1 input(s) ('x')", "got 0"});
  check_recovers();
  expect_error(
      [&] {
        p.predict({good, good});
      },
      ErrorCode::kInvalidArgument, {"expected 1 input(s)", "got 2"});
  check_recovers();
  expect_error([&] { p.predict(std::map<std::string, Tensor>{}); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "is missing"});
  check_recovers();
  expect_error(
      [&] {
        p.predict(std::map<std::string, Tensor>{{"x", good}, {"y", good}});
      },
      ErrorCode::kNotFound, {"unknown input 'y'", "'x'"});
  check_recovers();
  EXPECT_EQ(p.num_cached_plans(), 1u);  // no plan was compiled for a rejected input
}

TEST(Predictor, OptionsAreChecked) {
  std::mt19937 rng(6);
  expect_error(
      [&] {
        Predictor(mlp({4, 2}, rng), {.device = gpu(0)});
      },
      ErrorCode::kUnsupported, {"gpu(0)", "cpu"});
  expect_error(
      [&] {
        Predictor(mlp({4, 2}, rng), {.opt_level = "max"});
      },
      ErrorCode::kInvalidArgument, {"max"});
}

TEST(Predictor, TakesMxnetFilesWithTheDataShapeAsMxnetsPredictorsDo) {
  TempDir dir;
  kiln::testing::write_mlp_model(dir / "net", {12, 16, 5}, 7, 0);
  std::mt19937 rng(7);
  const Tensor x = random_tensor({3, 12}, rng);
  const Predictor seed_form(dir / "net-symbol.json", dir / "net-0000.params", Shape{3, 12});
  EXPECT_EQ(seed_form.name(), "net");
  EXPECT_EQ(seed_form.inputs()[0].shape, (Shape{3, 12}));
  expect_same(seed_form.predict({x}), Predictor::load(dir / "net").predict({x}));
  // The shape is the model's from now on, and one that does not fit its declaration is refused.
  expect_error(
      [&] {
        seed_form.predict({random_tensor({4, 12}, rng)});
      },
      ErrorCode::kShapeMismatch, {"data"});
  expect_error(
      [&] {
        Predictor(dir / "net-symbol.json", dir / "net-0000.params", Shape{3, 11});
      },
      ErrorCode::kInvalidArgument, {"fc1", "(3, 11)", "(16, 12)"});
  expect_error(
      [&] {
        Predictor::load(dir / "net", {.input_shapes = {{"label", Shape{3}}}});
      },
      ErrorCode::kNotFound, {"label", "data"});
}

TEST(Predictor, LoadsMxnetFilesBySymbolPathAndByPrefix) {
  TempDir dir;
  const std::vector<int64_t> dims = {12, 16, 5};
  kiln::testing::write_mlp_model(dir / "net", dims, 7, 3);
  kiln::testing::write_mlp_model(dir / "net", dims, 8, 12);  // the highest epoch, other weights
  std::mt19937 rng(7);
  const Tensor x = random_tensor({4, 12}, rng);

  const Predictor latest = Predictor::load(dir / "net-symbol.json");
  EXPECT_EQ(latest.name(), "net");
  EXPECT_EQ(latest.input_names(), (std::vector<std::string>{"data"}));
  EXPECT_EQ(latest.output_names(), (std::vector<std::string>{"fc2_output"}));
  EXPECT_EQ(latest.inputs()[0].shape, (Shape{-1, 12}));
  const Predictor by_prefix = Predictor::load(dir / "net", {.epoch = 12});
  const Predictor older = Predictor::load(dir / "net", {.epoch = 3});
  const std::vector<Tensor> out = latest.predict({x});
  ASSERT_EQ(out[0].shape(), (Shape{4, 5}));
  expect_same(by_prefix.predict({x}), out);
  EXPECT_NE(older.predict({x})[0].to_vector<float>(), out[0].to_vector<float>());

  // The same network by hand: relu(x W1^T + b1) W2^T + b2.
  const mxnet::NamedTensors params = kiln::testing::mlp_params(dims, 8);
  const auto w1 = params.tensors[0].to_vector<float>(), b1 = params.tensors[1].to_vector<float>();
  const auto w2 = params.tensors[2].to_vector<float>(), b2 = params.tensors[3].to_vector<float>();
  const auto xs = x.to_vector<float>(), got = out[0].to_vector<float>();
  for (int n = 0; n < 4; ++n) {
    std::vector<float> h(16);
    for (int j = 0; j < 16; ++j) {
      float s = b1[j];
      for (int k = 0; k < 12; ++k) s += xs[n * 12 + k] * w1[j * 12 + k];
      h[j] = std::max(s, 0.f);
    }
    for (int j = 0; j < 5; ++j) {
      float s = b2[j];
      for (int k = 0; k < 16; ++k) s += h[k] * w2[j * 16 + k];
      EXPECT_NEAR(got[n * 5 + j], s, 1e-5f);
    }
  }
}

TEST(Predictor, MissingAndDamagedFilesGiveClearErrors) {
  TempDir dir;
  expect_error([&] { Predictor::load(dir / "model.onnx"); }, ErrorCode::kNotFound,
               {"cannot open ONNX model", "model.onnx"});
  expect_error([&] { Predictor::load(dir / "none-symbol.json"); }, ErrorCode::kNotFound,
               {"none-symbol.json"});
  expect_error([&] { Predictor::load(dir / "none"); }, ErrorCode::kNotFound, {"none-symbol.json"});

  kiln::testing::write_mlp_model(dir / "net", {8, 4}, 1, 0);
  expect_error([&] { Predictor::load(dir / "net", {.epoch = 5}); }, ErrorCode::kNotFound,
               {"net-0005.params"});
  const std::string symbol = dir / "net-symbol.json", params = dir / "net-0000.params";
  const auto truncate = [](const std::string& path, double keep) {
    fs::resize_file(path, static_cast<uintmax_t>(static_cast<double>(fs::file_size(path)) * keep));
  };
  const auto overwrite = [](const std::string& path, std::streamoff at, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(at);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  };

  truncate(params, 0.6);
  expect_error([&] { Predictor::load(symbol); }, ErrorCode::kIo, {"net-0000.params"});
  kiln::testing::write_mlp_model(dir / "net", {8, 4}, 1, 0);
  overwrite(params, 0, "\xde\xad\xbe\xef\xde\xad\xbe\xef");  // the magic number
  expect_error([&] { Predictor::load(symbol); }, ErrorCode::kIo, {"net-0000.params"});

  kiln::testing::write_mlp_model(dir / "net", {8, 4}, 1, 0);
  truncate(symbol, 0.5);
  expect_error([&] { Predictor::load(symbol); }, ErrorCode::kIo, {"net-symbol.json"});
  kiln::testing::write_mlp_model(dir / "net", {8, 4}, 1, 0);
  overwrite(symbol, 0, "[");
  expect_error([&] { Predictor::load(symbol); }, ErrorCode::kIo, {"net-symbol.json"});

  kiln::testing::write_mlp_model(dir / "net", {8, 4}, 1, 0);
  EXPECT_EQ(Predictor::load(symbol).predict({Tensor::zeros({1, 8}, DType::kFloat32)})[0].shape(),
            (Shape{1, 4}));
}

TEST(Predictor, ManyThreadsShareOnePredictor) {
  std::mt19937 rng(8);
  const Predictor p(mlp({16, 32, 8}, rng), {.max_cached_plans = 3});
  // Four batch sizes against a bound of three: threads also race on compiling and evicting.
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> expected;
  for (int64_t batch : {1, 2, 3, 4}) {
    inputs.push_back(random_tensor({batch, 16}, rng));
    expected.push_back(p.predict({inputs.back()})[0].to_vector<float>());
  }
  constexpr int kThreads = 8, kCalls = 1000;
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i) {
        const size_t k = static_cast<size_t>(t + i) % inputs.size();
        mismatches[static_cast<size_t>(t)] += p.predict({inputs[k]})[0].to_vector<float>() != expected[k];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[static_cast<size_t>(t)], 0) << "thread " << t;
  EXPECT_LE(p.num_cached_plans(), 3u);
}

}  // namespace
}  // namespace kiln::runtime
