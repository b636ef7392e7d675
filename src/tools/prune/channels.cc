// Structured channel pruning (include/kiln/prune.hpp): removes the output filters of smallest norm
// from each prunable Conv and the input channels (or Gemm columns) that read them.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "graph/pass.h"
#include "kiln/error.hpp"
#include "kiln/prune.hpp"
#include "tools/prune/weights.h"

namespace kiln::pruning {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

// A node that reads a pruned Conv's channels and loses the same ones: the input channels of a
// Conv's weight, or a block of `block` rows or columns per channel of a Gemm's or MatMul's weight,
// after `reshape` (a Flatten or Reshape to two dims, whose target shape, when it is a Reshape, is
// rewritten).
struct Reader {
  Node* node = nullptr;
  int64_t block = 0;  // 0: a Conv
  Node* reshape = nullptr;
};

// Ops that act on each channel alone and map a channel of zeros to zeros, so a zeroed channel
// stays zero through them.
bool keeps_zero_channels(const std::string& op) {
  return op == "Relu" || op == "LeakyRelu" || op == "MaxPool" || op == "AveragePool" ||
         op == "GlobalAveragePool" || op == "Identity" || op == "Dropout";
}

bool only_first_output_used(const Graph& g, const Node& n) {
  for (size_t i = 1; i < n.outputs.size(); ++i)
    if (!n.outputs[i]->users.empty() || graph::is_graph_output(g, n.outputs[i])) return false;
  return true;
}

bool reads_only_at(const Node& n, const Value* v, size_t slot) {
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if ((n.inputs[i] == v) != (i == slot)) return false;
  return true;
}

int64_t group_of(const Node& conv) {
  return conv.schema().bind(conv.attrs).get_int("group");
}

// The matrix readers (Gemm without transA, MatMul, both with constant 2-D weights) of `flat`, a
// two-dim view of a channel tensor with `block` columns per channel; false when another op reads it.
bool collect_matrix_readers(const Graph& g, const Value* flat, int64_t block, Node* reshape,
                            std::vector<Reader>& readers) {
  if (graph::is_graph_output(g, flat) || flat->users.empty()) return false;
  for (Node* u : flat->users) {
    if ((u->op != "Gemm" && u->op != "MatMul") || !reads_only_at(*u, flat, 0)) return false;
    if (!graph::is_fixed_constant(g, u->inputs[1]) || u->inputs[1]->constant.ndim() != 2) return false;
    if (u->op == "Gemm" && u->schema().bind(u->attrs).get_int("transA") != 0) return false;
    readers.push_back({u, block, reshape});
  }
  return true;
}

// Follows the channels of `v` (N, C, spatial...) forward through ops that keep zero channels;
// gathers the nodes where they end, or returns false when one of them ends anywhere else.
bool collect_readers(const Graph& g, const Value* v, std::vector<Reader>& readers) {
  if (graph::is_graph_output(g, v) || v->users.empty()) return false;
  for (Node* u : v->users) {
    if (keeps_zero_channels(u->op)) {
      if (!reads_only_at(*u, v, 0) || !only_first_output_used(g, *u)) return false;
      if (!collect_readers(g, u->outputs[0], readers)) return false;
    } else if (u->op == "Conv") {
      if (!reads_only_at(*u, v, 0) || group_of(*u) != 1 || !graph::is_fixed_constant(g, u->inputs[1]))
        return false;
      readers.push_back({u, 0, nullptr});
    } else if (u->op == "Flatten" || u->op == "Reshape") {
      // To (N, C * H * W): a block of H * W columns per channel.
      const Value* flat = u->outputs[0];
      if (!reads_only_at(*u, v, 0) || !v->info || !flat->info || v->info->shape.ndim() < 2) return false;
      const Shape& in = v->info->shape;
      const Shape& out = flat->info->shape;
      int64_t block = 1;
      for (int i = 2; i < in.ndim(); ++i) block *= in[i];
      if (out.ndim() != 2 || (in[0] < 0 && u->op == "Reshape") || out[0] != in[0] || block <= 0 ||
          out[1] != in[1] * block)
        return false;
      if (u->op == "Flatten" && u->schema().bind(u->attrs).get_int("axis") != 1) return false;
      if (u->op == "Reshape" && !graph::is_fixed_constant(g, u->inputs[1])) return false;
      if (!collect_matrix_readers(g, flat, block, u->op == "Reshape" ? u : nullptr, readers)) return false;
    } else {
      return false;
    }
  }
  return true;
}

// The filter norms of a Conv weight (M, C, k...): sum |w| ("l1") or sqrt(sum w^2) ("l2") per row.
std::vector<double> filter_norms(const Tensor& weight, bool l2) {
  const std::vector<float> w = weight.to_vector<float>();
  const int64_t rows = weight.shape()[0];
  const int64_t size = weight.numel() / rows;
  std::vector<double> norms(static_cast<size_t>(rows), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    double s = 0;
    for (int64_t i = 0; i < size; ++i) {
      const double x = w[static_cast<size_t>(r * size + i)];
      s += l2 ? x * x : std::fabs(x);
    }
    norms[static_cast<size_t>(r)] = l2 ? std::sqrt(s) : s;
  }
  return norms;
}

// The indices kept along `axis` of `t`.
Tensor select(const Tensor& t, int axis, const std::vector<int64_t>& keep) {
  std::vector<int64_t> dims = t.shape().dims();
  dims[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  Tensor out = Tensor::empty(Shape(dims), t.dtype());
  for (size_t i = 0; i < keep.size(); ++i) {
    const int64_t k = keep[i];
    const int64_t j = static_cast<int64_t>(i);
    out.slice(axis, j, j + 1).copy_from(t.slice(axis, k, k + 1));
  }
  return out;
}

// The kept channels' blocks of columns (or rows) of a matrix.
std::vector<int64_t> expand_blocks(const std::vector<int64_t>& keep, int64_t block) {
  std::vector<int64_t> rows;
  for (int64_t c : keep)
    for (int64_t j = 0; j < block; ++j) rows.push_back(c * block + j);
  return rows;
}

}  // namespace

Graph prune_channels(Graph model, const ChannelPruneOptions& options, PruneReport* report) {
  detail::check_ratio(options.ratio, "prune_channels");
  KILN_CHECK(options.norm == "l1" || options.norm == "l2", ErrorCode::kInvalidArgument,
             "prune_channels: norm must be \"l1\" or \"l2\", got \"", options.norm, "\"");
  Graph& g = model;
  detail::simplify(g);
  const Graph original = report ? g.clone() : Graph();
  const std::vector<Node*> convs = detail::weighted_layers(g, {"Conv"});
  detail::check_layer_names(convs, options.layers, "prune_channels");
  detail::check_layer_names(convs, options.excluded_layers, "prune_channels");

  // Choose from the original weights, then rewrite: a Conv may lose output channels and input
  // channels both.
  std::map<Node*, std::vector<int64_t>> kept_outputs, kept_inputs;
  std::map<Node*, Reader> matrix_readers;
  std::map<Node*, std::vector<int64_t>> kept_rows;
  for (Node* conv : convs) {
    const bool named =
        std::find(options.layers.begin(), options.layers.end(), conv->name) != options.layers.end();
    const auto& excluded = options.excluded_layers;
    if ((!options.layers.empty() && !named) ||
        std::find(excluded.begin(), excluded.end(), conv->name) != excluded.end())
      continue;
    const Tensor& w = conv->inputs[1]->constant;
    std::vector<Reader> readers;
    const bool prunable = w.ndim() >= 3 && group_of(*conv) == 1 && only_first_output_used(g, *conv) &&
                          collect_readers(g, conv->outputs[0], readers);
    KILN_CHECK(prunable || !named, ErrorCode::kInvalidArgument, "prune_channels: ", conv->label(),
               " cannot be pruned: it is grouped, or its channels reach a graph output or an op that ties "
               "or mixes them (Add, Concat, BatchNormalization, ...)");
    if (!prunable) continue;
    const int64_t channels = w.shape()[0];
    const auto removed = static_cast<int64_t>(std::floor(options.ratio * static_cast<double>(channels)));
    if (removed == 0) continue;
    const std::vector<double> norms = filter_norms(w, options.norm == "l2");
    std::vector<int64_t> order(static_cast<size_t>(channels));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return norms[static_cast<size_t>(a)] < norms[static_cast<size_t>(b)];
    });
    std::vector<int64_t> keep(order.begin() + removed, order.end());
    std::sort(keep.begin(), keep.end());
    kept_outputs[conv] = keep;
    for (const Reader& r : readers) {
      if (r.block == 0) {
        kept_inputs[r.node] = keep;
      } else {
        matrix_readers[r.node] = r;
        kept_rows[r.node] = expand_blocks(keep, r.block);
      }
    }
  }

  for (Node* conv : convs) {
    const auto out = kept_outputs.find(conv);
    const auto in = kept_inputs.find(conv);
    if (out == kept_outputs.end() && in == kept_inputs.end()) continue;
    Tensor w = conv->inputs[1]->constant;
    if (out != kept_outputs.end()) {
      w = select(w, 0, out->second);
      if (conv->inputs.size() > 2 && conv->inputs[2]) {
        KILN_CHECK(graph::is_fixed_constant(g, conv->inputs[2]), ErrorCode::kInvalidArgument,
                   "prune_channels: ", conv->label(),
                   ": input 2 (B) must be a constant to prune its channels");
        detail::replace_constant(g, conv, 2, select(conv->inputs[2]->constant, 0, out->second));
      }
    }
    if (in != kept_inputs.end()) w = select(w, 1, in->second);
    detail::replace_constant(g, conv, 1, w);
  }
  for (const auto& [node, reader] : matrix_readers) {
    const Tensor& b = node->inputs[1]->constant;
    const bool rows_are_inputs =
        node->op == "MatMul" || node->schema().bind(node->attrs).get_int("transB") == 0;
    detail::replace_constant(g, node, 1, select(b, rows_are_inputs ? 0 : 1, kept_rows.at(node)));
    if (reader.reshape) {
      const int64_t batch = reader.reshape->outputs[0]->info->shape[0];
      const auto columns = static_cast<int64_t>(kept_rows.at(node).size());
      detail::replace_constant(g, reader.reshape, 1,
                               Tensor::from_vector<int64_t>({batch, columns}, Shape{2}));
    }
  }
  g.infer_shapes(/*allow_unknown=*/true);
  g.verify();
  if (report) *report = measure(original, g);
  return model;
}

}  // namespace kiln::pruning
