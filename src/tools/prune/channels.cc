// Structured channel pruning (include/kiln/prune.hpp): removes the output filters of smallest norm
// from each prunable Conv and the input channels (or Gemm columns) that read them.
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "graph/pass.h"
#include "graph/passes/passes.h"
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
  // Through a Concat: the channel counts of its inputs and which of them the pruned channels are
  // (empty: read directly).
  std::vector<int64_t> segment_sizes;
  size_t segment = 0;
};

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

// x * Sigmoid(x) (SiLU, as exported from PyTorch): `mul` is that Mul and `x` the value it scales.
bool is_silu(const Graph& g, const Node& mul, const Value* x) {
  if (mul.op != "Mul" || mul.inputs.size() != 2) return false;
  const Value* other = mul.inputs[0] == x ? mul.inputs[1] : mul.inputs[1] == x ? mul.inputs[0] : nullptr;
  return other && other != x && other->producer && other->producer->op == "Sigmoid" &&
         other->producer->inputs[0] == x && other->users.size() == 1 && !graph::is_graph_output(g, other);
}

// The Sigmoid inside a SiLU reading `x`: its only reader is the Mul that multiplies it by x.
bool is_silu_gate(const Graph& g, const Node& sigmoid, const Value* x) {
  return sigmoid.op == "Sigmoid" && sigmoid.inputs[0] == x && sigmoid.outputs[0]->users.size() == 1 &&
         is_silu(g, *sigmoid.outputs[0]->users[0], x);
}

// Resize by constant scales that keep the batch and channel dims (nearest or linear upsampling
// maps a zero channel to zeros).
bool is_spatial_resize(const Graph& g, const Node& n) {
  if (n.op != "Resize" || n.inputs.size() < 3 || n.inputs.size() > 4 || (n.inputs.size() == 4 && n.inputs[3]))
    return false;
  if (!n.inputs[2] || !graph::is_fixed_constant(g, n.inputs[2])) return false;
  const std::vector<float> scales = n.inputs[2]->constant.cast(DType::kFloat32).to_vector<float>();
  return scales.size() >= 2 && scales[0] == 1.0f && scales[1] == 1.0f && only_first_output_used(g, n);
}

// Ops that act on each channel alone and map a channel of zeros to zeros, so a zeroed channel
// stays zero through them (Clip when its bounds are constants around 0, Resize of the spatial dims).
bool keeps_zero_channels(const Graph& g, const Node& n) {
  if (n.op == "Clip") {
    const auto bound_ok = [&](size_t slot, bool lower) {
      if (n.inputs.size() <= slot || !n.inputs[slot]) return true;
      if (!graph::is_fixed_constant(g, n.inputs[slot])) return false;
      const double bound = n.inputs[slot]->constant.item();
      return lower ? bound <= 0 : bound >= 0;
    };
    return bound_ok(1, true) && bound_ok(2, false) && only_first_output_used(g, n);
  }
  if (n.op == "Resize") return is_spatial_resize(g, n);
  return (n.op == "Relu" || n.op == "LeakyRelu" || n.op == "MaxPool" || n.op == "AveragePool" ||
          n.op == "GlobalAveragePool" || n.op == "Identity" || n.op == "Dropout") &&
         only_first_output_used(g, n);
}

