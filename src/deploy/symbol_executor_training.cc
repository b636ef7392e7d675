// Executor::forward(is_train=true) and Executor::backward: the training form of the symbol
// (training_graph.h) and its gradient graph (autograd/graph_gradient.h), compiled once per
// signature of array shapes and dtypes.
#include "deploy/symbol_executor_training.h"

#include "frontends/mxnet/training_graph.h"
#include "kiln/error.hpp"
#include "runtime/plan.h"

namespace kiln {

Executor::Training::Training(std::string sig, std::vector<std::string> input_arrays, int outputs,
                             std::vector<std::string> updates, std::vector<int> heads,
                             std::vector<std::string> arguments, autograd::GradientGraphs gradient)
    : signature(std::move(sig)),
      inputs(std::move(input_arrays)),
      num_outputs(outputs),
      aux_updates(std::move(updates)),
      head_outputs(std::move(heads)),
      wrt(std::move(arguments)),
      graphs(std::move(gradient)),
      forward(runtime::compile(graphs.forward)),
      backward(runtime::compile(graphs.backward)) {}

namespace {

bool is_graph_input(const graph::Graph& g, const std::string& name) {
  const graph::Value* v = g.find_value(name);
  return v != nullptr && v->producer == nullptr && !v->is_constant();
}

}  // namespace

void Executor::forward_training() {
  const std::string sig = signature();
  if (!training_ || training_->signature != sig) {
    training_.reset();
    std::vector<std::string> inputs;
    const mxnet::MxnetSymbol symbol = symbol_.to_mxnet();
    mxnet::TrainingGraph train =
        mxnet::make_training_graph(mxnet::import_with_arrays(symbol, args_, aux_, inputs, true), symbol);
    autograd::GradientRequest request;
    std::vector<int> heads;
    for (int k = 0; k < train.num_outputs; ++k) {
      const graph::Value* out = train.graph.outputs()[static_cast<size_t>(k)];
      const std::string& loss = train.losses[static_cast<size_t>(k)];
      if (loss.empty() && !is_floating(out->info->dtype)) continue;
      request.heads.push_back({loss.empty() ? out->name : loss, !loss.empty()});
      heads.push_back(k);
    }
    std::vector<std::string> wrt;
    for (const auto& [name, req] : grad_reqs_)
      if (req != GradReq::kNull && is_graph_input(train.graph, name)) request.wrt.push_back(name);
    autograd::GradientGraphs graphs = autograd::build_gradient(train.graph, request);
    training_ =
        std::make_unique<Training>(sig, std::move(inputs), train.num_outputs, std::move(train.aux_updates),
                                   std::move(heads), request.wrt, std::move(graphs));
  }
  Training& t = *training_;
  t.ran = false;
  t.feed.clear();
  for (const std::string& name : t.inputs) {
    const auto it = args_.find(name);
    t.feed.push_back((it != args_.end() ? it->second : aux_.at(name)).tensor().contiguous());
  }
  t.results = t.forward.run(t.feed);
  outputs_.clear();
  for (int k = 0; k < t.num_outputs; ++k) outputs_.emplace_back(t.results[static_cast<size_t>(k)]);
  for (size_t j = 0; j < t.aux_updates.size(); ++j)
    nd::invoke_into("Identity", {NDArray(t.results[static_cast<size_t>(t.num_outputs) + j])},
                    {aux_.at(t.aux_updates[j])});
  t.ran = true;
}

void Executor::backward(const std::vector<NDArray>& head_grads) {
  KILN_CHECK(training_ && training_->ran, ErrorCode::kInvalidArgument,
             "Executor::backward: no forward(is_train=true) ran before; call it first");
  Training& t = *training_;
  KILN_CHECK(head_grads.empty() || head_grads.size() == static_cast<size_t>(t.num_outputs),
             ErrorCode::kInvalidArgument, "Executor::backward: ", head_grads.size(), " head gradients for ",
             t.num_outputs, " outputs; pass none or one per output");
  using Kind = autograd::GradientGraphs::Source::Kind;
  std::vector<Tensor> feed;
  for (const auto& source : t.graphs.backward_inputs) {
    const size_t i = static_cast<size_t>(source.index);
    if (source.kind == Kind::kForwardInput) {
      feed.push_back(t.feed.at(i));
    } else if (source.kind == Kind::kForwardOutput) {
      feed.push_back(t.results.at(i));
    } else {
      const size_t k = static_cast<size_t>(t.head_outputs.at(i));
      const Tensor& out = t.results.at(k);
      const NDArray given = head_grads.empty() ? NDArray() : head_grads[k];
      if (!given.defined()) {
        feed.push_back(Tensor::full(out.shape(), 1, out.dtype()));
        continue;
      }
      KILN_CHECK(given.shape() == out.shape() && given.dtype() == out.dtype(), ErrorCode::kShapeMismatch,
                 "Executor::backward: head gradient ", k, " has shape ", given.shape(), " ",
                 dtype_name(given.dtype()), ", expected output ", k, "'s ", out.shape(), " ",
                 dtype_name(out.dtype()));
      feed.push_back(given.tensor().contiguous());
    }
  }
  std::vector<Tensor> grads = t.backward.run(feed);
  for (size_t j = 0; j < t.wrt.size(); ++j) {
    NDArray& target = grads_.at(t.wrt[j]);
    const NDArray g(std::move(grads[j]));
    if (grad_reqs_.at(t.wrt[j]) == GradReq::kAdd) {
      target += g;
    } else {
      nd::invoke_into("Identity", {g}, {target});
    }
  }
}

}  // namespace kiln
