// oneDNN's primitives split their work for the OpenMP thread count of the thread that creates
// them and start that many threads on every call: a plan compiled for one Kiln thread must run on
// the calling thread alone, even when compiled on a thread whose OpenMP default is every core.
#include <gtest/gtest.h>

#include <filesystem>
#include <iterator>
#include <random>
#include <thread>

#include "backends/onednn_test_util.h"
#include "graph/graph.h"
#include "kiln/threading.hpp"

namespace kiln::onednn {
namespace {

// The threads of this process (Linux: one entry per thread in /proc/self/task).
long process_threads() {
  return std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                       std::filesystem::directory_iterator());
}

TEST(OnednnThreads, APlanCompiledForOneThreadStartsNoOtherThread) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: OpenMP's default is one thread";
  const int kiln_threads = num_threads();
  set_num_threads(1);
  std::mt19937 rng(3);
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{1, 64, 28, 28}});
  graph::Value* w = g.add_initializer("w", random_tensor(Shape{64, 64, 3, 3}, rng));
  g.add_output(g.add_node("Conv", {x, w}, {{"pads", {1, 1, 1, 1}}}, "conv")->outputs[0]);
  g.infer_shapes();
  const Tensor feed = random_tensor(Shape{1, 64, 28, 28}, rng);
  long before = 0, after = 0;
  std::string provider;
  // A fresh thread: OpenMP gives it the process default (every core) until it is told otherwise,
  // and a team started from it would be a new worker thread of its own.
  std::thread compiling([&] {
    const auto plan = runtime::compile(g, {.providers = {onednn_provider()}});
    provider = plan->steps.at(0).provider;
    runtime::Executor executor(plan);
    before = process_threads();
    executor.run({feed});
    executor.run({feed});
    after = process_threads();
  });
  compiling.join();
  set_num_threads(kiln_threads);
  ASSERT_EQ(provider, "onednn");
  EXPECT_EQ(after, before) << "the convolution started OpenMP threads in a one-thread plan";
}

}  // namespace
}  // namespace kiln::onednn
