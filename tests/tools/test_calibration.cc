// Calibration thresholds (src/tools/quantize/calibration.cc) on distributions whose thresholds are
// known in closed form (uniform, normal, two spikes), and the entropy mode against MXNet 1.9.1's
// own _get_optimal_threshold on the same histogram.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <numeric>
#include <random>
#include <sstream>

#include "kiln/npy.hpp"
#include "kiln/quantize.hpp"
#include "test_support.h"

namespace kiln::quantization {
namespace {

std::vector<float> uniform_grid(float lo, float hi, int n) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = lo + (hi - lo) * static_cast<float>(i) / static_cast<float>(n - 1);
  return v;
}

std::vector<float> normal_samples(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = normal(rng);
  return v;
}

TEST(Calibration, NaiveIsTheLargestMagnitude) {
  TensorStatistics stats;
  const std::vector<float> a = uniform_grid(-3.0f, 2.0f, 1001), b = uniform_grid(-0.5f, 2.5f, 11);
  stats.add(a.data(), static_cast<int64_t>(a.size()));
  stats.add(b.data(), static_cast<int64_t>(b.size()));
  EXPECT_EQ(stats.min(), -3.0f);
  EXPECT_EQ(stats.max(), 2.5f);
  EXPECT_EQ(naive_threshold(stats), 3.0f);
  EXPECT_EQ(threshold(stats, CalibMode::kNaive, false), 3.0f);
}

TEST(Calibration, HistogramWidensKeepingEveryCount) {
  TensorStatistics stats(101);
  const std::vector<float> small = uniform_grid(-1.0f, 1.0f, 1000), large = uniform_grid(-10.0f, 3.0f, 500);
  stats.add(small.data(), 1000);
  stats.add(large.data(), 500);
  const std::vector<double>& h = stats.histogram();
  EXPECT_EQ(std::accumulate(h.begin(), h.end(), 0.0), 1500.0);
  EXPECT_EQ(h.size() % 2, 1u);
  const std::vector<double> e = stats.edges();
  // Widened by whole bins of the first width (2/101) to cover 10, symmetric about 0.
  EXPECT_NEAR(e.back(), -e.front(), 1e-6);
  EXPECT_GE(e.back(), 10.0);
  EXPECT_LT(e.back(), 10.0 + 2.0 / 101 + 1e-6);
  EXPECT_NEAR((e.back() - e.front()) / static_cast<double>(h.size()), 2.0 / 101, 1e-9);
}

TEST(Calibration, PercentileOfUniformAndNormal) {
  TensorStatistics uniform;
  const std::vector<float> u = uniform_grid(-1.0f, 1.0f, 200001);
  uniform.add(u.data(), static_cast<int64_t>(u.size()));
  const double bin = 2.0 / 8001;
  // 99% of |x| for x uniform on [-1, 1] lies below 0.99.
  EXPECT_NEAR(percentile_threshold(uniform, 99.0), 0.99, 1.5 * bin);
  EXPECT_NEAR(percentile_threshold(uniform, 50.0), 0.5, 1.5 * bin);
  EXPECT_NEAR(percentile_threshold(uniform, 100.0), 1.0, 1e-6);

  TensorStatistics normal;
  const std::vector<float> n = normal_samples(1000000, 7);
  normal.add(n.data(), static_cast<int64_t>(n.size()));
  // P(|x| < t) = erf(t / sqrt(2)): 99% at t = 2.5758, 99.99% at t = 3.8906. The sampling error
  // of 1e6 draws at these tails is about 0.004 and 0.03.
  EXPECT_NEAR(percentile_threshold(normal, 99.0), 2.5758, 0.015);
  EXPECT_NEAR(percentile_threshold(normal, 99.99), 3.8906, 0.1);
  EXPECT_NEAR(std::erf(percentile_threshold(normal, 99.0) / std::sqrt(2.0)), 0.99, 3e-4);
}

TEST(Calibration, EntropyOfTwoSpikesClipsJustOutsideThem) {
  // Two spikes at -1 and +1 in 8001 bins over [-4, 4] (bins 3000 and 5000). A candidate holds
  // both once they lie strictly inside its clipped range, first at 1001 bins either side of the
  // middle; there the 255 levels represent the spikes exactly (divergence 0), and MXNet takes the
  // first least divergence: the edge 1001 bins right of the middle bin's right edge.
  std::vector<double> h(8001, 0.0), e(8002);
  h[3000] = h[5000] = 1000;
  for (size_t i = 0; i < e.size(); ++i) e[i] = -4.0 + 8.0 * static_cast<double>(i) / 8001;
  EXPECT_FLOAT_EQ(entropy_threshold(h, e), static_cast<float>(-4.0 + 5002 * 8.0 / 8001));
}

TEST(Calibration, EntropyIgnoresRareOutliers) {
  // A normal distribution with a few far outliers: min/max calibration takes the outlier, entropy
  // a threshold inside the bulk of the distribution.
  std::vector<float> v = normal_samples(200000, 3);
  v[0] = 40.0f;
  v[1] = -35.0f;
  TensorStatistics stats;
  stats.add(v.data(), static_cast<int64_t>(v.size()));
  EXPECT_EQ(naive_threshold(stats), 40.0f);
  const float t = threshold(stats, CalibMode::kEntropy, false);
  EXPECT_GT(t, 2.0f);
  EXPECT_LT(t, 8.0f);
}

TEST(Calibration, ModesByName) {
  EXPECT_EQ(parse_calib_mode("naive"), CalibMode::kNaive);
  EXPECT_EQ(parse_calib_mode("entropy"), CalibMode::kEntropy);
  EXPECT_EQ(parse_calib_mode("percentile"), CalibMode::kPercentile);
  testing::expect_error([] { parse_calib_mode("kl"); }, ErrorCode::kInvalidArgument,
                        {"calibration mode", "kl"});
  testing::expect_error([] { TensorStatistics bad(8000); }, ErrorCode::kInvalidArgument, {"odd", "8000"});
}

// The same histogram through MXNet's _get_optimal_threshold (.venv-mxnet, which the test command makes).
TEST(Calibration, EntropyMatchesMxnet) {
  const std::string python = std::string(KILN_SOURCE_DIR) + "/.venv-mxnet/bin/python";
  ASSERT_TRUE(std::filesystem::exists(python)) << "no .venv-mxnet: run scripts/setup-mxnet.sh";
  testing::TempDir dir;
  struct Case {
    std::vector<float> values;
    const char* what;
  };
  std::vector<float> mixed = normal_samples(100000, 11);
  for (size_t i = 0; i < 300; ++i) mixed[i] = 6.0f + static_cast<float>(i) * 0.05f;
  std::vector<float> relu = normal_samples(100000, 5);
  for (float& x : relu) x = std::max(0.0f, x * 1.7f);
  relu[7] = 14.0f;
  std::vector<Case> cases = {{normal_samples(50000, 1), "normal"},
                             {mixed, "normal with a heavy right tail"},
                             {relu, "rectified, non-negative"}};
  // 2001 bins (MXNet's default is 8001) keep MXNet's quadratic search short.
  std::vector<TensorStatistics> stats(cases.size(), TensorStatistics(2001));
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<float>& v = cases[i].values;
    // Two batches, so that the histogram went through the widening too.
    const auto half = static_cast<int64_t>(v.size() / 2);
    stats[i].add(v.data() + half, static_cast<int64_t>(v.size()) - half);
    stats[i].add(v.data(), half);
    const std::vector<double>& h = stats[i].histogram();
    const std::vector<double> e = stats[i].edges();
    const std::string n = std::to_string(i);
    npy::save(dir / ("hist_" + n + ".npy"),
              Tensor::from_vector<double>(h, Shape{static_cast<int64_t>(h.size())}));
    npy::save(dir / ("edges_" + n + ".npy"),
              Tensor::from_vector<double>(e, Shape{static_cast<int64_t>(e.size())}));
    npy::save(dir / ("range_" + n + ".npy"),
              Tensor::from_vector<float>({stats[i].min(), stats[i].max()}, Shape{2}));
  }
  int status = 0;
  std::istringstream out(
      testing::run_command(python + " " + KILN_SOURCE_DIR + "/tests/tools/mxnet_entropy_threshold.py " +
                               dir.path().string() + " " + std::to_string(cases.size()) + " 2>/dev/null",
                           status));
  ASSERT_EQ(status, 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::vector<double> e = stats[i].edges();
    const double bin = e[1] - e[0];
    for (bool is_unsigned : {false, true}) {
      double mx_threshold = 0, mx_divergence = 0, divergence = 0;
      out >> mx_threshold >> mx_divergence;
      const float t = entropy_threshold(stats[i].histogram(), e,
                                        is_unsigned && stats[i].min() >= 0 ? 511 : 255, &divergence);
      // The same bin edge; or, where the divergence is nearly flat around its minimum, another
      // edge of the same least divergence: MXNet sums in float32, Kiln in double, and rounding
      // then decides between candidates a few parts in 10^4 apart.
      EXPECT_NEAR(divergence, mx_divergence, 2e-3 * mx_divergence)
          << cases[i].what << (is_unsigned ? ", uint8" : ", int8") << ": threshold " << t << ", MXNet's "
          << mx_threshold;
      if (std::abs(divergence - mx_divergence) > 1e-6 * mx_divergence) continue;
      EXPECT_NEAR(t, mx_threshold, 1.01 * bin) << cases[i].what << (is_unsigned ? ", uint8" : ", int8");
    }
  }
}

}  // namespace
}  // namespace kiln::quantization
