// Unstructured magnitude pruning (include/kiln/prune.hpp): per layer by ratio, and global by ratio
// or threshold. Shapes stay; the weights of smallest |w| become zero.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "kiln/error.hpp"
#include "kiln/prune.hpp"
#include "tools/prune/weights.h"

namespace kiln::pruning {

namespace {

using graph::Graph;
using graph::Node;

// round(ratio * n), the number of weights a ratio zeroes.
int64_t share_of(double ratio, int64_t n) {
  return static_cast<int64_t>(std::llround(ratio * static_cast<double>(n)));
}

// Zeroes, in the weights of `layers` taken together in order, the `count` of smallest |w| (ties:
// the earlier position).
void zero_smallest(Graph& g, const std::vector<Node*>& layers, int64_t count) {
  std::vector<std::vector<float>> weights;
  std::vector<std::pair<float, int64_t>> ranked;  // (|w|, position over all layers)
  int64_t position = 0;
  for (const Node* n : layers) {
    weights.push_back(n->inputs[1]->constant.to_vector<float>());
    for (float w : weights.back()) ranked.emplace_back(std::fabs(w), position++);
  }
  if (count <= 0) return;
  std::nth_element(ranked.begin(), ranked.begin() + (count - 1), ranked.end());
  std::vector<char> zero(static_cast<size_t>(position), 0);
  for (int64_t i = 0; i < count; ++i) zero[static_cast<size_t>(ranked[static_cast<size_t>(i)].second)] = 1;
  int64_t offset = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    std::vector<float>& w = weights[l];
    for (size_t i = 0; i < w.size(); ++i)
      if (zero[static_cast<size_t>(offset) + i]) w[i] = 0.0f;
    offset += static_cast<int64_t>(w.size());
    detail::replace_constant(g, layers[l], 1, Tensor::from_vector(w, layers[l]->inputs[1]->constant.shape()));
  }
}

}  // namespace

Graph prune_l1_unstructured(Graph model, double ratio, const std::vector<std::string>& layers,
                            PruneReport* report) {
  detail::check_ratio(ratio, "prune_l1_unstructured");
  const Graph original = report ? model.clone() : Graph();
  const std::vector<Node*> all = detail::weighted_layers(model);
  detail::check_layer_names(all, layers, "prune_l1_unstructured");
  for (Node* n : all) {
    if (!layers.empty() && std::find(layers.begin(), layers.end(), n->name) == layers.end()) continue;
    zero_smallest(model, {n}, share_of(ratio, n->inputs[1]->constant.numel()));
  }
  if (report) *report = measure(original, model);
  return model;
}

Graph prune_global_magnitude(Graph model, double ratio, PruneReport* report) {
  detail::check_ratio(ratio, "prune_global_magnitude");
  const Graph original = report ? model.clone() : Graph();
  const std::vector<Node*> layers = detail::weighted_layers(model, {"Conv", "Gemm"});
  int64_t total = 0;
  for (const Node* n : layers) total += n->inputs[1]->constant.numel();
  zero_smallest(model, layers, share_of(ratio, total));
  if (report) *report = measure(original, model);
  return model;
}

Graph prune_global_threshold(Graph model, float threshold, PruneReport* report) {
  KILN_CHECK(threshold >= 0, ErrorCode::kInvalidArgument,
             "prune_global_threshold: threshold must be >= 0, got ", threshold);
  const Graph original = report ? model.clone() : Graph();
  for (Node* n : detail::weighted_layers(model, {"Conv", "Gemm"})) {
    std::vector<float> w = n->inputs[1]->constant.to_vector<float>();
    for (float& x : w)
      if (std::fabs(x) < threshold) x = 0.0f;
    detail::replace_constant(model, n, 1, Tensor::from_vector(w, n->inputs[1]->constant.shape()));
  }
  if (report) *report = measure(original, model);
  return model;
}

}  // namespace kiln::pruning