// A depthwise Conv (one filter per input channel, with constant weights and bias): its channels
// follow its input's, and a zero channel with its filter's bias zero stays zero.
bool is_depthwise(const Graph& g, const Node& n) {
  if (n.op != "Conv" || !n.inputs[0]->info || n.inputs[0]->info->shape.ndim() < 3) return false;
  const int64_t channels = n.inputs[0]->info->shape[1];
  if (channels <= 1 || group_of(n) != channels || !graph::is_fixed_constant(g, n.inputs[1])) return false;
  const Shape& w = n.inputs[1]->constant.shape();
  return w[0] == channels && w[1] == 1 && only_first_output_used(g, n) &&
         (n.inputs.size() < 3 || !n.inputs[2] || graph::is_fixed_constant(g, n.inputs[2]));
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

bool is_prunable_conv(const Graph& g, const Node& n) {
  return n.op == "Conv" && n.inputs.size() >= 2 && graph::is_fixed_constant(g, n.inputs[1]) &&
         n.inputs[1]->constant.dtype() == DType::kFloat32 && n.inputs[1]->constant.ndim() >= 3 &&
         group_of(n) == 1 && only_first_output_used(g, n) &&
         (n.inputs.size() < 3 || !n.inputs[2] || graph::is_fixed_constant(g, n.inputs[2]));
}

// The Convs whose output channels share one indexing (one Conv, or several joined by residual
// Adds) and the nodes where those channels end.
struct ChannelGroup {
  std::vector<Node*> producers;
  std::vector<Node*> depthwise;  // depthwise Convs on the way, which lose the same channels
  std::vector<Reader> readers;
};

// Builds the group of `start`: follows its channels forward through ops that keep zero channels
// and through Adds of two equal shapes, whose other input is traced back (through the same ops) to
// the Convs that produce it, whose channels are followed in turn. False when a channel reaches a
// graph output or an op other than those and the readers, or an Add input comes from anything but
// such Convs.
class GroupSearch {
 public:
  explicit GroupSearch(const Graph& g) : g_(g) {}

  bool run(Node* start, ChannelGroup& group) {
    group_ = &group;
    group.producers.push_back(start);
    return follow(start->outputs[0]) && drain();
  }

 private:
  // The readers of a Concat's output `v`, through per-channel ops only (no Add, no second Concat).
  bool run_downstream(const Value* v, ChannelGroup& group) {
    group_ = &group;
    downstream_only_ = true;
    return follow(v) && drain();
  }

  bool drain() {
    while (!pending_.empty()) {
      const Value* v = pending_.back();
      pending_.pop_back();
      if (!follow_users(v)) return false;
    }
    return true;
  }

  bool follow(const Value* v) {
    if (!seen_.insert(v).second) return true;
    if (graph::is_graph_output(g_, v) || v->users.empty()) return false;
    pending_.push_back(v);
    return true;
  }

  // Back from an Add input to the Convs that produce its channels.
  bool trace_back(const Value* v) {
    if (seen_.count(v)) return true;
    Node* p = v->producer;
    if (p == nullptr) return false;
    if (!follow(v)) return false;
    if (is_prunable_conv(g_, *p)) {
      group_->producers.push_back(p);
      return true;
    }
    if (keeps_zero_channels(g_, *p)) return trace_back(p->inputs[0]);
    for (const Value* x : p->inputs)
      if (is_silu(g_, *p, x)) return trace_back(x);
    if (is_depthwise(g_, *p)) {
      add_depthwise(p);
      return trace_back(p->inputs[0]);
    }
    if (is_residual_add(*p)) return trace_back(p->inputs[0]) && trace_back(p->inputs[1]);
    return false;
  }

  void add_depthwise(Node* n) {
    if (std::find(group_->depthwise.begin(), group_->depthwise.end(), n) == group_->depthwise.end())
      group_->depthwise.push_back(n);
  }

  static bool is_residual_add(const Node& n) {
    if (n.op != "Add" || n.inputs.size() != 2 || n.inputs[0] == n.inputs[1]) return false;
    const Value* a = n.inputs[0];
    const Value* b = n.inputs[1];
    return a->info && b->info && a->info->shape.ndim() >= 3 && a->info->shape == b->info->shape;
  }

  bool follow_users(const Value* v) {
    for (Node* u : v->users) {
      if (keeps_zero_channels(g_, *u)) {
        if (!reads_only_at(*u, v, 0) || !follow(u->outputs[0])) return false;
      } else if (is_silu_gate(g_, *u, v)) {
        continue;  // its Mul, another reader of v, carries the channels on
      } else if (is_silu(g_, *u, v)) {
        if (!follow(u->outputs[0])) return false;
      } else if (is_depthwise(g_, *u) && !downstream_only_) {
        if (!reads_only_at(*u, v, 0) || !follow(u->outputs[0])) return false;
        add_depthwise(u);
      } else if (u->op == "Concat" && !downstream_only_) {
        if (!follow_concat(*u, v)) return false;
      } else if (is_residual_add(*u) && !downstream_only_) {
        if (!follow(u->outputs[0]) || !trace_back(u->inputs[0]) || !trace_back(u->inputs[1])) return false;
      } else if (u->op == "Conv") {
        if (!reads_only_at(*u, v, 0) || group_of(*u) != 1 || !graph::is_fixed_constant(g_, u->inputs[1]))
          return false;
        group_->readers.push_back({u, 0, nullptr});
      } else if (u->op == "Flatten" || u->op == "Reshape") {
        if (!follow_flatten(*u, v)) return false;
      } else {
        return false;
      }
    }
    return true;
  }

  // A Concat along channels: its readers read these channels at an offset, among the other inputs'.
  bool follow_concat(const Node& concat, const Value* v) {
    const Value* out = concat.outputs[0];
    if (!out->info || graph::is_graph_output(g_, out)) return false;
    const int64_t rank = out->info->shape.ndim();
    int64_t axis = concat.schema().bind(concat.attrs).get_int("axis");
    if (axis < 0) axis += rank;
    if (axis != 1 || std::count(concat.inputs.begin(), concat.inputs.end(), v) != 1) return false;
    std::vector<int64_t> sizes;
    size_t segment = 0;
    for (size_t i = 0; i < concat.inputs.size(); ++i) {
      const Value* in = concat.inputs[i];
      if (!in || !in->info || in->info->shape.ndim() != rank || in->info->shape[1] < 0) return false;
      sizes.push_back(in->info->shape[1]);
      if (in == v) segment = i;
    }
    ChannelGroup downstream;
    if (!GroupSearch(g_).run_downstream(out, downstream)) return false;
    for (Reader r : downstream.readers) {
      r.segment_sizes = sizes;
      r.segment = segment;
      group_->readers.push_back(r);
    }
    return true;
  }

  // To (N, C * H * W): a block of H * W columns per channel.
  bool follow_flatten(Node& u, const Value* v) {
    const Value* flat = u.outputs[0];
    if (!reads_only_at(u, v, 0) || !v->info || !flat->info || v->info->shape.ndim() < 2) return false;
    const Shape& in = v->info->shape;
    const Shape& out = flat->info->shape;
    int64_t block = 1;
    for (int i = 2; i < in.ndim(); ++i) block *= in[i];
    if (out.ndim() != 2 || (in[0] < 0 && u.op == "Reshape") || out[0] != in[0] || block <= 0 ||
        out[1] != in[1] * block)
      return false;
    if (u.op == "Flatten" && u.schema().bind(u.attrs).get_int("axis") != 1) return false;
    if (u.op == "Reshape" && !graph::is_fixed_constant(g_, u.inputs[1])) return false;
    return collect_matrix_readers(g_, flat, block, u.op == "Reshape" ? &u : nullptr, group_->readers);
  }

  const Graph& g_;
  ChannelGroup* group_ = nullptr;
  std::set<const Value*> seen_;
  std::vector<const Value*> pending_;
  bool downstream_only_ = false;
};

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

// How many of `channels` output channels stay when a share `ratio` goes: C - floor(ratio * C),
// rounded to the nearest multiple of `multiple` (halves up, keeping more) within [multiple, the
// largest multiple not above C]; all of them when C <= multiple.
int64_t kept_count(int64_t channels, double ratio, int64_t multiple) {
  const int64_t kept = channels - static_cast<int64_t>(std::floor(ratio * static_cast<double>(channels)));
  if (multiple == 1) return kept;
  if (channels <= multiple) return channels;
  const int64_t nearest = (kept + multiple / 2) / multiple * multiple;
  return std::clamp(nearest, multiple, channels / multiple * multiple);
}

}  // namespace

