// Calibration statistics and thresholds (include/kiln/quantize.hpp): the histogram MXNet 1.x
// collects per tensor, and the three ways of choosing a tensor's clipping threshold from it.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/thread_pool.h"
#include "kiln/error.hpp"
#include "kiln/quantize.hpp"

namespace kiln::quantization {

CalibMode parse_calib_mode(const std::string& text) {
  if (text == "naive") return CalibMode::kNaive;
  if (text == "entropy") return CalibMode::kEntropy;
  if (text == "percentile") return CalibMode::kPercentile;
  raise(ErrorCode::kInvalidArgument,
        "calibration mode: expected \"naive\", \"entropy\" or \"percentile\", got \"", text, "\"");
}

TensorStatistics::TensorStatistics(int num_bins) : num_bins_(num_bins) {
  KILN_CHECK(num_bins >= 3 && num_bins % 2 == 1, ErrorCode::kInvalidArgument,
             "TensorStatistics: num_bins: expected an odd number >= 3 (a middle bin around 0), got ",
             num_bins);
}

namespace {

// Adds the values' counts to `histogram`, whose bins split [-th, th] equally (np.histogram's rule:
// the last bin is closed). NaNs are left out.
void count_into(std::vector<double>& histogram, const float* data, int64_t count, double th) {
  const int64_t bins = static_cast<int64_t>(histogram.size());
  const double per_unit = static_cast<double>(bins) / (2 * th);
  for (int64_t i = 0; i < count; ++i) {
    const double v = data[i];
    if (std::isnan(v)) continue;
    const auto bin = static_cast<int64_t>(std::floor((v + th) * per_unit));
    histogram[static_cast<size_t>(std::clamp<int64_t>(bin, 0, bins - 1))] += 1;
  }
}

}  // namespace

void TensorStatistics::add(const float* data, int64_t count) {
  if (count == 0) return;
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (int64_t i = 0; i < count; ++i) {
    lo = std::min(lo, data[i]);
    hi = std::max(hi, data[i]);
  }
  // A tensor of zeros still needs a histogram with a width: the smallest normal float.
  const float th = std::max({std::abs(lo), std::abs(hi), std::numeric_limits<float>::min()});
  if (count_ == 0) {
    min_ = lo;
    max_ = hi;
    th_ = th;
    histogram_.assign(static_cast<size_t>(num_bins_), 0.0);
  } else {
    min_ = std::min(min_, lo);
    max_ = std::max(max_, hi);
  }
  count_ += count;
  if (th > th_) {
    // Widen by whole bins of the current width on both sides, so the counts so far keep their
    // bins, now in the middle (MXNet's combine_histogram).
    const double step = 2.0 * th_ / static_cast<double>(histogram_.size());
    const auto extra = static_cast<size_t>(std::floor((th - th_) / step) + 1);
    std::vector<double> wider(histogram_.size() + 2 * extra, 0.0);
    std::copy(histogram_.begin(), histogram_.end(), wider.begin() + static_cast<ptrdiff_t>(extra));
    histogram_ = std::move(wider);
    th_ = static_cast<float>(th_ + static_cast<double>(extra) * step);
  }
  count_into(histogram_, data, count, th_);
}

void TensorStatistics::add(const Tensor& values) {
  KILN_CHECK(values.dtype() == DType::kFloat32, ErrorCode::kTypeMismatch,
             "TensorStatistics: expected float32 values, got ", dtype_name(values.dtype()));
  const Tensor dense = values.contiguous();
  add(dense.data<float>(), dense.numel());
}

std::vector<double> TensorStatistics::edges() const {
  std::vector<double> e(histogram_.size() + 1);
  const double step = 2.0 * th_ / static_cast<double>(histogram_.size());
  for (size_t i = 0; i < e.size(); ++i) e[i] = -static_cast<double>(th_) + static_cast<double>(i) * step;
  return e;
}

float naive_threshold(const TensorStatistics& stats) {
  return std::max(std::abs(stats.min()), std::abs(stats.max()));
}

float percentile_threshold(const TensorStatistics& stats, double percentile) {
  KILN_CHECK(percentile > 0 && percentile <= 100, ErrorCode::kInvalidArgument,
             "percentile calibration: expected a percentile in (0, 100], got ", percentile);
  const std::vector<double>& h = stats.histogram();
  if (h.empty()) return 0;
  const std::vector<double> e = stats.edges();
  const double total = std::accumulate(h.begin(), h.end(), 0.0);
  const size_t middle = h.size() / 2;
  // Magnitude rings outward from the middle bin: ring k holds bins middle - k and middle + k.
  double below = 0;
  for (size_t k = 0; k <= middle; ++k) {
    below += h[middle + k] + (k > 0 ? h[middle - k] : 0.0);
    if (below >= total * percentile / 100.0) return static_cast<float>(e[middle + k + 1]);
  }
  return static_cast<float>(e.back());
}

namespace {

// MXNet's SmoothDistribution: zeros become eps, taken evenly from the non-zero entries. Empty
// when every entry is zero or the non-zero ones cannot pay for the zeros.
std::vector<double> smooth(const std::vector<double>& p, double eps = 0.0001) {
  const auto zeros = static_cast<double>(std::count(p.begin(), p.end(), 0.0));
  const double nonzeros = static_cast<double>(p.size()) - zeros;
  if (nonzeros == 0) return {};
  const double eps1 = eps * zeros / nonzeros;
  if (eps1 >= 1.0) return {};
  std::vector<double> out = p;
  for (double& v : out) v += v == 0 ? eps : -eps1;
  return out;
}

// KL(p || q) of the two distributions normalized to sum 1.
double kl_divergence(const std::vector<double>& p, const std::vector<double>& q) {
  const double p_sum = std::accumulate(p.begin(), p.end(), 0.0);
  const double q_sum = std::accumulate(q.begin(), q.end(), 0.0);
  double sum = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double pi = p[i] / p_sum, qi = q[i] / q_sum;
    if (pi > 0 && qi > 0) sum += pi * std::log(pi / qi);
  }
  return sum;
}

// The divergence of the candidate threshold `half` bins either side of the middle bin.
double divergence_at(const std::vector<double>& h, size_t half, int levels) {
  const size_t middle = h.size() / 2;
  const size_t start = middle - half, stop = middle + half + 1;
  const size_t width = stop - start;
  // p: the histogram clipped to the candidate, outliers added to its end bins. `sliced`: the
  // bins strictly inside, which the quantized distribution is built from (MXNet leaves the first
  // bin, which p merges with the left outliers, out of it).
  std::vector<double> p(width, 0.0), sliced(width, 0.0);
  for (size_t j = 0; j < h.size(); ++j) {
    if (j <= start) {
      p[0] += h[j];
    } else if (j >= stop) {
      p.back() += h[j];
    } else {
      sliced[j - start] = h[j];
      p[j - start] = h[j];
    }
  }
  const size_t merged = width / static_cast<size_t>(levels);
  std::vector<double> quantized(static_cast<size_t>(levels), 0.0);
  for (size_t l = 0; l < quantized.size(); ++l)
    for (size_t k = l * merged; k < (l + 1) * merged; ++k) quantized[l] += sliced[k];
  for (size_t k = quantized.size() * merged; k < width; ++k) quantized.back() += sliced[k];
  // q: each level spread evenly over the bins of its group that p does not leave empty.
  std::vector<double> q(width, 0.0);
  for (size_t l = 0; l < quantized.size(); ++l) {
    const size_t begin = l * merged, end = l + 1 == quantized.size() ? width : (l + 1) * merged;
    const auto nonzero = static_cast<double>(std::count_if(sliced.begin() + static_cast<ptrdiff_t>(begin),
                                                           sliced.begin() + static_cast<ptrdiff_t>(end),
                                                           [](double v) { return v != 0; }));
    if (nonzero == 0) continue;
    for (size_t k = begin; k < end; ++k)
      if (p[k] != 0) q[k] = quantized[l] / nonzero;
  }
  const std::vector<double> ps = smooth(p), qs = smooth(q);
  if (ps.empty() || qs.empty()) return std::numeric_limits<double>::infinity();
  return kl_divergence(ps, qs);
}

}  // namespace

