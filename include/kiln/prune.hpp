// Pruning: zeroing weights of small magnitude (unstructured) and removing whole output channels
// of convolutions (structured), with a report of parameters, FLOPs and sparsity before and after.
//
//   kiln::pruning::PruneReport report;
//   kiln::graph::Graph sparse = kiln::pruning::prune_l1_unstructured(std::move(model), 0.5, {}, &report);
//   kiln::graph::Graph smaller = kiln::pruning::prune_channels(std::move(model), {.ratio = 0.3}, &report);
//   std::cout << report.to_string();
//
// Weighted layers are Conv, Gemm and MatMul nodes whose weight (input 1) is a float32 constant
// that the caller cannot override. Unstructured pruning keeps every shape: it zeroes the weights
// of smallest |w|, so the model is sparser but computes as much. Channel pruning removes the
// output filters of smallest norm from a Conv and rewrites what reads them (see prune_channels),
// so the model gets smaller and faster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {
namespace graph {
class Graph;
}

namespace pruning {

// One weighted layer before and after pruning.
struct LayerReport {
  std::string name;
  std::string op;
  int64_t params_before = 0, params_after = 0;  // elements of the weight and bias
  int64_t zeros_before = 0, zeros_after = 0;    // zero elements of the weight
  int64_t flops_before = 0, flops_after = 0;    // 2 per multiply-add (-1: shapes unknown)
};

struct PruneReport {
  std::vector<LayerReport> layers;  // the weighted layers of the original graph, in graph order
  // Totals over the whole graph: every float constant (parameters), the FLOPs of
  // runtime::count_flops, and the zero share of the weighted layers' weights.
  int64_t params_before = 0, params_after = 0;
  int64_t flops_before = 0, flops_after = 0;
  double sparsity_before = 0, sparsity_after = 0;
  std::string to_string() const;  // a table, one row per layer, then the totals
};

// What `before` and `after` (the same model, pruned) count. Graph inputs with unknown dims are
// taken with those dims as 1 for the FLOPs (batch 1).
PruneReport measure(const graph::Graph& before, const graph::Graph& after);

// ---- Unstructured ----

// Per layer: zeroes round(ratio * n) of the n weights of each weighted layer (those named in
// `layers`, or all when it is empty), those of smallest |w|; among equal magnitudes, the first
// in memory order. A ratio outside [0, 1) or an unknown layer name is a kiln::Error.
graph::Graph prune_l1_unstructured(graph::Graph model, double ratio,
                                   const std::vector<std::string>& layers = {},
                                   PruneReport* report = nullptr);
// Global: ranks the weights of all Conv and Gemm layers together and zeroes round(ratio * n) of
// them, smallest |w| first (ties: earlier layer, then memory order).
graph::Graph prune_global_magnitude(graph::Graph model, double ratio, PruneReport* report = nullptr);
// Global: zeroes every Conv and Gemm weight with |w| < threshold (threshold >= 0).
graph::Graph prune_global_threshold(graph::Graph model, float threshold, PruneReport* report = nullptr);

// ---- Structured ----

struct ChannelPruneOptions {
  double ratio = 0.3;               // share of each prunable Conv's output channels removed, in [0, 1)
  std::string norm = "l1";          // "l1" | "l2": the norm of each output filter that ranks it
  std::vector<std::string> layers;  // Conv nodes to prune; empty: every prunable one
  std::vector<std::string> excluded_layers;  // Conv nodes left whole
  // Kept channels per pruned Conv (or group) rounded to a multiple of this (>= 1), so that oneDNN's
  // blocked layouts (16 channels for fp32/bf16 on AVX-512, 4 or 16 for int8) hold no padding.
  int64_t channel_multiple = 1;
};

// Removes floor(ratio * C) output channels of smallest filter norm from each prunable Conv (at
// least one stays). With channel_multiple N > 1 the kept count C - floor(ratio * C) is rounded to
// the nearest multiple of N (halves up), at least N and at most the largest multiple of N not above
// C; a Conv of at most N channels stays whole. A residual group keeps one count, and a Concat's
// inputs are each a multiple, so every pruned width is a multiple of N. The graph is first simplified as
// quantize_model does (BatchNormalization folded into the Conv before it, so its shift is the Conv's bias).
// From a Conv that is not grouped, the channels are followed through ops that act per channel and map 0 to 0
// (Relu, LeakyRelu, Clip with constant bounds around 0, x * Sigmoid(x), Resize of the spatial dims, MaxPool,
// AveragePool, GlobalAveragePool, Identity, Dropout, and depthwise Convs, which lose the same channels) to
// where they end:
//   - the data input of a non-grouped Conv, whose input channels are removed the same;
//   - a Flatten (axis 1) or a Reshape to two dims read only by Gemm or MatMul nodes, whose weights
//     lose a block of H*W columns (or rows) per channel;
//   - a residual Add of two equal shapes whose other input comes, through such ops, from prunable
//     Convs: those Convs form a group, ranked by summed filter norms and pruned together (when one
//     of them is chosen and none is excluded);
//   - a Concat along channels: the readers of its output (through per-channel ops) lose the same
//     channels at that input's offset.
// Channels that reach a graph output, a grouped Conv that is not depthwise or any other op are
// left alone. The pruned graph computes what the original computes with the removed filters and
// their biases set to zero. Naming a Conv in `layers` that cannot be pruned, or a name that is no
// Conv in `layers` or `excluded_layers`, is a kiln::Error.
graph::Graph prune_channels(graph::Graph model, const ChannelPruneOptions& options = {},
                            PruneReport* report = nullptr);

// Loads MODEL (as Predictor::load does), prunes it (channels when `structured`, else per-layer
// unstructured; `options.ratio` and `options.layers` apply to both) and writes it as ONNX to
// `output_path`; returns the report.
PruneReport prune_model_file(const std::string& model_path, const std::string& output_path, bool structured,
                             const ChannelPruneOptions& options);

}  // namespace pruning
}  // namespace kiln
