// Small float32 matrix products: the plain loop (small_matmul.h) against products computed here
// in double, which products it takes, and through whole plans against the reference kernels,
// together with the larger products whose bias oneDNN's matmul now takes as its bias argument;
// and one plan run by several threads at once (each executor with its own argument bindings).
#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "backends/onednn/small_matmul.h"
#include "backends/onednn_test_util.h"

namespace kiln::onednn {
namespace {

using dt = dnnl::memory::data_type;

dnnl::memory::desc matrix(int64_t rows, int64_t cols, bool transposed = false) {
  return dnnl::memory::desc({rows, cols}, dt::f32,
                            transposed ? dnnl::memory::dims{1, rows} : dnnl::memory::dims{cols, 1});
}

TEST(OnednnSmallMatmul, LoopMatchesAProductInDouble) {
  std::mt19937 rng(21);
  const int64_t m = 3, k = 37, n = 10;  // k not a multiple of the loop's lanes
  for (const bool trans_b : {false, true}) {
    SCOPED_TRACE(trans_b ? "B transposed" : "B row-major");
    const Tensor a = random_tensor({m, k}, rng);
    const Tensor b = random_tensor(trans_b ? Shape{n, k} : Shape{k, n}, rng);
    const Tensor bias = random_tensor({n}, rng);
    const AttrMap attrs{{"activation", std::string("LeakyRelu")},
                        {"activation_params", std::vector<double>{0.1}}};
    const auto loop = make_small_matmul(matrix(m, k), matrix(k, n, trans_b), b, dnnl::memory::dims{1, n},
                                        matrix(m, n), 0.5, Attrs(attrs));
    ASSERT_NE(loop, nullptr);
    std::vector<float> out(static_cast<size_t>(m * n));
    loop->run(a.data<float>(), bias.data<float>(), out.data());
    const float* av = a.data<float>();
    const float* bv = b.data<float>();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t c = 0; c < n; ++c) {
        double sum = 0;
        for (int64_t j = 0; j < k; ++j)
          sum += double{av[i * k + j]} * (trans_b ? bv[c * k + j] : bv[j * n + c]);
        double want = 0.5 * sum + bias.data<float>()[c];
        want = want >= 0 ? want : 0.1 * want;
        EXPECT_NEAR(out[static_cast<size_t>(i * n + c)], want, 1e-5) << "row " << i << " column " << c;
      }
    }
  }
}

TEST(OnednnSmallMatmul, TakesOnlySmallFloatProductsWithAPerColumnAddend) {
  std::mt19937 rng(22);
  const Tensor small_b = random_tensor({64, 64}, rng);
  const Attrs none{AttrMap{}};
  EXPECT_NE(make_small_matmul(matrix(1, 64), matrix(64, 64), small_b, std::nullopt, matrix(1, 64), 1, none),
            nullptr);
  // Over kLoopMatmulMacs (5 x 64 x 64): oneDNN's.
  EXPECT_EQ(make_small_matmul(matrix(5, 64), matrix(64, 64), small_b, std::nullopt, matrix(5, 64), 1, none),
            nullptr);
  // A scalar addend: the loop's; a per-row one, and a transposed A: oneDNN's.
  EXPECT_NE(make_small_matmul(matrix(1, 64), matrix(64, 64), small_b, dnnl::memory::dims{1, 1}, matrix(1, 64),
                              1, none),
            nullptr);
  EXPECT_EQ(make_small_matmul(matrix(2, 64), matrix(64, 64), small_b, dnnl::memory::dims{2, 1}, matrix(2, 64),
                              1, none),
            nullptr);
  EXPECT_EQ(
      make_small_matmul(matrix(2, 64, true), matrix(64, 64), small_b, std::nullopt, matrix(2, 64), 1, none),
      nullptr);
  // bf16 operands: oneDNN's.
  const dnnl::memory::desc bf16_a({1, 64}, dt::bf16, dnnl::memory::dims{64, 1});
  EXPECT_EQ(make_small_matmul(bf16_a, matrix(64, 64), small_b, std::nullopt, matrix(1, 64), 1, none),
            nullptr);
}

// Through plans: small products (the loop) and larger ones (oneDNN's matmul with the bias as its
// bias argument, or a binary post-op when something is scaled before it) against the reference.
TEST(OnednnSmallMatmul, DenseLayersOfEverySizeMatchTheReference) {
  std::mt19937 rng(23);
  const AttrMap relu{{"activation", std::string("Relu")}, {"activation_params", std::vector<double>{}}};
  AttrMap relu_trans = relu;
  relu_trans.emplace("transB", AttrValue(1));
  for (const int64_t batch : {1, 8, 64}) {
    for (const auto& [k, n] : std::vector<std::pair<int64_t, int64_t>>{{64, 10}, {128, 64}, {300, 200}}) {
      SCOPED_TRACE("batch " + std::to_string(batch) + ", " + std::to_string(k) + " -> " + std::to_string(n));
      compare("FusedGemm", relu_trans,
              {{random_tensor({batch, k}, rng)},
               {random_tensor({n, k}, rng), true},
               {random_tensor({n}, rng), true}});
      compare("Gemm", {{"alpha", 0.5}},
              {{random_tensor({batch, k}, rng)},
               {random_tensor({k, n}, rng), true},
               {random_tensor({n}, rng), true}});
      compare("FusedMatMul", relu,
              {{random_tensor({2, batch, k}, rng)},
               {random_tensor({k, n}, rng), true},
               {random_tensor({n}, rng), true}});
    }
  }
}

// One plan with small and larger Dense layers, run by several executors on several threads at
// once: every thread gets the single-threaded result.
TEST(OnednnSmallMatmul, ExecutorsOfOnePlanRunConcurrently) {
  std::mt19937 rng(24);
  graph::Graph g;
  graph::Value* x = g.add_input("x", ops::TensorInfo{DType::kFloat32, Shape{2, 300}});
  const AttrMap relu{{"activation", std::string("Relu")},
                     {"activation_params", std::vector<double>{}},
                     {"transB", AttrValue(1)}};
  graph::Value* h = g.add_node("FusedGemm",
                               {x, g.add_initializer("w1", random_tensor({64, 300}, rng)),
                                g.add_initializer("b1", random_tensor({64}, rng))},
                               relu, "dense1")
                        ->outputs[0];
  graph::Value* y = g.add_node("Gemm",
                               {h, g.add_initializer("w2", random_tensor({10, 64}, rng)),
                                g.add_initializer("b2", random_tensor({10}, rng))},
                               {{"transB", AttrValue(1)}}, "dense2")
                        ->outputs[0];
  g.add_output(y);
  g.infer_shapes();
  const auto plan = runtime::compile(g, {.providers = {onednn_provider()}});
  ASSERT_EQ(plan->steps.at(1).provider, "onednn");
  constexpr int kThreads = 4, kRuns = 200;
  std::vector<Tensor> inputs;
  std::vector<std::vector<float>> want;
  for (int t = 0; t < kThreads; ++t) {
    inputs.push_back(random_tensor({2, 300}, rng));
    want.push_back(runtime::Executor(plan).run({inputs.back()}).at(0).to_vector<float>());
  }
  std::vector<int> mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      runtime::Executor executor(plan);
      for (int r = 0; r < kRuns; ++r)
        if (executor.run({inputs[static_cast<size_t>(t)]}).at(0).to_vector<float>() !=
            want[static_cast<size_t>(t)])
          ++mismatches[static_cast<size_t>(t)];
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(mismatches[static_cast<size_t>(t)], 0) << "thread " << t;
}

}  // namespace
}  // namespace kiln::onednn