float entropy_threshold(const std::vector<double>& histogram, const std::vector<double>& edges,
                        int num_quantized_bins, double* least_divergence) {
  KILN_CHECK(histogram.size() % 2 == 1 && edges.size() == histogram.size() + 1, ErrorCode::kInvalidArgument,
             "entropy calibration: expected an odd number of bins and one edge more, got ", histogram.size(),
             " bins and ", edges.size(), " edges");
  KILN_CHECK(num_quantized_bins >= 3 && static_cast<size_t>(num_quantized_bins) <= histogram.size(),
             ErrorCode::kInvalidArgument, "entropy calibration: num_quantized_bins: expected 3 to ",
             histogram.size(), " (the histogram's bins), got ", num_quantized_bins);
  const size_t middle = histogram.size() / 2;
  const size_t first = static_cast<size_t>(num_quantized_bins) / 2;
  std::vector<double> divergence(middle + 1 - first);
  parallel_for(0, static_cast<int64_t>(divergence.size()), 16, [&](int64_t begin, int64_t end) {
    for (int64_t c = begin; c < end; ++c)
      divergence[static_cast<size_t>(c)] =
          divergence_at(histogram, first + static_cast<size_t>(c), num_quantized_bins);
  });
  // The first of the least divergences, as MXNet picks.
  size_t best = 0;
  for (size_t c = 1; c < divergence.size(); ++c)
    if (divergence[c] < divergence[best]) best = c;
  if (least_divergence) *least_divergence = divergence[best];
  return static_cast<float>(edges[middle + first + best + 1]);
}

float threshold(const TensorStatistics& stats, CalibMode mode, bool unsigned_levels, double percentile) {
  switch (mode) {
    case CalibMode::kNaive:
      return naive_threshold(stats);
    case CalibMode::kPercentile:
      return percentile_threshold(stats, percentile);
    case CalibMode::kEntropy:
      if (stats.histogram().empty()) return 0;
      return entropy_threshold(stats.histogram(), stats.edges(), unsigned_levels ? 511 : 255);
  }
  return naive_threshold(stats);
}

}  // namespace kiln::quantization
