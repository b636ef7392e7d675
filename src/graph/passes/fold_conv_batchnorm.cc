// Conv + BatchNormalization folding. In inference mode BatchNormalization is an affine map per
// channel, y = x * s + (beta - mean * s) with s = scale / sqrt(var + epsilon), and channel m of a
// Conv's output is linear in filter m of W, so the map moves into the Conv's weights:
//   W'[m] = W[m] * s[m]        B'[m] = (B[m] - mean[m]) * s[m] + beta[m]   (B = 0 when absent)
// This holds for grouped convs too: W's first axis is the output channel whatever the groups.
// W' and B' are computed in double and stored in W's dtype, as new initializers (W may be shared
// with other nodes); the old ones are dropped as soon as nothing reads them.
//
// Preconditions: training_mode = 0; W, B and the four BatchNormalization parameters are fixed
// constants of W's channel count; the Conv's output is read by the BatchNormalization alone.
#include <cmath>

#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

std::vector<double> doubles_of(const Tensor& t) {
  return t.cast(DType::kFloat64).to_vector<double>();
}

// The Conv whose output `bn` alone reads, when everything the fold needs is constant.
Node* foldable_conv(const Graph& graph, const Node& bn) {
  if (bn.schema().bind(bn.attrs).get_int("training_mode") != 0) return nullptr;
  const Value* y = bn.inputs[0];
  Node* conv = y->producer;
  if (!conv || conv->op != "Conv" || y->users.size() != 1 || is_graph_output(graph, y)) return nullptr;
  const Value* w = conv->inputs[1];
  const Value* b = conv->inputs.size() > 2 ? conv->inputs[2] : nullptr;
  if (!is_fixed_constant(graph, w) || (b && !is_fixed_constant(graph, b))) return nullptr;
  if (!is_floating(w->constant.dtype()) || w->constant.ndim() < 1) return nullptr;
  const int64_t channels = w->constant.shape()[0];
  if (b && b->constant.numel() != channels) return nullptr;
  for (size_t i = 1; i <= 4; ++i)
    if (!is_fixed_constant(graph, bn.inputs[i]) || bn.inputs[i]->constant.numel() != channels) return nullptr;
  return conv;
}

bool fold_into_conv(Graph& graph, Node* bn) {
  Node* conv = foldable_conv(graph, *bn);
  if (!conv) return false;
  const Tensor w = conv->inputs[1]->constant;
  const int64_t channels = w.shape()[0];
  const double epsilon = bn->schema().bind(bn->attrs).get_float("epsilon");
  const auto scale = doubles_of(bn->inputs[1]->constant), beta = doubles_of(bn->inputs[2]->constant);
  const auto mean = doubles_of(bn->inputs[3]->constant), var = doubles_of(bn->inputs[4]->constant);
  std::vector<double> bias = conv->inputs.size() > 2 && conv->inputs[2]
                                 ? doubles_of(conv->inputs[2]->constant)
                                 : std::vector<double>(static_cast<size_t>(channels), 0.0);
  std::vector<double> factor(static_cast<size_t>(channels));
  for (size_t m = 0; m < factor.size(); ++m) {
    factor[m] = scale[m] / std::sqrt(var[m] + epsilon);
    KILN_CHECK(std::isfinite(factor[m]), ErrorCode::kInvalidArgument, bn->label(), ": channel ", m,
               " has scale / sqrt(var + epsilon) = ", factor[m], ", which cannot be folded into ",
               conv->label());
    bias[m] = (bias[m] - mean[m]) * factor[m] + beta[m];
  }
  // The BatchNormalization's readers move to the Conv's output first: this is the step that can
  // decline (a graph output name that cannot move), and it must decline before W changes.
  std::vector<Value*> replacements(bn->outputs.size(), nullptr);
  replacements[0] = conv->outputs[0];
  if (!remove_node_replacing(graph, bn, replacements)) return false;

  // Each element is scaled in double and rounded once to W's dtype; no double copy of W is made,
  // so that folding a large model does not hold its weights several times over.
  const Tensor w_in = w.contiguous();
  Tensor w_folded = Tensor::empty(w.shape(), w.dtype());
  const int64_t per_channel = channels == 0 ? 0 : w.numel() / channels;
  dispatch_dtype(w.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* from = w_in.data<T>();
    T* to = w_folded.data<T>();
    for (int64_t m = 0; m < channels; ++m) {
      for (int64_t k = 0; k < per_channel; ++k) {
        const int64_t i = m * per_channel + k;
        to[i] = convert_value<T>(convert_value<double>(from[i]) * factor[static_cast<size_t>(m)]);
      }
    }
  });
  Value* w_new = graph.add_initializer(graph.fresh_name(conv->name + "_W_bn"), w_folded);
  Value* b_new = graph.add_initializer(graph.fresh_name(conv->name + "_B_bn"),
                                       Tensor::from_vector(bias, Shape{channels}).cast(w.dtype()));
  graph.set_input(conv, 1, w_new);
  if (conv->inputs.size() < 3) conv->inputs.resize(3, nullptr);
  graph.set_input(conv, 2, b_new);
  return true;
}

bool fold_conv_batchnorm(Graph& graph) {
  bool changed = false;
  for (Node* n : graph.nodes()) {
    if (n->op != "BatchNormalization" || !fold_into_conv(graph, n)) continue;
    // The replaced weight goes at once, not at the next dead-node elimination: the next fold's
    // new weight may then reuse its bytes, and a model's weights are never held twice.
    graph.remove_unused_values();
    changed = true;
  }
  return changed;
}

}  // namespace

Pass fold_conv_batchnorm_pass() {
  return Pass{"fold_conv_batchnorm", {}, {}, fold_conv_batchnorm};
}

}  // namespace kiln::graph