Graph prune_channels(Graph model, const ChannelPruneOptions& options, PruneReport* report) {
  detail::check_ratio(options.ratio, "prune_channels");
  KILN_CHECK(options.norm == "l1" || options.norm == "l2", ErrorCode::kInvalidArgument,
             "prune_channels: norm must be \"l1\" or \"l2\", got \"", options.norm, "\"");
  KILN_CHECK(options.channel_multiple >= 1, ErrorCode::kInvalidArgument,
             "prune_channels: channel_multiple must be at least 1, got ", options.channel_multiple);
  Graph& g = model;
  graph::simplify_unfused(g);
  const Graph original = report ? g.clone() : Graph();
  const std::vector<Node*> convs = detail::weighted_layers(g, {"Conv"});
  detail::check_layer_names(convs, options.layers, "prune_channels");
  detail::check_layer_names(convs, options.excluded_layers, "prune_channels");

  // Choose from the original weights, then rewrite: a Conv may lose output channels and input
  // channels both.
  std::map<Node*, std::vector<int64_t>> kept_outputs, kept_inputs;
  std::map<Node*, Reader> matrix_readers;
  std::map<Node*, std::vector<int64_t>> kept_rows;
  // Per reader: the channel counts of what it reads (one segment, or a Concat's inputs) and the
  // channels kept of the segments that lose some.
  std::map<Node*, Reader> readers;
  std::map<Node*, std::map<size_t, std::vector<int64_t>>> kept_segments;
  const auto listed = [](const std::vector<std::string>& names, const Node* n) {
    return std::find(names.begin(), names.end(), n->name) != names.end();
  };
  std::set<const Node*> grouped;
  for (Node* conv : convs) {
    if (grouped.count(conv)) continue;
    const bool named = listed(options.layers, conv);
    ChannelGroup group;
    const bool prunable = is_prunable_conv(g, *conv) && GroupSearch(g).run(conv, group);
    KILN_CHECK(prunable || !named, ErrorCode::kInvalidArgument, "prune_channels: ", conv->label(),
               " cannot be pruned: it is grouped, or its channels reach a graph output or an op that ties "
               "or mixes them (Concat, BatchNormalization, an Add with a graph input, ...)");
    if (!prunable) continue;
    // A group is pruned as a whole: when one of its Convs is chosen and none is excluded.
    bool chosen = options.layers.empty(), excluded = false;
    for (const Node* p : group.producers) {
      grouped.insert(p);
      chosen = chosen || listed(options.layers, p);
      excluded = excluded || listed(options.excluded_layers, p);
    }
    if (!chosen || excluded) continue;
    const int64_t channels = conv->inputs[1]->constant.shape()[0];
    const int64_t removed = channels - kept_count(channels, options.ratio, options.channel_multiple);
    if (removed == 0) continue;
    // Residual groups rank channels by the sum of their filters' norms over the group's Convs.
    std::vector<double> norms(static_cast<size_t>(channels), 0.0);
    for (const Node* p : group.producers) {
      const std::vector<double> own = filter_norms(p->inputs[1]->constant, options.norm == "l2");
      for (size_t c = 0; c < norms.size(); ++c) norms[c] += own[c];
    }
    std::vector<int64_t> order(static_cast<size_t>(channels));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      return norms[static_cast<size_t>(a)] < norms[static_cast<size_t>(b)];
    });
    std::vector<int64_t> keep(order.begin() + removed, order.end());
    std::sort(keep.begin(), keep.end());
    for (Node* p : group.producers) kept_outputs[p] = keep;
    for (Node* dw : group.depthwise) {
      kept_outputs[dw] = keep;
      dw->attrs.insert_or_assign("group", AttrValue(static_cast<int64_t>(keep.size())));
    }
    for (Reader r : group.readers) {
      if (r.segment_sizes.empty()) r.segment_sizes = {channels};
      readers[r.node] = r;
      kept_segments[r.node][r.segment] = keep;
    }
  }
  for (const auto& [node, r] : readers) {
    std::vector<int64_t> kept;
    int64_t offset = 0;
    for (size_t i = 0; i < r.segment_sizes.size(); ++i) {
      const auto it = kept_segments[node].find(i);
      for (int64_t c = 0; c < r.segment_sizes[i]; ++c)
        if (it == kept_segments[node].end() || std::binary_search(it->second.begin(), it->second.end(), c))
          kept.push_back(offset + c);
      offset += r.segment_sizes[i];
    }
    if (r.block == 0) {
      kept_inputs[node] = kept;
    } else {
      matrix_readers[node] = r;
      kept_rows[node] = expand_blocks(kept, r.block);
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
