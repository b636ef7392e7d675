// HybridBlock: deferred initialization before the first forward, hybridize (the traced forward
// run as one CachedOp) and export (the traced predict-mode graph written as an MXNet model).
#include <algorithm>

#include "autograd/cached_op.h"
#include "frontends/mxnet/export.h"
#include "kiln/autograd.hpp"
#include "kiln/nn/block.hpp"

namespace kiln::nn {

namespace {

// Set while a hybridized block runs its CachedOp (or is traced for it): the blocks inside run
// op by op, so that the trace sees their ops rather than nested CachedOps.
thread_local bool inside_cached_call = false;

class InsideCachedCall {
 public:
  InsideCachedCall() : was_(inside_cached_call) { inside_cached_call = true; }
  ~InsideCachedCall() { inside_cached_call = was_; }
  InsideCachedCall(const InsideCachedCall&) = delete;
  InsideCachedCall& operator=(const InsideCachedCall&) = delete;

 private:
  bool was_;
};

// Gluon names a single data input "data", several "data0", "data1", ...
std::vector<autograd::TraceInput> trace_inputs(size_t num_data,
                                               const std::vector<std::shared_ptr<Parameter>>& params) {
  std::vector<autograd::TraceInput> inputs;
  for (size_t i = 0; i < num_data; ++i)
    inputs.push_back({num_data == 1 ? "data" : "data" + std::to_string(i), false});
  for (const auto& p : params) inputs.push_back({p->name(), true});
  return inputs;
}

}  // namespace

void HybridBlock::infer_shape(const std::vector<NDArray>&) {}

void HybridBlock::finish_deferred_init(const std::vector<NDArray>& inputs) {
  const bool pending = std::any_of(own_params().begin(), own_params().end(),
                                   [](const auto& p) { return p.second->deferred(); });
  if (!pending) return;
  infer_shape(inputs);
  for (const auto& [attr, param] : own_params()) {
    KILN_CHECK(!param->deferred() || param->shape_known(), ErrorCode::kInvalidArgument, "Block '", name(),
               "': cannot infer the shape of parameter '", param->name(), "' (", param->shape(),
               ") from the inputs");
    param->finish_deferred_init();
  }
}

std::vector<NDArray> HybridBlock::forward(const std::vector<NDArray>& inputs) {
  finish_deferred_init(inputs);
  input_signature_.clear();
  for (const NDArray& x : inputs) input_signature_.emplace_back(x.shape(), x.dtype());
  if (!hybridized_ || inside_cached_call) return hybrid_forward(inputs);
  const ParameterDict params = collect_params();
  // Children complete their deferred initialization on this first call, run op by op.
  if (std::any_of(params.begin(), params.end(), [](const auto& p) { return p->deferred(); }))
    return hybrid_forward(inputs);
  return run_cached(inputs);
}

std::vector<NDArray> HybridBlock::run_cached(const std::vector<NDArray>& inputs) {
  if (!cached_op_ || cached_num_inputs_ != inputs.size()) {
    const ParameterDict dict = collect_params();
    cached_params_.assign(dict.begin(), dict.end());
    cached_num_inputs_ = inputs.size();
    const size_t num_data = inputs.size();
    auto fn = [this, num_data](const std::vector<NDArray>& args) {
      InsideCachedCall inside;
      return hybrid_forward(
          std::vector<NDArray>(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(num_data)));
    };
    cached_op_ = std::make_shared<autograd::CachedOp>(fn, trace_inputs(num_data, cached_params_));
  }
  std::vector<NDArray> args = inputs;
  for (const auto& p : cached_params_) args.push_back(p->data());
  InsideCachedCall inside;
  return (*cached_op_)(args);
}

void HybridBlock::hybridize(bool active) {
  hybridized_ = active;
  if (!active) cached_op_.reset();
  for (const auto& [name, child] : children())
    if (auto* hybrid = dynamic_cast<HybridBlock*>(child.get())) hybrid->hybridize(active);
}

void HybridBlock::export_model(const std::string& prefix, int epoch) {
  KILN_CHECK(!input_signature_.empty(), ErrorCode::kInvalidArgument, "Block '", name(),
             "': export needs the input shapes: run the block once first");
  const ParameterDict dict = collect_params();
  const std::vector<std::shared_ptr<Parameter>> params(dict.begin(), dict.end());
  std::vector<NDArray> examples;
  for (const auto& [shape, dtype] : input_signature_) examples.push_back(nd::zeros(shape, dtype));
  for (const auto& p : params) examples.push_back(p->data());
  const size_t num_data = input_signature_.size();
  auto fn = [this, num_data](const std::vector<NDArray>& args) {
    InsideCachedCall inside;
    return hybrid_forward(
        std::vector<NDArray>(args.begin(), args.begin() + static_cast<std::ptrdiff_t>(num_data)));
  };
  autograd::TracedGraph traced = autograd::trace(fn, trace_inputs(num_data, params), examples, false);
  graph::Graph& g = traced.graph;
  std::vector<graph::Value*> outputs = g.outputs();
  outputs.resize(static_cast<size_t>(traced.num_outputs));
  g.set_outputs(outputs);
  // The parameters become initializers, which the exporter writes into the .params file.
  const std::vector<graph::Value*> graph_inputs = g.inputs();
  for (size_t i = 0; i < params.size(); ++i) {
    graph::Value* input = graph_inputs.at(num_data + i);
    g.rename_value(input, params[i]->name() + "__traced_input");
    graph::Value* constant = g.add_initializer(params[i]->name(), params[i]->data().tensor().contiguous());
    g.replace_all_uses(input, constant);
  }
  // The data inputs' first dimension is written free (MXNet's 0), as MXNet's own export leaves
  // it: the files run at any batch size unless the block's ops fix it (Flatten and Dense's
  // flattening do not; a reshape to traced dimensions does, and then only the traced size runs).
  for (size_t i = 0; i < num_data; ++i) {
    graph::Value* input = graph_inputs.at(i);
    if (input->info && input->info->shape.ndim() > 0) input->info->shape[0] = Shape::kUnknown;
  }
  g.remove_unused_values(true);
  mxnet::save_checkpoint(g, prefix, epoch);
}

}  // namespace kiln::nn
