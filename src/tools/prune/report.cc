// The pruning report (include/kiln/prune.hpp): parameters, FLOPs and sparsity per weighted layer
// and in total, before and after.
#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "kiln/prune.hpp"
#include "runtime/flops.h"
#include "tools/prune/weights.h"

namespace kiln::pruning {

namespace {

using graph::Graph;
using graph::Node;

// A copy of `g` whose graph inputs have their unknown dims set to 1, shapes inferred.
Graph with_concrete_inputs(const Graph& g) {
  Graph c = g.clone();
  for (graph::Value* in : c.inputs()) {
    if (!in->info) continue;
    std::vector<int64_t> dims = in->info->shape.dims();
    for (int64_t& d : dims)
      if (d < 0) d = 1;
    in->info->shape = Shape(dims);
  }
  c.infer_shapes(/*allow_unknown=*/true);
  return c;
}

int64_t zeros_of(const Tensor& t) {
  int64_t zeros = 0;
  for (float x : t.to_vector<float>()) zeros += x == 0.0f;
  return zeros;
}

// 2 per multiply-add, as runtime::count_flops counts them; -1 when the shapes are unknown.
int64_t layer_flops(const Node& n) {
  const graph::Value* y = n.outputs[0];
  const graph::Value* a = n.inputs[0];
  if (!y->info || !a->info) return -1;
  for (int64_t d : y->info->shape.dims())
    if (d < 0) return -1;
  const Shape& w = n.inputs[1]->constant.shape();
  const int64_t outputs = y->info->shape.numel();
  if (n.op == "Conv") return 2 * outputs * (w.numel() / w[0]);
  if (n.op == "MatMul") return 2 * outputs * w[0];
  const Attrs attrs = n.schema().bind(n.attrs);
  return 2 * outputs * (attrs.get_int("transB") != 0 ? w[1] : w[0]);  // Gemm
}

struct Counts {
  int64_t params = 0, weights = 0, zeros = 0, flops = 0;
  std::map<std::string, LayerReport> layers;  // by name: the "before" fields filled
};

Counts count(const Graph& model) {
  const Graph g = with_concrete_inputs(model);
  Counts c;
  for (const graph::Value* v : g.initializers())
    if (v->constant.dtype() == DType::kFloat32) c.params += v->constant.numel();
  c.flops = runtime::count_flops(g).total;
  for (const Node* n : detail::weighted_layers(g)) {
    LayerReport& r = c.layers[n->name];
    r.name = n->name;
    r.op = n->op;
    r.params_before = n->inputs[1]->constant.numel();
    if (n->inputs.size() > 2 && n->inputs[2] && n->inputs[2]->is_constant())
      r.params_before += n->inputs[2]->constant.numel();
    r.zeros_before = zeros_of(n->inputs[1]->constant);
    r.flops_before = layer_flops(*n);
    c.weights += n->inputs[1]->constant.numel();
    c.zeros += r.zeros_before;
  }
  return c;
}

}  // namespace

PruneReport measure(const Graph& before, const Graph& after) {
  const Counts b = count(before);
  const Counts a = count(after);
  PruneReport report;
  for (const Node* n : detail::weighted_layers(before)) {
    LayerReport r = b.layers.at(n->name);
    const auto it = a.layers.find(n->name);
    if (it != a.layers.end()) {
      r.params_after = it->second.params_before;
      r.zeros_after = it->second.zeros_before;
      r.flops_after = it->second.flops_before;
    }
    report.layers.push_back(r);
  }
  report.params_before = b.params;
  report.params_after = a.params;
  report.flops_before = b.flops;
  report.flops_after = a.flops;
  report.sparsity_before = b.weights ? static_cast<double>(b.zeros) / static_cast<double>(b.weights) : 0;
  report.sparsity_after = a.weights ? static_cast<double>(a.zeros) / static_cast<double>(a.weights) : 0;
  return report;
}

std::string PruneReport::to_string() const {
  std::ostringstream out;
  const auto percent = [](int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
  };
  size_t name_width = 8;
  for (const LayerReport& r : layers) name_width = std::max(name_width, r.name.size() + 2);
  const int width = static_cast<int>(name_width);
  out << std::left << std::setw(width) << "layer" << std::setw(8) << "op" << std::right << std::setw(12)
      << "params" << std::setw(12) << "-> after" << std::setw(10) << "sparsity" << std::setw(14) << "FLOPs"
      << std::setw(14) << "-> after"
      << "\n";
  out << std::fixed << std::setprecision(1);
  for (const LayerReport& r : layers) {
    out << std::left << std::setw(width) << r.name << std::setw(8) << r.op << std::right << std::setw(12)
        << r.params_before << std::setw(12) << r.params_after << std::setw(9)
        << percent(r.zeros_after, r.params_after) << "%" << std::setw(14) << r.flops_before << std::setw(14)
        << r.flops_after << "\n";
  }
  out << "parameters: " << params_before << " -> " << params_after << " ("
      << percent(params_after, params_before) << "%)\n";
  out << "FLOPs (free input dims as 1): " << flops_before << " -> " << flops_after << " ("
      << percent(flops_after, flops_before) << "%)\n";
  out << "weight sparsity: " << 100.0 * sparsity_before << "% -> " << 100.0 * sparsity_after << "%\n";
  return out.str();
}

}  // namespace kiln::pruning
